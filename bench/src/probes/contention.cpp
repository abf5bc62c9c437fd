#include "probes/contention.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/clock.hpp"

namespace convbench::bench {

namespace {

using nlohmann::json;

template <class T> json opt(const std::optional<T> &v) { return v ? json(*v) : json(nullptr); }

double seconds(const timeval &tv) { return double(tv.tv_sec) + 1e-6 * double(tv.tv_usec); }

void read_psi(SystemCounters &s) {
  std::ifstream in("/proc/pressure/cpu");
  if (!in) {
    s.unavailable["psi_some_us"] = "no /proc/pressure/cpu (kernel without PSI, or psi=0)";
    s.unavailable["psi_full_us"] = s.unavailable["psi_some_us"];
    return;
  }
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find("total=");
    if (at == std::string::npos)
      continue;
    const uint64_t total = std::strtoull(line.c_str() + at + 6, nullptr, 10);
    if (line.rfind("some", 0) == 0)
      s.psi_some_us = total;
    else if (line.rfind("full", 0) == 0)
      s.psi_full_us = total;
  }
  if (!s.psi_some_us)
    s.unavailable["psi_some_us"] = "/proc/pressure/cpu has no 'some' line";
  if (!s.psi_full_us)
    s.unavailable["psi_full_us"] = "/proc/pressure/cpu has no 'full' line (kernel < 5.13)";
}

void read_stat(SystemCounters &s) {
  std::ifstream in("/proc/stat");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "cpu") {
      uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
               steal = 0;
      if (ls >> user >> nice >> system >> idle >> iowait >> irq >> softirq) {
        ls >> steal; // guest time is already inside user
        s.busy_ticks = user + nice + system + irq + softirq + steal;
        s.steal_ticks = steal;
        s.total_ticks = *s.busy_ticks + idle + iowait;
      }
    } else if (key == "procs_running") {
      int n;
      if (ls >> n)
        s.procs_running = n;
    }
  }
  if (!s.busy_ticks) {
    s.unavailable["busy_ticks"] = "/proc/stat has no readable 'cpu' line";
    s.unavailable["steal_ticks"] = s.unavailable["busy_ticks"];
  }
  if (!s.procs_running)
    s.unavailable["procs_running"] = "/proc/stat has no procs_running line";
}

// "se.nr_migrations   :   12" in /proc/thread-self/sched (kernels built with CONFIG_SCHED_DEBUG).
std::optional<uint64_t> read_migrations() {
  std::ifstream in("/proc/thread-self/sched");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("se.nr_migrations", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos)
        return std::strtoull(line.c_str() + colon + 1, nullptr, 10);
    }
  return std::nullopt;
}

} // namespace

SystemCounters read_system_counters() {
  SystemCounters s;
  s.wall_s = steady_seconds();
  read_psi(s);
  read_stat(s);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.minor_faults = ru.ru_minflt;
  s.major_faults = ru.ru_majflt;
  s.self_cpu_s = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  return s;
}

ThreadCounters read_thread_counters(int worker) {
  ThreadCounters t;
  t.worker = worker;
  t.tid = int(syscall(SYS_gettid));
  t.cpu = sched_getcpu();
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  t.voluntary_cs = ru.ru_nvcsw;
  t.involuntary_cs = ru.ru_nivcsw;
  t.cpu_s = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  {
    // Three numbers: ns on a CPU, ns runnable but waiting (run_delay), timeslices.
    std::ifstream in("/proc/thread-self/schedstat");
    uint64_t run, wait, slices;
    if (in >> run >> wait >> slices) {
      t.run_ns = run;
      t.wait_ns = wait;
      t.timeslices = slices;
    } else {
      t.unavailable["run_delay_s"] = "no /proc/thread-self/schedstat (kernel without "
                                     "CONFIG_SCHED_INFO)";
    }
  }
  t.migrations = read_migrations();
  if (!t.migrations)
    t.unavailable["migrations"] = "no se.nr_migrations in /proc/thread-self/sched (kernel "
                                  "without CONFIG_SCHED_DEBUG)";
  return t;
}

ContentionSnapshot snapshot_contention(ThreadPool *pool) {
  ContentionSnapshot s;
  if (pool) {
    s.threads.resize(size_t(pool->size()));
    pool->run_on_each([&](int w) { s.threads[size_t(w)] = read_thread_counters(w); });
  }
  s.system = read_system_counters();
  return s;
}

json ThreadContention::to_json() const {
  return {{"worker", worker},
          {"tid", tid},
          {"cpu_before", cpu_before},
          {"cpu_after", cpu_after},
          {"voluntary_cs", voluntary_cs},
          {"involuntary_cs", involuntary_cs},
          {"cpu_s", cpu_s},
          {"run_delay_s", opt(run_delay_s)},
          {"migrations", opt(migrations)}};
}

json Contention::to_json() const {
  json th = json::array();
  for (const auto &t : threads)
    th.push_back(t.to_json());
  return {{"wall_s", wall_s},
          {"psi_some_us", opt(psi_some_us)},
          {"psi_full_us", opt(psi_full_us)},
          {"psi_some_share", opt(psi_some_share)},
          {"steal_share", opt(steal_share)},
          {"procs_running", opt(procs_running)},
          {"minor_faults", minor_faults},
          {"major_faults", major_faults},
          {"threads", th},
          {"unavailable", unavailable}};
}

Contention contention_between(const ContentionSnapshot &before, const ContentionSnapshot &after) {
  const SystemCounters &a = before.system, &b = after.system;
  Contention c;
  c.wall_s = b.wall_s - a.wall_s;
  if (a.psi_some_us && b.psi_some_us) {
    c.psi_some_us = double(*b.psi_some_us - *a.psi_some_us);
    if (c.wall_s > 0)
      c.psi_some_share = *c.psi_some_us * 1e-6 / c.wall_s;
  } else {
    c.unavailable["psi_some_us"] = b.unavailable.value("psi_some_us", "not read");
  }
  if (a.psi_full_us && b.psi_full_us)
    c.psi_full_us = double(*b.psi_full_us - *a.psi_full_us);
  else
    c.unavailable["psi_full_us"] = b.unavailable.value("psi_full_us", "not read");
  if (a.steal_ticks && b.steal_ticks && *b.total_ticks > *a.total_ticks)
    c.steal_share =
        double(*b.steal_ticks - *a.steal_ticks) / double(*b.total_ticks - *a.total_ticks);
  else
    c.unavailable["steal_share"] =
        b.steal_ticks ? "no /proc/stat tick elapsed in the sample" : "/proc/stat not readable";
  c.procs_running = b.procs_running;
  if (!c.procs_running)
    c.unavailable["procs_running"] = "/proc/stat has no procs_running line";
  c.minor_faults = b.minor_faults - a.minor_faults;
  c.major_faults = b.major_faults - a.major_faults;
  for (size_t i = 0; i < before.threads.size() && i < after.threads.size(); ++i) {
    const ThreadCounters &x = before.threads[i], &y = after.threads[i];
    ThreadContention t;
    t.worker = y.worker;
    t.tid = y.tid;
    t.cpu_before = x.cpu;
    t.cpu_after = y.cpu;
    t.voluntary_cs = y.voluntary_cs - x.voluntary_cs;
    t.involuntary_cs = y.involuntary_cs - x.involuntary_cs;
    t.cpu_s = y.cpu_s - x.cpu_s;
    if (x.wait_ns && y.wait_ns)
      t.run_delay_s = 1e-9 * double(*y.wait_ns - *x.wait_ns);
    if (x.migrations && y.migrations)
      t.migrations = int64_t(*y.migrations - *x.migrations);
    c.threads.push_back(t);
  }
  if (!after.threads.empty()) {
    const auto &un = after.threads[0].unavailable;
    for (const auto &[k, v] : un.items())
      c.unavailable["threads." + k] = v;
  }
  return c;
}

} // namespace convbench::bench
