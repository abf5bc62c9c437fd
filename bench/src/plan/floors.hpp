// A device case's floors: the time its FLOPs take at each arithmetic peak of devices.json, the
// memory floor, and the arm's own (its arithmetic floor or the memory floor, whichever is higher).
#pragma once

#include <optional>
#include <string>

#include "plan/case.hpp"
#include "plan/catalog.hpp"

namespace convbench::bench {

struct CaseFloor {
  double fp32_fma = 0, fp64_fma = 0, fp64_nofma = 0, fp64_dmma = 0, memory = 0; // seconds
  double arm = 0;
  std::string arm_kind;
};

// None for host arms or a device without floors.
std::optional<CaseFloor> case_floor(const Case &c, const std::optional<DeviceFloors> &floors);

} // namespace convbench::bench
