// Helpers shared by the fast-kernel, tensor-core and cuDNN-peer tests: seeded problems, the
// vocoder stage shapes, comparisons. Host-only (no CUDA headers).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "convbench/shape.hpp"
#include "model_stages.hpp" // kernels/tests: the stages of bench/data/models.json
#include "test_support.hpp" // kernels/tests: seeded problems and comparisons, one copy

namespace convbench::peer_testing {

// The kernel gates' helpers (kernels/tests/test_support.hpp), under the names these tests use.
using testing::differing_cells;
using testing::kF32RelativeL2Bound;
using testing::Problem;
using testing::random_problem;
using testing::random_values;
using testing::relative_l2;

// A random ConvTranspose1d shape for the polyphase kernels' tests, drawn until `supported(s)`:
// batch, cin, cout, stride, taps per phase M, padding, output_padding, l_in, bias, in this order
// (each test's shapes are its seed's sequence of these draws). K = M * stride; M is drawn from
// 1..4 unless `taps` fixes it (no draw); padding from 0..K + pad_over_k.
struct RandomShapeRanges {
  int64_t batch, cin, cout, l_in, stride;
  int64_t pad_over_k = 0;
  int64_t taps = 0;
};
template <class Supported>
ConvShape random_transposed_shape(std::mt19937_64 &rng, const RandomShapeRanges &r,
                                  Supported supported) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (;;) {
    ConvShape s;
    s.op = ConvOp::transposed;
    s.batch = pick(1, r.batch);
    s.cin = pick(1, r.cin);
    s.cout = pick(1, r.cout);
    s.stride = pick(1, r.stride);
    s.k = (r.taps ? r.taps : pick(1, 4)) * s.stride;
    s.padding = pick(0, s.k + r.pad_over_k);
    s.output_padding = pick(0, s.stride - 1);
    s.l_in = pick(1, r.l_in);
    s.bias = pick(0, 3) != 0;
    if (supported(s))
      return s;
  }
}

// The vocoder stages, from bench/data/models.json (model_stages.hpp).
using testing::all_stages;
using testing::model_families;
using testing::model_stages;
using testing::ModelFamily;
using testing::Stage;

inline int64_t nan_cells(const std::vector<float> &a) {
  int64_t n = 0;
  for (float v : a)
    n += std::isnan(v);
  return n;
}

// The accumulator-width probe along input channels: cin 27, cout 1, K 1, l_in 1, ones in, taps
// [+1e8, 0.1 x 25, -1e8]: an f32 accumulator in ic order gives exactly 0.0, an f64 one ~2.5.
inline Problem width_probe() {
  ConvShape s;
  s.op = ConvOp::transposed;
  s.cin = 27;
  s.cout = 1;
  s.k = 1;
  s.l_in = 1;
  s.bias = false;
  std::vector<float> taps(27, 0.1f);
  taps.front() = 1e8f;
  taps.back() = -1e8f;
  return Problem{s, std::vector<float>(27, 1.0f), taps, {0.0f}};
}
inline float width_probe_f64() {
  double acc = 0.0;
  for (float v : width_probe().w)
    acc += double(v);
  return float(acc);
}

} // namespace convbench::peer_testing
