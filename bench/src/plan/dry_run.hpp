// bench_conv --dry-run [--json]: the plan as it would run (each case: stage, frames or the causal
// op's L, arm, staging, the case it twins), the host and device memory each case needs (what the
// memory refusal counts), and an estimate of the time it takes, then exit. No lease is taken, no
// GPU touched, no record or folder written.
#pragma once

#include <ostream>

#include "plan/plan.hpp"

namespace convbench::bench {

// Writes the plan to `out` (text, or one JSON document with plan.opt.json); returns the exit
// status: 0, or 2 when the plan would be refused for its memory (the reason on stderr).
int write_dry_run(const Plan &plan, std::ostream &out);

// The estimate's parts, in seconds: the timed rounds and what comes before them.
struct TimeEstimate {
  double rounds_s = 0, gate_s = 0;
  std::string how; // how each part was estimated, in words
};
TimeEstimate estimate_time(const Plan &plan);

} // namespace convbench::bench
