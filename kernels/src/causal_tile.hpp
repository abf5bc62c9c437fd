// The causal depthwise conv1d's f32 arithmetic and the per-thread bodies of its two CUDA kernels,
// written once for the device and the host: the kernels (cuda/causal_kernels.cu) call these
// functions, cpu-f32 calls causal_cell, and the tests' host emulation runs the kernel bodies thread
// by thread and barrier phase by barrier phase. What one output cell computes is therefore the
// same expression, in the same order, in all of them:
//   acc = bias; acc = acc + w[k] * xpad[t + k] for k ascending (one f32 multiply, one f32 add,
//   never contracted to an FMA); then SiLU as v / (1 + exp_f32(-v)) with exp_f32 below.
// The register kernel and the tiled kernel differ only in where the window comes from
// (registers sliding along t, or a shared-memory tile), so they promise the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "host_device.hpp"

namespace convbench::causal_detail {

// Arithmetic spelled so that nvcc cannot contract it and the host (-ffp-contract=off) does the
// same IEEE operations: every result below is the correctly rounded one on both sides.
CONVBENCH_HD float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
CONVBENCH_HD float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
CONVBENCH_HD float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
CONVBENCH_HD float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
CONVBENCH_HD float rint(float a) {
#if defined(__CUDA_ARCH__)
  return rintf(a);
#else
  return std::nearbyint(a);
#endif
}
CONVBENCH_HD float scale2(float a, int n) { // a x 2^n, exact in the range exp_f32 uses
#if defined(__CUDA_ARCH__)
  return ldexpf(a, n);
#else
  return std::ldexp(a, n);
#endif
}

CONVBENCH_HD float infinity_f32() {
  const uint32_t u = 0x7f800000u;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// exp in f32 from correctly rounded operations only (Cody-Waite reduction, degree-7 Taylor-
// Horner), so the host and the device compute the same bits (the libraries' expf differ); about
// 1.1 ulp from the true value on the range SiLU uses (ExpWithinTwoUlp). Saturates: 0 below -87,
// +inf above 88.
CONVBENCH_HD float exp_f32(float a) {
  if (a < -87.0f)
    return 0.0f;
  if (a > 88.0f)
    return infinity_f32();
  const float n = rint(mul(a, 1.44269504f));
  // ln 2 split so that n x ln2_hi is exact for |n| < 2^9.
  const float r = add(add(a, mul(-n, 0.693145752f)), mul(-n, 1.42860677e-6f));
  float p = 1.0f / 5040.0f;
  p = add(mul(p, r), 1.0f / 720.0f);
  p = add(mul(p, r), 1.0f / 120.0f);
  p = add(mul(p, r), 1.0f / 24.0f);
  p = add(mul(p, r), 1.0f / 6.0f);
  p = add(mul(p, r), 0.5f);
  p = add(mul(p, r), 1.0f);
  p = add(mul(p, r), 1.0f);
  return scale2(p, int(n));
}

CONVBENCH_HD float silu(float v) { return div(v, add(1.0f, exp_f32(-v))); }

// Faults a test plants in one kernel's arithmetic to show its gates have teeth. Only the tests
// instantiate anything but `none`.
enum class Fault { none, fma_last_tap, reversed_taps, bias_last, in_place_state };

// One output cell from its K taps and its window xpad[t .. t + K - 1].
template <int K, Fault F = Fault::none>
CONVBENCH_HD float causal_cell(const float (&w)[K], const float (&win)[K], float bias, bool act) {
  float acc = F == Fault::bias_last ? 0.0f : bias;
  for (int i = 0; i < K; ++i) {
    const int k = F == Fault::reversed_taps ? K - 1 - i : i;
    if (F == Fault::fma_last_tap && k == K - 1)
      acc = fma(w[k], win[k], acc);
    else
      acc = add(acc, mul(w[k], win[k]));
  }
  if (F == Fault::bias_last)
    acc = add(acc, bias);
  return act ? silu(acc) : acc;
}

// bf16 store: round to nearest even, as __float2bfloat16_rn (NaN kept a quiet NaN).
CONVBENCH_HD uint16_t to_bf16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
CONVBENCH_HD float from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// What a launch reads and writes. y is float* (f32 output) or uint16_t* (bf16 output).
struct CausalParams {
  int64_t batch, channels, length;
  const float *x;
  const float *w;
  const float *bias;                // nullptr: no bias
  const float *initial_state;       // nullptr: none
  const uint8_t *has_initial_state; // per sequence, read when initial_state is given
  void *y;
  float *final_state;
  bool silu;
};

template <bool kBf16> CONVBENCH_HD void store_y(const CausalParams &p, int64_t i, float v) {
  if (kBf16)
    static_cast<uint16_t *>(p.y)[i] = to_bf16(v);
  else
    static_cast<float *>(p.y)[i] = v;
}

// Where the final state goes: its own buffer (the product), or -- the planted race, tests only --
// back into the initial state's row, which another block of the same launch still reads.
template <Fault F>
CONVBENCH_HD float *final_state_row(const CausalParams &p, int64_t row, int km1) {
  if (F == Fault::in_place_state && p.initial_state)
    return const_cast<float *>(p.initial_state) + row * km1;
  return p.final_state + row * km1;
}

// xpad[j] of one row: the initial state (or zero) for j < K - 1, else x[j - (K - 1)].
template <int K>
CONVBENCH_HD float xpad(const CausalParams &p, int64_t row, bool state, int64_t j) {
  if (j >= K - 1)
    return p.x[row * p.length + (j - (K - 1))];
  return state ? p.initial_state[row * (K - 1) + j] : 0.0f;
}

CONVBENCH_HD bool row_has_state(const CausalParams &p, int64_t row) {
  return p.initial_state && p.has_initial_state[row / p.channels] != 0;
}

// ---- the register kernel: one thread per (row, segment of kSeg outputs) ----
constexpr int kRegSeg = 16;      // outputs per thread
constexpr int kRegThreads = 128; // threads per block

CONVBENCH_HD int64_t register_threads(const CausalParams &p) {
  return p.batch * p.channels * ((p.length + kRegSeg - 1) / kRegSeg);
}

// Thread `gid`: its channel's K taps and a K-value window in registers, sliding along t.
template <int K, bool kBf16, Fault F = Fault::none>
CONVBENCH_HD void register_thread(const CausalParams &p, int64_t gid) {
  const int64_t segs = (p.length + kRegSeg - 1) / kRegSeg;
  const int64_t row = gid / segs, t0 = (gid % segs) * kRegSeg;
  if (row >= p.batch * p.channels)
    return;
  const int64_t c = row % p.channels;
  float w[K], win[K];
  for (int k = 0; k < K; ++k)
    w[k] = p.w[c * K + k];
  const float b = p.bias ? p.bias[c] : 0.0f;
  const bool state = row_has_state(p, row);
  for (int k = 0; k < K - 1; ++k)
    win[k] = xpad<K>(p, row, state, t0 + k);
  const int64_t t1 = t0 + kRegSeg < p.length ? t0 + kRegSeg : p.length;
  for (int64_t t = t0; t < t1; ++t) {
    win[K - 1] = p.x[row * p.length + t];
    store_y<kBf16>(p, row * p.length + t, causal_cell<K, F>(w, win, b, p.silu));
    for (int k = 0; k < K - 1; ++k)
      win[k] = win[k + 1];
  }
  // The thread of the row's last segment holds xpad[L .. L + K - 2] in its window.
  if (t1 == p.length) {
    float *fs = final_state_row<F>(p, row, K - 1);
    for (int k = 0; k < K - 1; ++k)
      fs[k] = win[k];
  }
}

// ---- the tiled kernel: a block = kTileC channels x one exact chunk of kChunk positions ----
constexpr int kTileC = 8;
constexpr int kChunk = 256;
constexpr int kTiledThreads = 256;

template <int K> struct TiledSmem {
  float x[kTileC][kChunk + K - 1]; // xpad[t0 .. t0 + len + K - 2] of each channel of the tile
  float w[kTileC][K];
  float b[kTileC];
};

struct TiledBlock {
  int64_t chunk, tile, batch; // blockIdx.x, .y, .z
};

CONVBENCH_HD int64_t tiled_chunks(const CausalParams &p) {
  return (p.length + kChunk - 1) / kChunk;
}
CONVBENCH_HD int64_t tiled_tiles(const CausalParams &p) {
  return (p.channels + kTileC - 1) / kTileC;
}

// Phase 1 (before the barrier): thread `tid` stages its share of the tile, coalesced along t.
template <int K>
CONVBENCH_HD void tiled_stage(const CausalParams &p, const TiledBlock &blk, int tid,
                              TiledSmem<K> &sm) {
  const int64_t t0 = blk.chunk * kChunk;
  const int64_t len = t0 + kChunk < p.length ? kChunk : p.length - t0;
  const int width = int(len) + K - 1;
  for (int i = tid; i < kTileC * width; i += kTiledThreads) {
    const int cc = i / width, j = i % width;
    const int64_t c = blk.tile * kTileC + cc;
    if (c >= p.channels)
      continue;
    const int64_t row = blk.batch * p.channels + c;
    sm.x[cc][j] = xpad<K>(p, row, row_has_state(p, row), t0 + j);
  }
  for (int i = tid; i < kTileC * K; i += kTiledThreads) {
    const int64_t c = blk.tile * kTileC + i / K;
    if (c < p.channels)
      sm.w[i / K][i % K] = p.w[c * K + i % K];
  }
  for (int i = tid; i < kTileC; i += kTiledThreads) {
    const int64_t c = blk.tile * kTileC + i;
    if (c < p.channels)
      sm.b[i] = p.bias ? p.bias[c] : 0.0f;
  }
}

// Phase 2 (after the barrier): outputs from the tile; the block of the last chunk also writes the
// final state, from the tile it staged (never from the state buffer another block reads).
template <int K, bool kBf16, Fault F = Fault::none>
CONVBENCH_HD void tiled_compute(const CausalParams &p, const TiledBlock &blk, int tid,
                                const TiledSmem<K> &sm) {
  const int64_t t0 = blk.chunk * kChunk;
  const int len = int(t0 + kChunk < p.length ? kChunk : p.length - t0);
  for (int i = tid; i < kTileC * len; i += kTiledThreads) {
    const int cc = i / len, tt = i % len;
    const int64_t c = blk.tile * kTileC + cc;
    if (c >= p.channels)
      continue;
    float w[K], win[K];
    for (int k = 0; k < K; ++k) {
      w[k] = sm.w[cc][k];
      win[k] = sm.x[cc][tt + k];
    }
    const int64_t row = blk.batch * p.channels + c;
    store_y<kBf16>(p, row * p.length + t0 + tt, causal_cell<K, F>(w, win, sm.b[cc], p.silu));
  }
  if (t0 + len != p.length)
    return;
  for (int i = tid; i < kTileC * (K - 1); i += kTiledThreads) {
    const int cc = i / (K - 1), j = i % (K - 1);
    const int64_t c = blk.tile * kTileC + cc;
    if (c < p.channels)
      final_state_row<F>(p, blk.batch * p.channels + c, K - 1)[j] = sm.x[cc][len + j];
  }
}

} // namespace convbench::causal_detail
