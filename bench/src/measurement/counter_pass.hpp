// The counter pass: after the timed rounds, each resident device case that passed its gate runs
// once more, untimed, under the CUPTI range profiler with the plan's profile; every other case
// gets a "not-collected" block saying why.
#pragma once

namespace convbench::bench {

struct Plan;

void run_counter_pass(Plan &plan);

} // namespace convbench::bench
