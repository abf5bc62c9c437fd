#include "measurement/rounds.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/clock.hpp"
#include "core/crash_notice.hpp"
#include "core/interrupt.hpp"
#include "core/shuffle.hpp"
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

void progress(const Plan &plan, int r, size_t pos, size_t n, const Case &c, size_t converging,
              double elapsed) {
  if (plan.opt.target_ci_percent && *plan.opt.target_ci_percent == 0) {
    fprintf(stderr, "bench_conv: round %d/%d  case %zu/%zu  %s  (ETA %s)\n", r + 1, plan.opt.reps,
            pos + 1, n, c.id.c_str(),
            r || pos ? format_seconds(elapsed / double(size_t(r) * n + pos) *
                                      double(size_t(plan.opt.reps) * n - size_t(r) * n - pos))
                           .c_str()
                     : "?");
    return;
  }
  fprintf(stderr,
          "bench_conv: round %d  case %zu/%zu  %s  (%zu of %zu cases converging, %s of %s)\n",
          r + 1, pos + 1, n, c.id.c_str(), converging, plan.cases.size(),
          format_seconds(elapsed).c_str(), format_seconds(plan.opt.max_time).c_str());
}

// After round r: each case that took a sample decides whether it has enough.
std::vector<Case *> decide(std::vector<Case *> running, int r, double elapsed) {
  std::vector<Case *> still;
  for (Case *c : running) {
    c->stop = decide_stop(c->seconds(), c->rule, elapsed);
    if (!c->stop.stop())
      still.push_back(c);
    else if (c->stop.reason != StopReason::fixed_count) {
      char width[32] = "none";
      if (c->stop.half_width)
        snprintf(width, sizeof width, "+-%.2f%%", *c->stop.half_width * 100);
      fprintf(stderr, "bench_conv: %s: %s after %d rounds (median's interval %s, target %.2f%%)\n",
              c->id.c_str(), to_string(c->stop.reason), r + 1, width, c->rule.target * 100);
    }
  }
  return still;
}

// Which cases go on, and how far each is from its target (the four widest named).
void still_converging(const std::vector<Case *> &still, int r) {
  if (still.empty() || still.front()->rule.target <= 0)
    return;
  std::vector<const Case *> v(still.begin(), still.end());
  auto width = [](const Case *c) { return c->stop.half_width.value_or(1e9); };
  std::sort(v.begin(), v.end(), [&](auto *a, auto *b) { return width(a) > width(b); });
  std::string names;
  for (size_t i = 0; i < v.size() && i < 4; ++i) {
    char buf[48] = "no interval yet";
    if (v[i]->stop.half_width)
      snprintf(buf, sizeof buf, "+-%.2f%% of %.2f%%", width(v[i]) * 100, v[i]->rule.target * 100);
    names += (i ? ", " : "") + v[i]->id + " (" + buf + ")";
  }
  fprintf(stderr, "bench_conv: after round %d, %zu still converging: %s%s\n", r + 1, v.size(),
          names.c_str(), v.size() > 4 ? ", ..." : "");
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
  for (int r = 0; !running.empty() && !interrupted(); ++r) {
    std::vector<int> idx = round_order(int(running.size()), plan.opt.seed, r);
    RoundOrder ro{r, round_seed(plan.opt.seed, r), {}};
    std::vector<std::pair<const Case *, const Sample *>> taken;
    for (size_t pos = 0; pos < idx.size() && !interrupted(); ++pos) {
      Case &c = *running[size_t(idx[pos])];
      progress(plan, r, pos, idx.size(), c, running.size(), since(t0));
      c.samples.push_back(taker.take(c, r, pos));
      ro.cases.push_back(c.id);
      observe(lease, c, c.samples.back());
      taken.emplace_back(&c, &c.samples.back());
    }
    out.order.push_back(ro);
    if (ro.cases.size() < idx.size()) // cut short: its samples go to the record, not the journal
      break;
    running = decide(running, r, since(t0));
    still_converging(running, r);
    journal.append_round(journal_round_json(ro, taken, lease.to_json()));
  }
  out.interrupted = interrupted();
  for (Case *c : running)
    c->cut_short = out.interrupted;
  lease.verify_end();
  plugin::set_samples_note("");
  return out;
}

} // namespace convbench::bench
