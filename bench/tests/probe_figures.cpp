// probe_figures: the cost of the probes and what pinning does to a threaded loop's spread on the
// machine it runs on (docs/probes.md quotes a run). A tool, not a test: prints markdown.
//   probe_figures [samples per mode, default 30] [adds per worker per sample, default 2^23]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "probes/contention.hpp"
#include "probes/cpu_speed.hpp"
#include "probes/foreign.hpp"
#include "probes/host_sample.hpp"

using namespace convbench;
using namespace convbench::bench;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_of(const std::function<void()> &f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Summary {
  double min = 0, median = 0, max = 0, cv = 0;
};
Summary summarize(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  Summary s;
  s.min = x.front();
  s.max = x.back();
  s.median = x[x.size() / 2];
  double mean = 0, var = 0;
  for (double v : x)
    mean += v / double(x.size());
  for (double v : x)
    var += (v - mean) * (v - mean) / double(x.size() - 1);
  s.cv = std::sqrt(var) / mean;
  return s;
}

void cost(const char *what, int reps, const std::function<void()> &f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i)
    t.push_back(seconds_of(f));
  const Summary s = summarize(t);
  std::printf("| %s | %.1f | %.1f | %.2f%% |\n", what, 1e6 * s.min, 1e6 * s.median,
              100 * 2 * s.median / 0.050);
}

} // namespace

int main(int argc, char **argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 30;
  const int64_t adds = argc > 2 ? std::atoll(argv[2]) : int64_t(1) << 23;
  const int cpus = int(allowed_cpus().size());
  std::string load;
  std::getline(std::ifstream("/proc/loadavg"), load);
  std::printf("%d CPUs, /proc/loadavg at start: %s\n\n", cpus, load.c_str());

  ThreadPool pinned(cpus, make_placement(cpus, "", true));
  SpeedProbe probe;
  probe.calibrate(pinned);
  std::printf("| probe (%d workers) | best us | median us | pair / 50 ms sample |\n", cpus);
  std::printf("| --- | --- | --- | --- |\n");
  cost("SpeedProbe::measure (2^17 adds)", 200, [&] { probe.measure(pinned); });
  cost("snapshot_contention", 200, [&] { snapshot_contention(&pinned); });
  cost("read_system_counters", 200, [] { read_system_counters(); });
  cost("read_processes (once per window, not per sample)", 20, [] { read_processes(); });
  std::printf("\n");

  // The threaded loop: every worker runs the same add chain; a sample is one parallel_for.
  std::printf("| threads | placement | median ms | CV | max/min | median imbalance | CPU "
              "changes | samples with workers sharing a CPU |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int threads : {1, cpus}) {
    ThreadPool pin(threads, make_placement(threads, "", true));
    ThreadPool free(threads);
    std::vector<double> t[2], imb[2];
    int moves[2] = {0, 0}, stacked[2] = {0, 0};
    auto sample = [&](ThreadPool &pool, int m) {
      pool.reset_stats();
      t[m].push_back(seconds_of([&] {
        pool.parallel_for(pool.size(), [&](int64_t, int64_t) { time_add_chain(adds); });
      }));
      const auto st = pool.stats();
      imb[m].push_back(imbalance(st));
      std::set<int> used;
      for (const auto &w : st) {
        moves[m] += w.cpu_changes;
        used.insert(w.last_cpu);
      }
      stacked[m] += int(used.size()) < pool.size(); // two workers ended on one CPU
    };
    for (int i = 0; i < samples; ++i) { // interleaved, so drift hits both modes alike
      sample(pin, 0);
      sample(free, 1);
    }
    for (int m = 0; m < 2; ++m) {
      const Summary s = summarize(t[m]), i = summarize(imb[m]);
      std::printf("| %d | %s | %.2f | %.1f%% | %.2f | %.2f | %d | %d |\n", threads,
                  m == 0 ? "pinned" : "unpinned", 1e3 * s.median, 100 * s.cv, s.max / s.min,
                  i.median, moves[m], stacked[m]);
    }
  }
  std::printf("\n%d samples per row of 2^%d adds per worker, pinned and unpinned interleaved.\n",
              samples, int(std::lround(std::log2(double(adds)))));
  // What the probes say about each sample: the slow ones should carry their cause.
  std::printf("\n| sample ms | task ms (per worker) | run delay ms | involuntary | speed before "
              "| speed after | PSI some ms |\n| --- | --- | --- | --- | --- | --- | --- |\n");
  ForeignCpuWindow window;
  HostSampler sampler(pinned, probe, &window);
  auto per_worker = [&](const std::function<double(int)> &f, const char *fmt) {
    std::string out;
    char buf[32];
    for (int w = 0; w < cpus; ++w) {
      std::snprintf(buf, sizeof buf, fmt, f(w));
      out += (w ? "/" : "") + std::string(buf);
    }
    return out;
  };
  for (int i = 0; i < 20; ++i) {
    sampler.before();
    const double t = seconds_of([&] {
      pinned.parallel_for(cpus, [&](int64_t, int64_t) { time_add_chain(int64_t(1) << 23); });
    });
    const HostSample h = sampler.after();
    const auto &th = h.contention.threads;
    std::printf(
        "| %.2f | %s | %s | %s | %s | %s | %.1f |\n", 1e3 * t,
        per_worker([&](int w) { return 1e3 * h.workers[size_t(w)].task_s; }, "%.2f").c_str(),
        per_worker([&](int w) { return 1e3 * th[size_t(w)].run_delay_s.value_or(-1); }, "%.2f")
            .c_str(),
        per_worker([&](int w) { return double(th[size_t(w)].involuntary_cs); }, "%.0f").c_str(),
        per_worker([&](int w) { return h.speed_before[size_t(w)].relative.value_or(-1); }, "%.2f")
            .c_str(),
        per_worker([&](int w) { return h.speed_after[size_t(w)].relative.value_or(-1); }, "%.2f")
            .c_str(),
        1e-3 * h.contention.psi_some_us.value_or(-1000));
  }

  std::getline(std::ifstream("/proc/loadavg"), load);
  std::printf("\n/proc/loadavg at end: %s\n", load.c_str());
  return 0;
}
