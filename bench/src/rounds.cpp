#include "rounds.hpp"

#include <chrono>
#include <cstdio>

#include "plan.hpp"
#include "report.hpp"
#include "sample.hpp"
#include "shuffle.hpp"

namespace convbench::bench {

namespace {

// What the lease's observation wants of a sample: foreign GPU processes (-1 unknown) and CPU share.
void observe(lease::RunLease &lease, const Case &c, const Sample &s) {
  int foreign_gpu = -1;
  if (s.device) {
    int a = foreign_processes_of(s.gpu_before), b = foreign_processes_of(s.gpu_after);
    foreign_gpu = (a < 0 || b < 0) ? -1 : std::max(a, b);
  }
  lease.observe_sample(c.id, s.round, foreign_gpu, s.foreign.share ? *s.foreign.share : -1.0);
}

} // namespace

std::vector<RoundOrder> run_rounds(Plan &plan, SampleTaker &taker, lease::RunLease &lease) {
  std::vector<Case *> timed;
  for (auto &c : plan.cases)
    if (c.gate.pass)
      timed.push_back(&c);
  std::vector<RoundOrder> order;
  const int reps = plan.opt.reps;
  lease.verify_start();
  const auto t0 = std::chrono::steady_clock::now();
  size_t done = 0, total = timed.size() * size_t(reps);
  for (int r = 0; r < reps; ++r) {
    std::vector<int> idx = round_order(int(timed.size()), plan.opt.seed, r);
    RoundOrder ro{r, round_seed(plan.opt.seed, r), {}};
    for (int i : idx)
      ro.cases.push_back(timed[size_t(i)]->id);
    order.push_back(ro);
    for (size_t pos = 0; pos < idx.size(); ++pos) {
      Case &c = *timed[size_t(idx[pos])];
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::string eta = done ? format_seconds(elapsed / double(done) * double(total - done)) : "?";
      fprintf(stderr, "bench_conv: round %d/%d  case %zu/%zu  %s  (ETA %s)\n", r + 1, reps, pos + 1,
              idx.size(), c.id.c_str(), eta.c_str());
      c.samples.push_back(taker.take(c, r, pos));
      observe(lease, c, c.samples.back());
      ++done;
    }
  }
  lease.verify_end();
  return order;
}

} // namespace convbench::bench
