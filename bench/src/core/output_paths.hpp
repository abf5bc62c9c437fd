// Where a run writes beside its result: the journal of its finished rounds, "<result>.journal"
// (record/journal.hpp writes it; the plan checks it is not left over from a cut-short run).
#pragma once

#include <string>

namespace convbench::bench {

inline std::string journal_path(const std::string &result_path) { return result_path + ".journal"; }

} // namespace convbench::bench
