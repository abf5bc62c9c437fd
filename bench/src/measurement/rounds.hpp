// The timed rounds: in each round every case still converging takes one sample, in an order
// shuffled from (seed, round) over those cases, so drift and neighbours spread evenly over the
// arms. After each round, each case's stopping rule decides whether it has enough (its median's
// 95% interval within its target, or the time budget or the round limit reached; with no target,
// the fixed --reps); the round is appended to the journal before the next one starts. A SIGINT or
// SIGTERM ends the loop after the sample under way. The lease is verified after the last sample
// (its start check came before the run's first device call), and each sample is shown to its
// observation.
#pragma once

#include "core/types.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "convbench/lease/run_lease.hpp"

namespace convbench::bench {

struct Plan;
struct Options;
struct Case;
class SampleTaker;
class JournalWriter;
struct StoppingRule;

// Resident device cases: 0.5%; host and per-call cases: 1% (their run-to-run noise is larger);
// --target-ci overrides both, 0 gives the fixed count of --reps.
StoppingRule stopping_rule(const Case &c, const Options &opt);

RoundsOutcome run_rounds(Plan &plan, SampleTaker &taker, lease::RunLease &lease,
                         JournalWriter &journal);

} // namespace convbench::bench
