// bench_conv --list arms|stages|models|cases [--json]: what the catalog and the registry hold, for
// people and for scripts (which ask here for a case's shapes instead of deriving them again).
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "plan/cli.hpp"

namespace convbench::bench {

// Writes the listing opt.list asks for to `out`, as text or (opt.json) one JSON document. Throws
// UsageError or DataError for an unknown model or stage (nothing written).
void write_listing(const Options &opt, std::ostream &out);
// The listing as one JSON document (what --list WHAT --json prints); --completion reads it too.
nlohmann::json listing_json(const Options &opt);

} // namespace convbench::bench
