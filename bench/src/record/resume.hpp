// bench_conv --resume JOURNAL: the record of a run that was killed outright (SIGKILL, a crash,
// a node lost), rebuilt from its journal: status "recovered", every round the journal holds.
#pragma once

namespace convbench::bench {

struct Options;

// Writes the record (atomically) to --out, default the journal's result path, then removes the
// journal it supersedes. Returns the exit status; a bad journal is bad usage (2, one line).
int resume_run(const Options &opt);

} // namespace convbench::bench
