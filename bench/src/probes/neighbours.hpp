// The other GPUs of the node, read around each sample of a run that is one of a node's runs
// (bench_conv --gpus): their load is what may move this GPU's times through shared power, cooling
// and host. Behind an interface so tests can stand in GPUs that are not there.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convbench::bench {

struct NeighbourReading {
  int index = 0; // NVML's index on the node
  std::optional<std::string> uuid;
  std::optional<unsigned> util_pct, sm_clock_mhz;
  std::optional<double> power_w;
  // Cumulative microseconds its clocks were held down for power or thermal reasons; the difference
  // between two samples is the time inside that span.
  std::optional<double> violation_us;
  std::optional<int> processes;                   // with a context on it
  std::map<std::string, std::string> unavailable; // field -> why
};

class NeighbourProbe {
public:
  virtual ~NeighbourProbe() = default;
  virtual std::vector<NeighbourReading> read() const = 0;
};

// The GPUs `others` (NVML indices) read through the NVML shim; a field NVML
// cannot give is null with the reason.
class NvmlNeighbourProbe : public NeighbourProbe {
public:
  explicit NvmlNeighbourProbe(std::vector<int> others) : others_(std::move(others)) {}
  std::vector<NeighbourReading> read() const override;

private:
  std::vector<int> others_;
};

nlohmann::json neighbours_json(const std::vector<NeighbourReading> &readings);

// The probe of this run when the node launcher started it (CONVBENCH_NODE_GPUS lists the node's
// GPUs, CONVBENCH_NODE_GPU names this one); null for a run of its own.
std::unique_ptr<NeighbourProbe> node_neighbour_probe();

} // namespace convbench::bench
