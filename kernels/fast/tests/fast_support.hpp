// Helpers shared by the fast-kernel and cuDNN-peer tests and the bench: seeded problems, the
// vocoder stage shapes of facts.md, comparisons. Host-only (no CUDA headers).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "convbench/shape.hpp"

namespace convbench::peer_testing {

// Uniform in [-1, 1], never exactly 0 (a 0 is skipped by the reference and would hide order).
inline std::vector<float> random_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto &e : v) {
    do
      e = dist(rng);
    while (e == 0.0f);
  }
  return v;
}

struct Problem {
  ConvShape shape;
  std::vector<float> x, w, b;
  const float *bias() const { return shape.bias ? b.data() : nullptr; }
};

inline Problem random_problem(const ConvShape &s, uint64_t seed) {
  return Problem{s, random_values(s.input_elems(), seed * 3 + 1),
                 random_values(s.weight_elems(), seed * 3 + 2),
                 random_values(s.bias ? s.cout : 1, seed * 3 + 3)};
}

// One ConvTranspose1d upsample stage of a vocoder (facts.md: padding (K - s) / 2, bias on,
// L_in = frames x product of the earlier strides, channels halve each stage).
struct Stage {
  std::string model;
  std::string name; // up0, up1, ...
  ConvShape shape;
};

struct ModelFamily {
  std::string model;
  int64_t channels;
  std::vector<int64_t> strides, kernels;
};

inline std::vector<ModelFamily> model_families() {
  return {{"bigvgan_v2_44khz_128band_512x", 1536, {8, 4, 2, 2, 2, 2}, {16, 8, 4, 4, 4, 4}},
          {"bigvgan_v2_44khz_128band_256x", 1536, {4, 4, 2, 2, 2, 2}, {8, 8, 4, 4, 4, 4}},
          {"bigvgan_base_22khz_80band", 512, {8, 8, 2, 2}, {16, 16, 4, 4}}};
}

inline std::vector<Stage> model_stages(const ModelFamily &m, int64_t frames, int64_t batch = 1) {
  std::vector<Stage> out;
  int64_t l_in = frames;
  for (size_t i = 0; i < m.strides.size(); ++i) {
    ConvShape s;
    s.op = ConvOp::transposed;
    s.batch = batch;
    s.cin = m.channels >> i;
    s.cout = m.channels >> (i + 1);
    s.k = m.kernels[i];
    s.stride = m.strides[i];
    s.padding = (s.k - s.stride) / 2;
    s.l_in = l_in;
    s.bias = true;
    out.push_back({m.model, "up" + std::to_string(i), s});
    l_in *= s.stride;
  }
  return out;
}

inline std::vector<Stage> all_stages(int64_t frames) {
  std::vector<Stage> out;
  for (const auto &m : model_families())
    for (auto &st : model_stages(m, frames))
      out.push_back(st);
  return out;
}

// Cells whose bytes differ (so -0.0 vs +0.0 and NaN payloads count).
inline int64_t differing_cells(const std::vector<float> &a, const std::vector<float> &b) {
  if (a.size() != b.size())
    return -1;
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i)
    n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

// ||a - ref||_2 / ||ref||_2 in f64; NaN anywhere in a gives NaN (fails every bound).
inline double relative_l2(const std::vector<float> &a, const std::vector<float> &ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(a[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return std::sqrt(num / den);
}

inline int64_t nan_cells(const std::vector<float> &a) {
  int64_t n = 0;
  for (float v : a)
    n += std::isnan(v);
  return n;
}

// f32-accumulation bound: rounding error of a sum of n random-sign terms grows like
// eps * sqrt(n) relative to the result (eps = 2^-24); the largest reduction here is up0's
// 1536 channels x 2 taps = 3072 terms -> ~3e-6 expected. 1e-5 leaves a 3x margin and is still
// ~1000x below dropping one input channel of 1536 (~2.5e-2 relative).
constexpr double kF32RelativeL2Bound = 1e-5;

// The width probe of facts.md along input channels: cin 27, cout 1, K 1, l_in 1, ones in, taps
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
