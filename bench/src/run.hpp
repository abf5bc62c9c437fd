// bench_conv end to end: plan -> lease -> problems -> correctness gate -> interleaved timed rounds
// -> counter pass -> record (atomic) -> table. Returns the process exit status.
#pragma once

namespace convbench::bench {

// 0 ok; 1 runtime error; 2 bad usage (nothing run); 3 lease refused or void; 4 gate failed.
inline constexpr int kExitOk = 0, kExitError = 1, kExitUsage = 2, kExitLease = 3, kExitGate = 4;

int run_bench_conv(int argc, const char *const *argv);

} // namespace convbench::bench
