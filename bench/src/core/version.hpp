// The build's version, as --version says it: "bench_conv 0.1.0 (git v0.1-3-gabc1234-dirty), CUDA
// off". git describe is taken when CMake configures (the short sha where no tag is reachable).
#pragma once

#include <string>

namespace convbench::bench {

std::string version_text(const std::string &tool);

} // namespace convbench::bench
