// bench_conv --completion bash: a bash completion script made from the parser's own options
// (cli_options) and the values the listings hold (--list arms|stages|models), so an option or an
// arm added later completes without an edit here. `source <(bench_conv --completion bash)`.
#pragma once

#include <string>

namespace convbench::bench {

std::string bash_completion();

} // namespace convbench::bench
