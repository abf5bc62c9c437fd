#include "probes/cpu_speed.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/clock.hpp"

namespace convbench::bench {

double time_add_chain(int64_t adds) {
  // The asm barrier makes every add depend on the one before and keeps the compiler from folding
  // the chain into a multiply; the volatile seed keeps it from being computed at compile time.
  volatile uint64_t seed = 1;
  uint64_t x = seed, step = seed;
  const int64_t blocks = adds / 8;
  const double t0 = steady_seconds();
  for (int64_t i = 0; i < blocks; ++i) {
#define CONVBENCH_ADD                                                                              \
  x += step;                                                                                       \
  asm volatile("" : "+r"(x))
    CONVBENCH_ADD;
    CONVBENCH_ADD;
    CONVBENCH_ADD;
    CONVBENCH_ADD;
    CONVBENCH_ADD;
    CONVBENCH_ADD;
    CONVBENCH_ADD;
    CONVBENCH_ADD;
#undef CONVBENCH_ADD
  }
  seed = x; // the result is used
  return steady_seconds() - t0;
}

nlohmann::json WorkerSpeed::to_json() const {
  return {{"worker", worker},
          {"cpu", cpu},
          {"adds_per_s", adds_per_s},
          {"relative", relative ? nlohmann::json(*relative) : nlohmann::json(nullptr)}};
}

SpeedProbe::SpeedProbe(int64_t adds) : adds_(std::max<int64_t>(8, adds / 8 * 8)) {}

std::vector<WorkerSpeed> SpeedProbe::measure(ThreadPool &pool) const {
  std::vector<WorkerSpeed> out(size_t(pool.size()));
  pool.run_on_each([&](int w) {
    const double s = time_add_chain(adds_);
    WorkerSpeed &ws = out[size_t(w)];
    ws.worker = w;
    ws.cpu = sched_getcpu();
    ws.adds_per_s = s > 0 ? double(adds_) / s : 0;
  });
  if (best_ && *best_ > 0)
    for (auto &ws : out)
      ws.relative = ws.adds_per_s / *best_;
  return out;
}

void SpeedProbe::calibrate(ThreadPool &pool, int runs) {
  runs_ = std::max(1, runs);
  best_per_cpu_.clear();
  time_add_chain(adds_); // page in the code; wake the CPUs
  for (int r = 0; r < runs_; ++r)
    for (const auto &ws : measure(pool)) {
      double &b = best_per_cpu_[ws.cpu];
      b = std::max(b, ws.adds_per_s);
    }
  best_.reset();
  for (const auto &[cpu, rate] : best_per_cpu_)
    best_ = std::max(best_.value_or(0.0), rate);
}

nlohmann::json SpeedProbe::to_json() const {
  nlohmann::json per = nlohmann::json::object();
  for (const auto &[cpu, rate] : best_per_cpu_)
    per[std::to_string(cpu)] = rate;
  return {{"adds", adds_},
          {"runs", runs_},
          {"best_adds_per_s", best_ ? nlohmann::json(*best_) : nlohmann::json(nullptr)},
          {"best_per_cpu", per}};
}

std::optional<double> slowest_relative(const std::vector<WorkerSpeed> &speeds) {
  std::optional<double> slowest;
  for (const auto &ws : speeds)
    if (ws.relative)
      slowest = std::min(slowest.value_or(*ws.relative), *ws.relative);
  return slowest;
}

} // namespace convbench::bench
