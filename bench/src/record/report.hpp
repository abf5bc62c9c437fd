// The console table (stdout) of a finished run, printed from the same typed cases the record is
// built from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/case.hpp"
#include "plan/catalog.hpp"

namespace convbench::bench {

// One row per case: stage, frames (L for the causal op), arm, staging, best, median, the median's
// 95% half-width, GFLOP/s, % of floor (when the device has floors in devices.json), verdict; then,
// for each chain case whose stages were run alone too, the sum of those stages' bests.
std::string format_table(const std::vector<Case> &cases, const std::optional<DeviceFloors> &floors);

std::string format_seconds(double s);

// The case's verdict in the analysis' words: "ok", "ok (fixed count)", "imprecise: +-2.07% > 1%"
// (its interval's half-width beyond the target), "refused: <code> (<detail>)" for a cause the run
// saw itself (gate-failed, cut-short, foreign-gpu). The analysis judges the rest (convbench-analyze
// report).
std::string case_verdict(const Case &c);

// One line per A/A twin: how far its median is from its arm's, and whether inside that interval.
std::string twin_lines(const std::vector<Case> &cases);

} // namespace convbench::bench
