#include "probes/host_sample.hpp"

#include <algorithm>

namespace convbench::bench {

nlohmann::json HostSample::to_json() const {
  using nlohmann::json;
  auto speeds = [](const std::vector<WorkerSpeed> &v) {
    json a = json::array();
    for (const auto &s : v)
      a.push_back(s.to_json());
    return a;
  };
  json w = json::array();
  for (const auto &s : workers)
    w.push_back({{"worker", s.worker},
                 {"tasks", s.tasks},
                 {"first_cpu", s.first_cpu},
                 {"last_cpu", s.last_cpu},
                 {"cpu_changes", s.cpu_changes},
                 {"task_s", s.task_s},
                 {"busy_s", s.busy_s}});
  std::vector<WorkerSpeed> both = speed_before;
  both.insert(both.end(), speed_after.begin(), speed_after.end());
  const auto slowest = slowest_relative(both);
  return {{"speed_before", speeds(speed_before)},
          {"speed_after", speeds(speed_after)},
          {"slowest_relative", slowest ? json(*slowest) : json(nullptr)},
          {"contention", contention.to_json()},
          {"workers", w},
          {"imbalance", imbalance},
          {"foreign", foreign.to_json()}};
}

HostSampler::HostSampler(ThreadPool &pool, const SpeedProbe &speed, ForeignCpuWindow *foreign)
    : pool_(pool), speed_(speed), foreign_(foreign) {}

void HostSampler::before() {
  speed_before_ = speed_.measure(pool_);
  snap_before_ = snapshot_contention(&pool_);
  pool_.reset_stats();
}

HostSample HostSampler::after() {
  HostSample s;
  s.workers = pool_.stats();
  s.imbalance = imbalance(s.workers);
  const ContentionSnapshot snap_after = snapshot_contention(&pool_);
  s.speed_after = speed_.measure(pool_);
  s.speed_before = std::move(speed_before_);
  s.contention = contention_between(snap_before_, snap_after);
  if (foreign_) {
    foreign_->add(snap_after.system);
    s.foreign = foreign_->latest();
  } else {
    s.foreign.unavailable = "no foreign CPU window kept";
  }
  return s;
}

} // namespace convbench::bench
