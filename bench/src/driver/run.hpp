// bench_conv end to end: plan -> lease -> problems -> correctness gate -> interleaved timed rounds
// -> counter pass -> record (atomic) -> table. Returns the process exit status.
#pragma once

#include "core/exit_codes.hpp"

namespace convbench::bench {

int run_bench_conv(int argc, const char *const *argv);

} // namespace convbench::bench
