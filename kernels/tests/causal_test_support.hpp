// Test-local helpers for the causal depthwise conv1d: seeded problems, the host emulation of the
// two CUDA kernels (the kernels' own per-thread bodies from causal_tile.hpp, over the launch's own
// grid, thread by thread and, for the tiled kernel, barrier phase by barrier phase), and cell
// comparisons.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "causal_tile.hpp"
#include "convbench/causal_conv.hpp"
#include "convbench/thread_pool.hpp"

namespace convbench::causal_testing {

using causal_detail::CausalParams;
using causal_detail::Fault;

struct CausalProblem {
  CausalConvShape s;
  std::vector<float> x, w, b, state;
  std::vector<uint8_t> has_state;
  CausalTensors tensors(float *y, float *fs) const {
    return {x.data(),
            w.data(),
            s.bias ? b.data() : nullptr,
            s.initial_state ? state.data() : nullptr,
            s.initial_state ? has_state.data() : nullptr,
            y,
            fs};
  }
};

// A causal shape: batch, channels, length, an initial state for every even sequence, width, act.
inline CausalConvShape shape(int64_t b, int64_t c, int64_t l, bool state, int64_t k = 4,
                             Activation a = Activation::silu) {
  CausalConvShape s;
  s.batch = b;
  s.channels = c;
  s.length = l;
  s.k = k;
  s.initial_state = state;
  s.activation = a;
  return s;
}

inline std::vector<float> uniform(int64_t n, double bound, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-bound, bound);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto &e : v) {
    do
      e = float(d(rng));
    while (e == 0.0f);
  }
  return v;
}

// Weights in +-1/sqrt(k) as torch initialises a depthwise conv; every other sequence carries an
// initial state when the shape has one (sequence 0 always), so both paths run in one launch.
inline CausalProblem random_problem(const CausalConvShape &s, uint64_t seed) {
  CausalProblem p;
  p.s = s;
  p.x = uniform(s.input_elems(), 1.0, seed * 5 + 1);
  p.w = uniform(s.weight_elems(), 1.0 / std::sqrt(double(s.k)), seed * 5 + 2);
  p.b = uniform(s.channels, 1.0 / std::sqrt(double(s.k)), seed * 5 + 3);
  if (s.initial_state) {
    p.state = uniform(s.state_elems(), 1.0, seed * 5 + 4);
    for (int64_t b = 0; b < s.batch; ++b)
      p.has_state.push_back(b % 2 == 0 ? 1 : 0);
  }
  return p;
}

struct Output {
  std::vector<float> y, fs;
};

inline ThreadPool &pool() {
  static ThreadPool p(int(std::max(1u, std::thread::hardware_concurrency())));
  return p;
}

inline Output run_host(const CausalProblem &p, bool f64) {
  Output o{std::vector<float>(size_t(p.s.output_elems())),
           std::vector<float>(size_t(p.s.state_elems()))};
  const CausalTensors t = p.tensors(o.y.data(), o.fs.data());
  if (f64)
    causal_cpu_f64(p.s, t, pool());
  else
    causal_cpu_f32(p.s, t, pool());
  return o;
}

// The launch parameters a kernel would get. state may point at a copy the test owns (the
// planted in-place variant writes into it).
inline CausalParams params(const CausalProblem &p, float *state, void *y, float *fs) {
  CausalParams q{};
  q.batch = p.s.batch;
  q.channels = p.s.channels;
  q.length = p.s.length;
  q.x = p.x.data();
  q.w = p.w.data();
  q.bias = p.s.bias ? p.b.data() : nullptr;
  q.initial_state = p.s.initial_state ? state : nullptr;
  q.has_initial_state = p.s.initial_state ? p.has_state.data() : nullptr;
  q.y = y;
  q.final_state = fs;
  q.silu = p.s.activation == Activation::silu;
  return q;
}

// The register kernel's grid, block by block (blockIdx.y the sequence), thread by thread.
template <int K, bool kBf16, bool kVec, Fault F> void emulate_register_k(const CausalParams &q) {
  using namespace causal_detail;
  const RegisterPlan g = register_plan(q);
  for (int64_t seq = 0; seq < q.batch; ++seq)
    for (uint32_t blk = 0; blk < g.blocks; ++blk)
      for (uint32_t t = 0; t < uint32_t(kRegThreads); ++t)
        register_thread<K, kBf16, kVec, F>(q, g, seq, blk * kRegThreads + t);
}

// The tiled kernel's grid in the tile shape the launch picks (tile_shape), block by block, each
// block's threads phase by phase around the barrier.
template <int K, bool kBf16, bool kVec, Fault F, class G>
void emulate_tiled_g(const CausalParams &q) {
  using namespace causal_detail;
  auto sm = std::make_unique<TiledSmem<K, G>>();
  for (int64_t z = 0; z < q.batch; ++z)
    for (int64_t y = 0; y < tiled_tiles<G>(q); ++y)
      for (int64_t x = 0; x < tiled_chunks<G>(q); ++x) {
        const TiledBlock blk{x, y, z};
        std::memset(sm.get(), 0xff, sizeof *sm); // NaN: a cell read before it was staged shows
        for (int t = 0; t < kTiledThreads; ++t)
          tiled_stage<K, kVec, G>(q, blk, t, *sm);
        // __syncthreads()
        for (int t = 0; t < kTiledThreads; ++t)
          tiled_compute<K, kBf16, kVec, F, G>(q, blk, t, *sm);
      }
}
template <int K, bool kBf16, bool kVec, Fault F> void emulate_tiled_k(const CausalParams &q) {
  using namespace causal_detail;
  switch (tile_shape(q.length)) {
  case TileKind::decode:
    return emulate_tiled_g<K, kBf16, kVec, F, DecodeTile>(q);
  case TileKind::short_rows:
    return emulate_tiled_g<K, kBf16, kVec, F, ShortTile>(q);
  case TileKind::mid_rows:
    return emulate_tiled_g<K, kBf16, kVec, F, MidTile>(q);
  case TileKind::long_rows:
    return emulate_tiled_g<K, kBf16, kVec, F, LongTile>(q);
  }
}

enum class Kernel { reg, tiled };
// Which access path an emulated launch takes: the launch's own choice (causal_vec), the vector
// path (an error where the launch would not take it), or element by element even where vectors
// would do (so the element path also runs on long rows).
enum class Access { as_launched, vectors, elements };

template <bool kBf16, Fault F>
void emulate_as(const CausalParams &q, int k, Kernel kernel, Access access) {
  const bool can = causal_detail::causal_vec(q, kBf16);
  if (access == Access::vectors && !can)
    throw std::runtime_error("emulate: the launch would not take the vector path");
  const bool vec = access != Access::elements && can;
  auto go = [&](auto kc, auto vc) {
    constexpr int K = decltype(kc)::value;
    constexpr bool kVec = decltype(vc)::value;
    if (kernel == Kernel::reg)
      emulate_register_k<K, kBf16, kVec, F>(q);
    else
      emulate_tiled_k<K, kBf16, kVec, F>(q);
  };
  auto with_k = [&](auto kc) {
    if (vec)
      go(kc, std::true_type{});
    else
      go(kc, std::false_type{});
  };
  if (k == 2)
    with_k(std::integral_constant<int, 2>{});
  if (k == 3)
    with_k(std::integral_constant<int, 3>{});
  if (k == 4)
    with_k(std::integral_constant<int, 4>{});
}

// One emulated launch; y widened to f32 when bf16 (exact). `state` is the initial state buffer
// the launch reads (the planted in-place fault writes into it too). y and the final state start
// as NaN, so a cell no thread writes cannot pass for a computed one.
template <Fault F = Fault::none>
Output emulate(const CausalProblem &p, Kernel kernel, bool bf16,
               std::vector<float> *state_buf = nullptr, Access access = Access::as_launched) {
  std::vector<float> own_state = p.state;
  float *st = state_buf ? state_buf->data() : own_state.data();
  const float nan = std::nanf("");
  Output o{std::vector<float>(size_t(p.s.output_elems()), nan),
           std::vector<float>(size_t(p.s.state_elems()), nan)};
  if (bf16) {
    std::vector<uint16_t> yb(o.y.size(), 0x7fc0);
    emulate_as<true, F>(params(p, st, yb.data(), o.fs.data()), int(p.s.k), kernel, access);
    for (size_t i = 0; i < yb.size(); ++i)
      o.y[i] = causal_detail::from_bf16(yb[i]);
  } else {
    emulate_as<false, F>(params(p, st, o.y.data(), o.fs.data()), int(p.s.k), kernel, access);
  }
  return o;
}

inline int64_t cells_differ(const std::vector<float> &a, const std::vector<float> &b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i)
    n += std::memcmp(&a[i], &b[i], 4) != 0;
  return n;
}

inline double rel_l2(const std::vector<float> &y, const std::vector<float> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double d = double(y[i]) - double(ref[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline std::string name(const CausalConvShape &s) {
  // Appended piecewise: "b" + std::to_string(..) trips GCC 12's -Wrestrict (GCC bug 105329).
  std::string n("b");
  n.append(std::to_string(s.batch)).append(" c").append(std::to_string(s.channels));
  n.append(" k").append(std::to_string(s.k)).append(" l").append(std::to_string(s.length));
  if (s.initial_state)
    n.append(" state");
  if (s.activation == Activation::silu)
    n.append(" silu");
  return n;
}

// The stated tolerances (relative L2 against cpu-f64; the arms use the same figures): an f32 sum
// of k O(1) terms errs by a few 2^-24 relative, SiLU's exp by about one ulp; bf16 rounding alone
// is up to 2^-9 relative per cell.
constexpr double kF32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 5e-3;

} // namespace convbench::causal_testing
