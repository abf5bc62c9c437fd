// Shapes and problems shared by the fast kernels' host emulation (fast_emulation_test.cpp) and
// device (fast_gpu_test.cpp) gates: the random supported shapes, the two exact-property problems
// (tap order under cancellation, zero inputs against infinite weights) and a shape's one-line
// description. Host-only.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "convbench/fast_conv.hpp"
#include "fast_support.hpp"

namespace convbench::fast::fast_testing {

using peer_testing::Problem;

inline std::string describe(const ConvShape &s) {
  return "batch " + std::to_string(s.batch) + " cin " + std::to_string(s.cin) + " cout " +
         std::to_string(s.cout) + " K " + std::to_string(s.k) + " stride " +
         std::to_string(s.stride) + " pad " + std::to_string(s.padding) + " outpad " +
         std::to_string(s.output_padding) + " l_in " + std::to_string(s.l_in) +
         (s.bias ? " bias" : " no-bias");
}

// Upper bounds of a random shape: small for the host emulation, larger on the device.
struct ShapeLimits {
  int64_t batch, cin, cout, l_in;
};
constexpr ShapeLimits kEmulationLimits{2, 40, 70, 75};
constexpr ShapeLimits kDeviceLimits{3, 300, 200, 400};

// A random shape `cfg` can run: K = M * stride, any padding that leaves an output,
// output_padding < stride, odd lengths, channel counts that are not multiples of any tile.
// Non-default block configurations are compiled for M == 2 taps per phase only: their shapes
// keep K == 2 * stride (every vocoder stage).
inline ConvShape random_supported_shape(std::mt19937_64 &rng, const ShapeLimits &lim,
                                        const FastConfig &cfg = default_fast_config()) {
  const int64_t taps = cfg.block() == default_fast_config() ? 0 : 2;
  return peer_testing::random_transposed_shape(
      rng, {lim.batch, lim.cin, lim.cout, lim.l_in, 8, 0, taps},
      [&](const ConvShape &s) { return fast_config_unsupported_reason(s, cfg).empty(); });
}

// Tap order inside one channel: a +2^40 / -2^40 pair of taps over a constant row in the last
// channel (M = 2 taps per phase); any other order of the taps moves cells.
inline Problem tap_order_problem() {
  ConvShape s;
  s.op = ConvOp::transposed;
  s.cin = 21;
  s.cout = 3;
  s.k = 8;
  s.stride = 4;
  s.padding = 2;
  s.l_in = 13;
  Problem pr = peer_testing::random_problem(s, 3);
  const float big = std::ldexp(1.0f, 40);
  const int64_t last = s.cin - 1;
  for (int64_t t = 0; t < s.l_in; ++t)
    pr.x[size_t(last * s.l_in + t)] = 1.0f;
  for (int64_t oc = 0; oc < s.cout; ++oc)
    for (int64_t k = 0; k < s.k; ++k)
      pr.w[size_t((last * s.cout + oc) * s.k + k)] = k < s.stride ? -big : big;
  return pr;
}

// A channel (17) whose inputs are all 0 while its weights are infinite: the reference skips
// those taps (finite output); a kernel that multiplied 0 * inf would write NaN.
inline Problem infinite_weight_problem() {
  ConvShape s;
  s.op = ConvOp::transposed;
  s.cin = 19;
  s.cout = 6;
  s.k = 4;
  s.stride = 2;
  s.padding = 1;
  s.l_in = 9;
  Problem pr = peer_testing::random_problem(s, 5);
  const int64_t dead = 17;
  for (int64_t t = 0; t < s.l_in; ++t)
    pr.x[size_t(dead * s.l_in + t)] = 0.0f;
  for (int64_t i = 0; i < s.cout * s.k; ++i)
    pr.w[size_t(dead * s.cout * s.k + i)] = std::numeric_limits<float>::infinity();
  return pr;
}

// Channel order: a +2^40 / -2^40 pair of channels (the last two of 37, so every block config
// stages them chunks after the first) over the same input rows, batch 2; summing the channels in
// any other order moves cells.
inline Problem channel_cancellation_problem() {
  ConvShape s;
  s.op = ConvOp::transposed;
  s.batch = 2;
  s.cin = 37;
  s.cout = 5;
  s.k = 4;
  s.stride = 2;
  s.padding = 1;
  s.l_in = 19;
  return testing::cancellation_problem(s, 11);
}

} // namespace convbench::fast::fast_testing
