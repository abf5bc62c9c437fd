// Test-local helpers: seeded data, an independent cell-by-cell reference (whose input-channel
// order can be reversed, to give the gates their teeth), and comparisons.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "convbench/cpu_conv.hpp"
#include "convbench/shape.hpp"
#include "convbench/thread_pool.hpp"

namespace convbench::testing {

// CONVBENCH_SANITIZER_SMALL=1 (scripts/h200.sh's sanitizer steps): the GPU tests take smaller
// problem sets where compute-sanitizer over the full ones outlasts a device call.
inline bool sanitizer_small() {
  const char *v = std::getenv("CONVBENCH_SANITIZER_SMALL");
  return v && std::string(v) == "1";
}

// Uniform in [-1, 1], never exactly 0 (a 0 would be skipped and hide order changes).
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
  Problem p{s, random_values(s.input_elems(), seed * 3 + 1),
            random_values(s.weight_elems(), seed * 3 + 2),
            random_values(s.bias ? s.cout : 0, seed * 3 + 3)};
  return p;
}

// The reference (conv_cpu_f64) of a problem, on a pool of every hardware thread kept for the
// process: the one all the kernel, fast, tensor-core and cuDNN gates compare against.
inline std::vector<float> reference_f64(const Problem &pr) {
  static ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  std::vector<float> y(static_cast<size_t>(pr.shape.output_elems()));
  conv_cpu_f64(pr.shape, pr.x.data(), pr.w.data(), pr.bias(), y.data(), pool);
  return y;
}

// A shape in one line, for test messages: op, batch, channels, K, stride, dilation, padding,
// output_padding, length, bias.
inline std::string describe(const ConvShape &s) {
  return to_string(s.op) + " b" + std::to_string(s.batch) + " cin" + std::to_string(s.cin) +
         " cout" + std::to_string(s.cout) + " k" + std::to_string(s.k) + " s" +
         std::to_string(s.stride) + " d" + std::to_string(s.dilation) + " p" +
         std::to_string(s.padding) + " op" + std::to_string(s.output_padding) + " l_in" +
         std::to_string(s.l_in) + (s.bias ? "" : " nobias");
}

// A random valid shape: stride, dilation, padding, output_padding, odd lengths, batch, bias on/off,
// and cin up to max_cin (pick values that are not a multiple of any tile a kernel may use).
// cout in [min_cout, max_cout] (the default 1-9 keeps the gates fast; the forward tile kernel's
// tests ask for 16 and more, the channels it takes).
inline ConvShape random_shape(std::mt19937_64 &rng, ConvOp op, int64_t max_cin, int64_t max_l_in,
                              int64_t min_cout = 1, int64_t max_cout = 9) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (;;) {
    ConvShape s;
    s.op = op;
    s.batch = pick(1, 2);
    s.cin = pick(1, max_cin);
    s.cout = pick(min_cout, max_cout);
    s.k = pick(1, 9);
    s.stride = pick(1, 4);
    s.dilation = pick(1, 3);
    s.padding = pick(0, s.dilation * (s.k - 1) + 1);
    s.output_padding = op == ConvOp::transposed ? pick(0, std::max(s.stride, s.dilation) - 1) : 0;
    s.l_in = pick(1, max_l_in);
    s.bias = pick(0, 3) != 0;
    try {
      s.validate();
      return s;
    } catch (const ShapeError &) {
      // draw again: e.g. a forward input shorter than its dilated kernel
    }
  }
}

} // namespace convbench::testing

namespace convbench {
// gtest prints a ConvOp parameter by name (found by argument-dependent lookup).
inline void PrintTo(ConvOp op, std::ostream *os) { *os << to_string(op); }
} // namespace convbench

namespace convbench::testing {

enum class IcOrder { ascending, descending };

// The reference's contract, written the slow obvious way, one cell at a time: forward adds bias,
// then (ic, k); transposed adds (ic, t) with the single k hitting the cell, then bias. Skips x ==
// 0.
inline std::vector<float> naive_f64(const Problem &pr, IcOrder order) {
  const ConvShape &s = pr.shape;
  const int64_t lo = s.l_out();
  std::vector<float> y(size_t(s.output_elems()));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t oc = 0; oc < s.cout; ++oc)
      for (int64_t q = 0; q < lo; ++q) {
        double acc = (s.op == ConvOp::forward && s.bias) ? double(pr.b[oc]) : 0.0;
        for (int64_t n = 0; n < s.cin; ++n) {
          const int64_t ic = order == IcOrder::ascending ? n : s.cin - 1 - n;
          const float *xr = pr.x.data() + (b * s.cin + ic) * s.l_in;
          if (s.op == ConvOp::forward) {
            for (int64_t k = 0; k < s.k; ++k) {
              const int64_t i = q * s.stride - s.padding + k * s.dilation;
              if (i < 0 || i >= s.l_in || xr[i] == 0.0f)
                continue;
              acc += double(xr[i]) * double(pr.w[(oc * s.cin + ic) * s.k + k]);
            }
          } else {
            for (int64_t t = 0; t < s.l_in; ++t) {
              const int64_t r = q + s.padding - t * s.stride; // must equal k * dilation
              if (r < 0 || r % s.dilation != 0 || r / s.dilation >= s.k || xr[t] == 0.0f)
                continue;
              acc += double(xr[t]) * double(pr.w[(ic * s.cout + oc) * s.k + r / s.dilation]);
            }
          }
        }
        if (s.op == ConvOp::transposed && s.bias)
          acc += double(pr.b[oc]);
        y[size_t((b * s.cout + oc) * lo + q)] = float(acc);
      }
  return y;
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

// ||a - ref||_2 / ||ref||_2 in f64. An all-zero reference (every tap cut off by padding, no
// bias: seen on the H200 as shape 116 of the random conv1d set) has no relative scale: then the
// error is 0 when `a` is exactly zero too and infinity otherwise, never 0/0 = NaN.
inline double relative_l2(const std::vector<float> &a, const std::vector<float> &ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(a[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  if (den == 0.0)
    return num == 0.0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

// f32 accumulation error bound for these gates. The rounding error of a sum of n random-sign terms
// grows like eps * sqrt(n / 3) relative to the result (eps = 2^-24 ~ 6e-8); the largest reduction
// the gates use (a Conv1d with 768 channels x 11 taps = 8448 terms, or up0's 1536 x 16 / 8 per
// destination) gives about 3e-6. 1e-5 leaves a 3x margin and is still 100x below what dropping
// one input channel out of 1536 costs (about 1 / sqrt(1536) ~ 2.5e-2).
constexpr double kF32RelativeL2Bound = 1e-5;

// The accumulator-width probe: 27 taps [+1e8, 0.1 x 25, -1e8] over an all-ones input.
inline std::vector<float> probe_taps() {
  std::vector<float> t(27, 0.1f);
  t.front() = 1e8f;
  t.back() = -1e8f;
  return t;
}
// What an f64 accumulator gives (summing the f32 taps in f64 in either direction), stored to f32.
inline float probe_f64_expected() {
  double acc = 0.0;
  for (float v : probe_taps())
    acc += double(v);
  return float(acc); // 2.499999850988388 -> 2.4999998f
}

// Probe layouts: the 27 taps along k (one channel), or along input channels (k = 1).
//  forward along k:    cin 1, cout 1, k 27, l_in 27, padding 0   -> l_out 1, taps k = 0..26
//  transposed along k: cin 1, cout 1, k 27, l_in 27, padding 26  -> l_out 1, cell 0 gets
//                      t = 0..26 with k = 26 - t (the taps are symmetric, so order is moot)
//  along channels:     cin 27, cout 1, k 1, l_in 1 (either op)    -> l_out 1
inline Problem probe_problem(ConvOp op, bool along_channels) {
  ConvShape s;
  s.op = op;
  s.cout = 1;
  s.bias = false;
  if (along_channels) {
    s.cin = 27;
    s.k = 1;
    s.l_in = 1;
  } else {
    s.cin = 1;
    s.k = 27;
    s.l_in = 27;
    s.padding = op == ConvOp::transposed ? 26 : 0;
  }
  Problem p{s, std::vector<float>(size_t(s.input_elems()), 1.0f), probe_taps(), {}};
  return p;
}

// Engineered catastrophic cancellation: the last two input channels carry the same input row and
// weights of +2^40 and -2^40 for every output channel and tap. In the promised order the small
// channels are summed first and then swamped (rounded to the 2^-12 grid of 2^40) and cancelled;
// in reversed order the big pair cancels first and the small ones survive intact. An f64
// accumulator stored to f32 shows the difference only because the loss is at 2^-12, above f32's
// resolution near 1.
// The big pair is always the last two channels of `s` (cin >= 3); the fast kernels' tests pass a
// shape whose pair lands chunks after the first.
inline Problem cancellation_problem(const ConvShape &s, uint64_t seed) {
  const ConvOp op = s.op;
  Problem p = random_problem(s, seed);
  const float big = std::ldexp(1.0f, 40);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t t = 0; t < s.l_in; ++t)
      p.x[size_t((b * s.cin + s.cin - 1) * s.l_in + t)] =
          p.x[size_t((b * s.cin + s.cin - 2) * s.l_in + t)];
  for (int64_t oc = 0; oc < s.cout; ++oc)
    for (int64_t k = 0; k < s.k; ++k) {
      const auto at = [&](int64_t ic) {
        return size_t(op == ConvOp::forward ? (oc * s.cin + ic) * s.k + k
                                            : (ic * s.cout + oc) * s.k + k);
      };
      p.w[at(s.cin - 2)] = big;
      p.w[at(s.cin - 1)] = -big;
    }
  return p;
}
inline Problem cancellation_problem(ConvOp op, uint64_t seed) {
  ConvShape s;
  s.op = op;
  s.batch = 2;
  s.cin = 7;
  s.cout = 5;
  s.k = 3;
  s.stride = op == ConvOp::transposed ? 2 : 1;
  s.padding = 1;
  s.l_in = 19;
  return cancellation_problem(s, seed);
}

} // namespace convbench::testing
