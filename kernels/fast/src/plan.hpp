// Host side of the fast kernels: which shapes they handle and the launch plan of a shape.
#pragma once

#include <string>

#include "convbench/shape.hpp"
#include "polyphase_tile.hpp"

namespace convbench::fast::detail {

// Empty string when supported, otherwise why not (one line).
std::string unsupported_reason(const ConvShape &s);

// Throws std::invalid_argument with unsupported_reason() when the shape is not handled.
Plan make_plan(const ConvShape &s);

} // namespace convbench::fast::detail
