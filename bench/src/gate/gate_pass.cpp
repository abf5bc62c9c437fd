#include "gate/gate_pass.hpp"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <set>

#include "core/atomic_write.hpp"
#include "core/console.hpp"
#include "core/device_gate.hpp"
#include "gate/gate.hpp"
#include "plan/plan.hpp"
#include "plan/problem_dump.hpp"

namespace convbench::bench {

namespace {

std::string number(double v) { // as the stream printed it: 6 significant digits
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The reference's output for `p`: from the reference case's own prepared arm when it is planned,
// so it is not computed twice.
std::vector<float> reference_output(Plan &plan, Problem &p, ArmContext &ctx) {
  const Arm &ref_arm = reference_arm();
  std::vector<float> ref(size_t(p.output_elems()));
  Case *ref_case = nullptr;
  for (auto &c : plan.cases)
    if (c.problem == &p && c.arm == &ref_arm)
      ref_case = &c;
  std::unique_ptr<PreparedArm> tmp;
  PreparedArm *pa;
  if (ref_case) {
    ref_case->prepared = ref_arm.prepare(p, "host", ctx);
    pa = ref_case->prepared.get();
  } else {
    tmp = ref_arm.prepare(p, "host", ctx);
    pa = tmp.get();
  }
  say("gate " + p.stage + "/" + std::to_string(p.frames) + ": reference " + ref_arm.name());
  pa->call();
  pa->output(ref.data());
  return ref;
}

// Gates one case; returns its output for the dump.
std::vector<float> gate_case(Case &c, const std::vector<float> &ref, ArmContext &ctx) {
  if (!c.prepared) {
    if (c.arm->device())
      device_gate::enter("prepare " + c.arm->name()); // buffers, handles, the plugin's prepare
    ArmContext own = ctx;
    own.case_id = c.id;
    c.prepared = c.arm->prepare(*c.problem, c.staging, own);
    c.chosen = c.prepared->chosen();
  }
  std::vector<float> y(ref.size());
  if (c.arm == &reference_arm()) {
    y = ref;
  } else if (checks_itself(c.arm->gate())) {
    c.gate = c.prepared->own_check();
    const std::string what =
        c.gate.kind == GateKind::self
            ? "self: " + std::to_string(c.gate.mismatches) + " of " + std::to_string(c.gate.cells) +
                  " checked differ from what the call must write"
            : "gemm: " + std::to_string(c.gate.cells) +
                  " cells against the host's f64 product, rel L2 " + number(c.gate.rel_l2_err);
    say("gate " + c.id + ": " + (c.gate.pass ? "pass" : "FAIL") + " (" + what + ")",
        c.gate.pass ? Verbosity::normal : Verbosity::quiet);
    if (!c.gate.pass)
      c.prepared.reset();
    return {}; // no convolution output: nothing to dump or compare
  } else {
    c.prepared->call();
    c.prepared->output(y.data());
  }
  c.gate = gate_output(c.arm->gate(), c.arm->tolerance(), y, ref);
  // A tolerance gate's differing cells are expected: its rel L2 is what passes or fails it.
  const bool tolerated = c.gate.pass && c.gate.kind == GateKind::tolerance;
  say("gate " + c.id + ": " + (c.gate.pass ? "pass" : "FAIL") + " (" + to_string(c.gate.kind) +
          (tolerated ? "" : ", " + std::to_string(c.gate.mismatches) + " cells differ") +
          ", rel L2 " + number(c.gate.rel_l2_err) + ")",
      c.gate.pass ? Verbosity::normal : Verbosity::quiet);
  if (!c.gate.pass)
    c.prepared.reset(); // a wrong arm is never timed
  return y;
}

// The bitwise comparison of each case with its arm's sibling on the same problem (the same staging
// when the sibling ran it, else any): a differing cell fails the case's gate, as a wrong arm.
void gate_siblings(std::vector<Case *> &cases,
                   const std::map<Case *, std::vector<float>> &outputs) {
  for (Case *c : cases) {
    const std::string sibling = c->arm->bitwise_sibling();
    if (sibling.empty())
      continue;
    Case *match = nullptr;
    for (Case *o : cases)
      if (o != c && o->arm->name() == sibling && (!match || o->staging == c->staging))
        match = o;
    if (!match) {
      std::cerr << "bench_conv: gate " << c->id << ": its bitwise sibling " << sibling
                << " is not in the plan: not compared\n";
      continue;
    }
    const std::vector<float> &a = outputs.at(c), &b = outputs.at(match);
    int64_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i)
      differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    c->gate.sibling = match->arm->name() + "/" + match->staging;
    c->gate.sibling_mismatches = differ;
    say("gate " + c->id + ": " + (differ ? "FAIL" : "pass") + " (bitwise to " + c->gate.sibling +
            ", " + std::to_string(differ) + " cells differ)",
        differ ? Verbosity::quiet : Verbosity::normal);
    if (differ) {
      c->gate.pass = false;
      c->prepared.reset(); // a wrong arm is never timed
    }
  }
}

// A dump that cannot be written (a full disk) costs the dump, not the run: one line, no partial
// file (the writers remove their temp files), and no more files for this problem.
void dump_failed(const WriteError &e, const Problem &p) {
  std::cerr << "bench_conv: --dump: " << e.what() << "; the dump of " << p.stage << "-" << p.frames
            << " is incomplete, the run goes on\n";
}

} // namespace

bool run_gate(Plan &plan, ArmContext &ctx, const std::string &run_id,
              const std::function<void(const Case &)> &gated) {
  bool all_pass = true;
  for (auto &p : plan.problems) {
    const std::vector<float> ref = reference_output(plan, *p, ctx);
    std::string dir;
    if (!plan.opt.dump.empty()) {
      std::vector<DumpedCase> outputs;
      for (auto &c : plan.cases)
        if (c.problem == p.get() && !checks_itself(c.arm->gate()))
          outputs.push_back(
              {c.arm->name() + "/" + c.staging, to_string(c.arm->gate()), c.arm->tolerance()});
      try {
        dir = dump_problem(
            plan.opt.dump, *p, ref, outputs,
            {{"model", plan.model.name}, {"run_seed", plan.opt.seed}, {"run_id", run_id}});
      } catch (const WriteError &e) {
        dump_failed(e, *p);
      }
    }
    std::vector<Case *> cases;
    std::set<std::string> siblings; // arms some case of this problem is compared with
    for (auto &c : plan.cases)
      if (c.problem == p.get()) {
        cases.push_back(&c);
        if (!c.arm->bitwise_sibling().empty())
          siblings.insert(c.arm->bitwise_sibling());
      }
    // Outputs are kept past their case's gate only for the sibling comparison.
    std::map<Case *, std::vector<float>> outputs;
    for (Case *c : cases) {
      std::vector<float> y = gate_case(*c, ref, ctx);
      if (gated)
        gated(*c); // at once: a fault in a later case's call keeps this gate
      if (!dir.empty() && !checks_itself(c->arm->gate()))
        try {
          dump_output(dir, *p, c->arm->name() + "/" + c->staging, y);
        } catch (const WriteError &e) {
          dump_failed(e, *p);
          dir.clear();
        }
      if (!c->arm->bitwise_sibling().empty() || siblings.count(c->arm->name()))
        outputs[c] = std::move(y);
    }
    gate_siblings(cases, outputs);
    for (Case *c : cases) {
      all_pass &= c->gate.pass;
      if (gated && !c->gate.sibling.empty())
        gated(*c); // again, with the sibling comparison
    }
  }
  return all_pass;
}

} // namespace convbench::bench
