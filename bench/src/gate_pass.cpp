#include "gate_pass.hpp"

#include <iostream>

#include "plan.hpp"
#include "problem_dump.hpp"

namespace convbench::bench {

namespace {

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
  std::cerr << "bench_conv: gate " << p.stage << "/" << p.frames << ": reference " << ref_arm.name()
            << "\n";
  pa->call();
  pa->output(ref.data());
  return ref;
}

// Gates one case; returns its output for the dump.
std::vector<float> gate_case(Case &c, const std::vector<float> &ref, ArmContext &ctx) {
  if (!c.prepared) {
    ArmContext own = ctx;
    own.case_id = c.id;
    c.prepared = c.arm->prepare(*c.problem, c.staging, own);
    c.chosen = c.prepared->chosen();
  }
  std::vector<float> y(ref.size());
  if (c.arm == &reference_arm()) {
    y = ref;
  } else {
    c.prepared->call();
    c.prepared->output(y.data());
  }
  c.gate = gate_output(c.arm->gate(), c.arm->tolerance(), y, ref);
  std::cerr << "bench_conv: gate " << c.id << ": " << (c.gate.pass ? "pass" : "FAIL") << " ("
            << to_string(c.gate.kind) << ", " << c.gate.mismatches << " cells differ, rel L2 "
            << c.gate.rel_l2_err << ")\n";
  if (!c.gate.pass)
    c.prepared.reset(); // a wrong arm is never timed
  return y;
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
        if (c.problem == p.get())
          outputs.push_back(
              {c.arm->name() + "/" + c.staging, to_string(c.arm->gate()), c.arm->tolerance()});
      dir = dump_problem(
          plan.opt.dump, *p, ref, outputs,
          {{"model", plan.model.name}, {"run_seed", plan.opt.seed}, {"run_id", run_id}});
    }
    for (auto &c : plan.cases) {
      if (c.problem != p.get())
        continue;
      std::vector<float> y = gate_case(c, ref, ctx);
      all_pass &= c.gate.pass;
      if (gated)
        gated(c);
      if (!dir.empty())
        dump_output(dir, *p, c.arm->name() + "/" + c.staging, y);
    }
  }
  return all_pass;
}

} // namespace convbench::bench
