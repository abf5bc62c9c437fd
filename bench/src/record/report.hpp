// The console table (stdout) of a finished run, printed from the same typed cases the record is
// built from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/case.hpp"
#include "plan/catalog.hpp"

namespace convbench::bench {

// One row per case: stage, frames, arm, staging, best, median, spread %, GFLOP/s, % of floor
// (when the device has floors in devices.json); then, for each chain case whose stages were run
// alone too, the sum of those stages' bests.
std::string format_table(const std::vector<Case> &cases, const std::optional<DeviceFloors> &floors);

std::string format_seconds(double s);

} // namespace convbench::bench
