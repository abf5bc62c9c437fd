#include "probes/foreign.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/clock.hpp"

namespace convbench::bench {

namespace {
int online() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? int(n) : 1;
}
} // namespace

double tick_seconds() {
  const long t = sysconf(_SC_CLK_TCK);
  return 1.0 / double(t > 0 ? t : 100);
}

nlohmann::json ForeignShare::to_json() const {
  using nlohmann::json;
  return {{"share", share ? json(*share) : json(nullptr)},
          {"cpu_s", cpu_s ? json(*cpu_s) : json(nullptr)},
          {"window_s", window_s},
          {"resolution", resolution},
          {"unavailable", unavailable.empty() ? json(nullptr) : json(unavailable)}};
}

ForeignShare foreign_share(const SystemCounters &before, const SystemCounters &after, int cpus) {
  ForeignShare f;
  f.window_s = after.wall_s - before.wall_s;
  f.resolution = f.window_s > 0 ? tick_seconds() / f.window_s : 1.0;
  if (!before.busy_ticks || !after.busy_ticks) {
    f.unavailable = "/proc/stat not readable";
    return f;
  }
  if (f.window_s <= 0) {
    f.unavailable = "empty window";
    return f;
  }
  const double busy = double(*after.busy_ticks - *before.busy_ticks) * tick_seconds();
  const double own = after.self_cpu_s - before.self_cpu_s;
  f.cpu_s = std::max(0.0, busy - own); // tick rounding can make it slightly negative
  f.share = *f.cpu_s / (f.window_s * std::max(1, cpus));
  return f;
}

ForeignCpuWindow::ForeignCpuWindow(double resolution, double keep_s)
    : min_window_s_(tick_seconds() / resolution), keep_s_(std::max(keep_s, 2 * min_window_s_)),
      cpus_(online()) {}

void ForeignCpuWindow::add(const SystemCounters &s) {
  snaps_.push_back(s);
  while (snaps_.size() > 2 && s.wall_s - snaps_[1].wall_s >= keep_s_)
    snaps_.pop_front();
}

ForeignShare ForeignCpuWindow::latest() const {
  ForeignShare f;
  if (snaps_.size() < 2) {
    f.unavailable = "fewer than two snapshots";
    return f;
  }
  const SystemCounters &end = snaps_.back();
  // The latest start that still gives a long enough window.
  for (auto it = snaps_.rbegin() + 1; it != snaps_.rend(); ++it)
    if (end.wall_s - it->wall_s >= min_window_s_)
      return foreign_share(*it, end, cpus_);
  f = foreign_share(snaps_.front(), end, cpus_);
  char why[160];
  std::snprintf(why, sizeof why,
                "window %.2f s is under the %.2f s its %.0f ms ticks need for %.0f%% resolution",
                f.window_s, min_window_s_, 1e3 * tick_seconds(),
                100 * tick_seconds() / min_window_s_);
  f.share.reset();
  f.cpu_s.reset();
  f.unavailable = why;
  return f;
}

std::vector<ProcessCpu> read_processes() {
  std::vector<ProcessCpu> out;
  const int self = int(getpid());
  DIR *d = opendir("/proc");
  if (!d)
    return out;
  while (dirent *e = readdir(d)) {
    const char *name = e->d_name;
    if (name[0] < '0' || name[0] > '9')
      continue;
    const int pid = std::atoi(name);
    if (pid == self)
      continue;
    std::ifstream in(std::string("/proc/") + name + "/stat");
    std::string line;
    if (!std::getline(in, line))
      continue; // the process ended meanwhile
    // "pid (comm) state ...": comm may hold spaces and parentheses; it ends at the last ')'.
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open ||
        close + 2 > line.size())
      continue;
    ProcessCpu p;
    p.pid = pid;
    p.comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    // Fields from 3 (state) on; utime is 14, stime 15, starttime 22.
    for (int i = 3; i <= 22 && rest >> field; ++i) {
      if (i == 14)
        utime = std::strtoull(field.c_str(), nullptr, 10);
      else if (i == 15)
        stime = std::strtoull(field.c_str(), nullptr, 10);
      else if (i == 22)
        p.start_ticks = std::strtoull(field.c_str(), nullptr, 10);
    }
    p.cpu_ticks = utime + stime;
    out.push_back(p);
  }
  closedir(d);
  return out;
}

nlohmann::json ForeignProcess::to_json() const {
  return {{"pid", pid}, {"comm", comm}, {"cpu_s", cpu_s}, {"share", share}};
}

std::vector<ForeignProcess> top_foreign(const std::vector<ProcessCpu> &before,
                                        const std::vector<ProcessCpu> &after, double window_s,
                                        size_t top) {
  std::map<int, const ProcessCpu *> old;
  for (const auto &p : before)
    old[p.pid] = &p;
  std::vector<ForeignProcess> out;
  for (const auto &p : after) {
    auto it = old.find(p.pid);
    // A process new in the window (or a reused pid) spent all its CPU time inside it.
    const unsigned long long base =
        it != old.end() && it->second->start_ticks == p.start_ticks ? it->second->cpu_ticks : 0;
    if (p.cpu_ticks <= base)
      continue;
    ForeignProcess f;
    f.pid = p.pid;
    f.comm = p.comm;
    f.cpu_s = double(p.cpu_ticks - base) * tick_seconds();
    f.share = window_s > 0 ? f.cpu_s / (window_s * online()) : 0;
    out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [](const ForeignProcess &a, const ForeignProcess &b) {
    return a.cpu_s != b.cpu_s ? a.cpu_s > b.cpu_s : a.pid < b.pid;
  });
  if (out.size() > top)
    out.resize(top);
  return out;
}

ForeignProcessWindow::ForeignProcessWindow(double window_s, double min_gap_s, size_t top)
    : window_s_(window_s), min_gap_s_(min_gap_s), top_n_(top) {
  tables_.emplace_back(steady_seconds(), read_processes());
}

const std::vector<ForeignProcess> &ForeignProcessWindow::after_sample() {
  const double now = steady_seconds();
  const double since_last = now - tables_.back().first;
  const bool short_or_empty = top_.empty() || now - tables_.front().first < window_s_;
  if (since_last < 0.5 * window_s_ && !(short_or_empty && since_last >= min_gap_s_))
    return top_;
  tables_.emplace_back(now, read_processes());
  // The newest table old enough for the window (else the oldest), and nothing older than it.
  while (tables_.size() > 2 && now - tables_[1].first >= window_s_)
    tables_.pop_front();
  top_ = top_foreign(tables_.front().second, tables_.back().second,
                     tables_.back().first - tables_.front().first, top_n_);
  return top_;
}

} // namespace convbench::bench
