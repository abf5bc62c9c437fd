#include "probes/neighbours.hpp"

#include <cstdlib>
#include <sstream>

#include "convbench/lease/nvml_gpu.hpp"

namespace convbench::bench {

namespace {

template <class T>
void take(std::optional<T> &field, const char *name, NeighbourReading &r, std::optional<T> value,
          const std::string &why) {
  field = value;
  if (!value)
    r.unavailable[name] = why;
}

NeighbourReading read_one(int index) {
  NeighbourReading r;
  r.index = index;
  const lease::NvmlGpu gpu = lease::NvmlGpu::by_index(index);
  std::string why = gpu.why_not();
  if (!gpu.ok()) {
    for (const char *f :
         {"uuid", "util_pct", "power_w", "sm_clock_mhz", "violation_us", "processes"})
      r.unavailable[f] = why;
    return r;
  }
  take(r.uuid, "uuid", r, gpu.uuid(&why), why);
  take(r.util_pct, "util_pct", r, gpu.utilization_pct(&why), why);
  take(r.power_w, "power_w", r, gpu.power_w(&why), why);
  take(r.sm_clock_mhz, "sm_clock_mhz", r, gpu.clock_mhz(lease::NvmlGpu::Clock::sm, &why), why);
  std::optional<double> us;
  for (int policy : {0, 1}) { // power, thermal (lease::kViolationPolicies)
    auto ns = gpu.violation_ns(policy, &why);
    if (!ns) {
      us.reset();
      break;
    }
    us = us.value_or(0) + double(*ns) / 1000.0;
  }
  take(r.violation_us, "violation_us", r, us, why);
  std::optional<int> count;
  if (auto procs = gpu.processes(&why))
    count = int(procs->size());
  take(r.processes, "processes", r, count, why);
  return r;
}

template <class T> nlohmann::json or_null(const std::optional<T> &v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::vector<int> parse_indices(const char *list) {
  std::vector<int> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    out.push_back(std::atoi(item.c_str()));
  return out;
}

} // namespace

std::vector<NeighbourReading> NvmlNeighbourProbe::read() const {
  std::vector<NeighbourReading> out;
  for (int i : others_)
    out.push_back(read_one(i));
  return out;
}

nlohmann::json neighbours_json(const std::vector<NeighbourReading> &readings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto &r : readings)
    out.push_back({{"index", r.index},
                   {"uuid", or_null(r.uuid)},
                   {"util_pct", or_null(r.util_pct)},
                   {"power_w", or_null(r.power_w)},
                   {"sm_clock_mhz", or_null(r.sm_clock_mhz)},
                   {"violation_us", or_null(r.violation_us)},
                   {"processes", or_null(r.processes)},
                   {"unavailable", r.unavailable}});
  return out;
}

std::unique_ptr<NeighbourProbe> node_neighbour_probe() {
  const char *node = std::getenv("CONVBENCH_NODE_GPUS");
  const char *self = std::getenv("CONVBENCH_NODE_GPU");
  if (!node || !self || !*node || !*self)
    return nullptr;
  std::vector<int> others;
  for (int i : parse_indices(node))
    if (i != std::atoi(self))
      others.push_back(i);
  return std::make_unique<NvmlNeighbourProbe>(std::move(others));
}

} // namespace convbench::bench
