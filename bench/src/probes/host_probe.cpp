#include "probes/host_probe.hpp"

#include <chrono>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

#include "core/clock.hpp"

namespace convbench::bench {

int online_cpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}

HostSnapshot probe_host() {
  HostSnapshot h;
  h.wall_s = steady_seconds();
  {
    std::ifstream in("/proc/loadavg");
    double l1, l5, l15;
    std::string threads;
    if (in >> l1 >> l5 >> l15 >> threads) {
      h.loadavg_1m = l1;
      size_t slash = threads.find('/');
      if (slash != std::string::npos)
        h.runnable = std::stoi(threads.substr(0, slash));
      else
        h.unavailable["runnable"] = "/proc/loadavg: no running/total field";
    } else {
      h.unavailable["loadavg_1m"] = "/proc/loadavg not readable";
      h.unavailable["runnable"] = "/proc/loadavg not readable";
    }
  }
  {
    std::ifstream in("/proc/stat");
    std::string cpu;
    unsigned long long user, nice, system, idle, iowait, irq, softirq, steal = 0;
    if (in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq && cpu == "cpu") {
      in >> steal; // absent on very old kernels; guest time is already inside user
      long tck = sysconf(_SC_CLK_TCK);
      h.busy_cpu_s =
          double(user + nice + system + irq + softirq + steal) / double(tck > 0 ? tck : 100);
    } else {
      h.unavailable["busy_cpu_s"] = "/proc/stat not readable";
    }
  }
  {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    std::string g;
    if (in >> g)
      h.governor = g;
    else
      h.unavailable["governor"] = "no cpufreq scaling_governor (no cpufreq driver exposed here)";
  }
  {
    // /proc/cpuinfo "cpu MHz" is what the kernel last saw per CPU; the mean is enough to see
    // a clock that dropped between samples.
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    double sum = 0;
    int n = 0;
    while (std::getline(in, line))
      if (line.rfind("cpu MHz", 0) == 0) {
        size_t colon = line.find(':');
        if (colon != std::string::npos) {
          sum += std::stod(line.substr(colon + 1));
          ++n;
        }
      }
    if (n > 0)
      h.cpu_mhz = sum / n;
    else
      h.unavailable["cpu_mhz"] = "/proc/cpuinfo has no 'cpu MHz' lines";
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  h.self_cpu_s = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  return h;
}

ForeignCpu foreign_cpu(const HostSnapshot &before, const HostSnapshot &after) {
  ForeignCpu f;
  if (!before.busy_cpu_s || !after.busy_cpu_s) {
    f.why_unavailable = "/proc/stat not readable";
    return f;
  }
  double busy = *after.busy_cpu_s - *before.busy_cpu_s;
  double self = after.self_cpu_s - before.self_cpu_s;
  double wall = after.wall_s - before.wall_s;
  double foreign = busy - self;
  if (foreign < 0)
    foreign = 0;
  f.seconds = foreign;
  f.share = wall > 0 ? foreign / (wall * online_cpus()) : 0.0;
  return f;
}

} // namespace convbench::bench
