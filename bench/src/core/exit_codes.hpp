// bench_conv's exit statuses, for every step that ends a run.
#pragma once

namespace convbench::bench {

// 0 ok; 1 runtime error; 2 bad usage (nothing run); 3 lease refused or void; 4 gate failed.
inline constexpr int kExitOk = 0, kExitError = 1, kExitUsage = 2, kExitLease = 3, kExitGate = 4;

} // namespace convbench::bench
