// Host side of the polyphase planner (polyphase.hpp): which shapes split into equal phases, and
// the geometry of one. Host-only.
#pragma once

#include <string>

#include "convbench/shape.hpp"
#include "polyphase.hpp"

namespace convbench::polyphase {

// Empty when `s` is a ConvTranspose1d whose taps split into phases of at most 4 taps each
// (dilation 1, K a multiple of the stride, K / stride <= 4), otherwise why not (one line).
inline std::string unsupported_reason(const ConvShape &s) {
  try {
    s.validate();
  } catch (const ShapeError &e) {
    return std::string("invalid shape: ") + e.what();
  }
  if (s.op != ConvOp::transposed)
    return "forward Conv1d is not a polyphase ConvTranspose1d";
  if (s.dilation != 1)
    return "dilation != 1";
  if (s.k % s.stride != 0)
    return "K is not a multiple of the stride";
  if (s.k / s.stride > 4)
    return "more than 4 taps per phase (K / stride > 4)";
  return "";
}

// The geometry of a shape unsupported_reason accepts.
inline Geometry geometry(const ConvShape &s) {
  return {s.batch, s.cin, s.cout, s.l_in, s.l_out(), s.k, s.stride, s.padding, int(s.k / s.stride),
          s.bias};
}

} // namespace convbench::polyphase
