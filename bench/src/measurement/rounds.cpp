#include "measurement/rounds.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/clock.hpp"
#include "core/crash_notice.hpp"
#include "core/interrupt.hpp"
#include "core/shuffle.hpp"
#include "measurement/progress.hpp"
#include "measurement/sample.hpp"
#include "measurement/stopping.hpp"
#include "plan/plan.hpp"
#include "record/journal.hpp"
#include "record/record.hpp"
#include "record/report.hpp"

namespace convbench::bench {

StoppingRule stopping_rule(const Case &c, const Options &opt) {
  StoppingRule r;
  const bool resident_device = c.arm->device() && c.staging == "resident";
  r.target =
      opt.target_ci_percent ? *opt.target_ci_percent / 100.0 : (resident_device ? 0.005 : 0.01);
  r.min_rounds = opt.reps;
  r.max_rounds = r.target > 0 ? opt.max_rounds : opt.reps;
  r.time_budget_s = opt.max_time;
  return r;
}

namespace {

double since(double t0) { return steady_seconds() - t0; }

// What the lease's observation wants of a sample: foreign GPU processes (-1 unknown) and the
// foreign CPU share (over the long window once it exists: the per-sample one is tick noise).
void observe(lease::RunLease &lease, const Case &c, const Sample &s) {
  int foreign_gpu = -1;
  if (s.device) {
    int a = foreign_processes_of(s.gpu_before), b = foreign_processes_of(s.gpu_after);
    foreign_gpu = (a < 0 || b < 0) ? -1 : std::max(a, b);
  }
  const auto &w = s.probes.foreign.share;
  const double share = w ? *w : s.foreign.share ? *s.foreign.share : -1.0;
  lease.observe_sample(c.id, s.round, foreign_gpu, share);
}

// After round r: each case that took a sample decides whether it has enough; those that stop are
// moved to `stopped`.
std::vector<Case *> decide(std::vector<Case *> running, double elapsed,
                           std::vector<Case *> &stopped) {
  std::vector<Case *> still;
  for (Case *c : running) {
    c->stop = decide_stop(c->seconds(), c->rule, elapsed);
    (c->stop.stop() ? stopped : still).push_back(c);
  }
  return still;
}

} // namespace

RoundsOutcome run_rounds(Plan &plan, SampleTaker &taker, lease::RunLease &lease,
                         JournalWriter &journal) {
  std::vector<Case *> running;
  for (auto &c : plan.cases) {
    c.rule = stopping_rule(c, plan.opt);
    if (c.gate.pass)
      running.push_back(&c);
  }
  RoundsOutcome out; // the start check was made before the run's first device call (run.cpp)
  // Should a plugin end the process from here on (exit(), a call that never returns), its last
  // line says where the finished rounds are.
  plugin::set_samples_note("the finished rounds are in " + plan.journal_path + ": bench_conv " +
                           "--resume " + plan.journal_path + " writes their record");
  const double t0 = steady_seconds();
  RoundsProgress progress(plan.opt, running.size());
  int r = 0;
  while (!running.empty() && !interrupted()) {
    std::vector<int> idx = round_order(int(running.size()), plan.opt.seed, r);
    RoundOrder ro{r, round_seed(plan.opt.seed, r), {}};
    std::vector<std::pair<const Case *, const Sample *>> taken;
    for (size_t pos = 0; pos < idx.size() && !interrupted(); ++pos) {
      Case &c = *running[size_t(idx[pos])];
      progress.before_sample(r, pos, idx.size(), c, running.size(), since(t0));
      const double s0 = steady_seconds();
      c.samples.push_back(taker.take(c, r, pos));
      progress.after_sample(c, since(s0));
      ro.cases.push_back(c.id);
      observe(lease, c, c.samples.back());
      taken.emplace_back(&c, &c.samples.back());
    }
    out.order.push_back(ro);
    if (ro.cases.size() < idx.size()) // cut short: its samples go to the record, not the journal
      break;
    std::vector<Case *> stopped;
    running = decide(running, since(t0), stopped);
    progress.after_round(r, stopped, running, since(t0));
    journal.append_round(journal_round_json(ro, taken, lease.to_json()));
    ++r;
  }
  progress.finish(int(out.order.size()), since(t0));
  out.interrupted = interrupted();
  for (Case *c : running)
    c->cut_short = out.interrupted;
  lease.verify_end();
  plugin::set_samples_note("");
  return out;
}

} // namespace convbench::bench
