// What a finished run shows: the console table (stdout) and the Google-Benchmark-compatible
// benchmarks[] view of the result. Both read the cases as the result records them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace convbench::bench {

// One row per case: stage, frames, arm, staging, best, median, spread %, GFLOP/s, % of floor
// (when the device has floors in devices.json); then, for each chain case whose stages were run
// alone too, the sum of those stages' bests.
std::string format_table(const nlohmann::json &cases);

// For each case and round an "iteration" entry, then _mean, _median, _stddev, _cv aggregates.
nlohmann::json benchmarks_view(const nlohmann::json &cases, int reps);

std::string format_seconds(double s);

} // namespace convbench::bench
