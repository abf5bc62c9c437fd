// The causal depthwise conv1d's f32 arithmetic and the per-thread bodies of its two CUDA kernels,
// written once for the device and the host: the kernels (cuda/causal_kernels.cu) call these
// functions, cpu-f32 calls causal_cell, and the tests' host emulation runs the kernel bodies thread
// by thread and barrier phase by barrier phase. What one output cell computes is therefore the
// same expression, in the same order, in all of them:
//   acc = bias; acc = acc + w[k] * xpad[t + k] for k ascending (one f32 multiply, one f32 add,
//   never contracted to an FMA); then SiLU as v / (1 + exp_f32(-v)) with exp_f32 below.
// The register kernel and the tiled kernel differ only in where the window comes from (loaded by
// each thread straight into its registers, or staged by the block in a shared-memory tile), so
// they promise the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "host_device.hpp"

// Fully unrolled on the device wherever a loop indexes a register array (a window, a thread's
// groups): an array indexed at run time would live in local memory.
#if defined(__CUDA_ARCH__)
#define CONVBENCH_CAUSAL_UNROLL _Pragma("unroll")
#else
#define CONVBENCH_CAUSAL_UNROLL
#endif

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
// a x 2^n for -126 <= n <= 127, the n exp_f32 passes: one multiply by the normal float 2^n, so
// correctly rounded -- ldexp's bits (Scale2IsLdexp), without the device ldexpf's handling of
// exponents outside that range (a dozen instructions per cell).
CONVBENCH_HD float scale2(float a, int n) {
  const uint32_t u = uint32_t(n + 127) << 23;
  float s;
  std::memcpy(&s, &u, 4);
  return mul(a, s);
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

// Whether sequence `seq` starts from its initial state (read only by the blocks at t = 0).
CONVBENCH_HD bool seq_has_state(const CausalParams &p, int64_t seq) {
  return p.initial_state && p.has_initial_state[seq] != 0;
}

// ---- what both kernels share: groups of four consecutive outputs ----
// A thread's unit of work is a group: outputs t .. t + 3 of one row (t a multiple of 4), computed
// from the window win[m] = xpad[t + m], m < K + 3: K - 1 halo values, then the group's own four x.
// Where rows are a multiple of 4 long and the buffers aligned (kVec), a group's x and y are one
// 16-byte vector each (8 bytes of bf16 y), and 32 lanes on consecutive groups move 512
// contiguous bytes; otherwise element by element, the last group of a row partial.
constexpr int kGroup = 4;
template <int K> constexpr int kWin = K - 1 + kGroup;

// Whether a launch can take the vector path: every group's x and y start 16 (bf16 y: 8) bytes
// aligned.
inline bool causal_vec(const CausalParams &p, bool bf16) {
  const uintptr_t ya = bf16 ? 8 : 16;
  return p.length % kGroup == 0 && reinterpret_cast<uintptr_t>(p.x) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(p.y) % ya == 0;
}

// 16-byte accesses: loads (LDG.128, or LDS.128 from the tile), the tile's cp.async copies and the
// y stores. The host emulation aborts where the device would fault on a misaligned vector, so CI
// sees bad vector index maths.
CONVBENCH_HD void check_aligned(const void *ptr, uintptr_t bytes) {
#if !defined(__CUDA_ARCH__)
  if (reinterpret_cast<uintptr_t>(ptr) % bytes != 0) {
    std::fprintf(stderr, "causal kernels: misaligned %d-byte vector access\n", int(bytes));
    std::abort();
  }
#else
  (void)ptr;
  (void)bytes;
#endif
}
CONVBENCH_HD void load4(const float *src, float (&v)[4]) {
#if defined(__CUDA_ARCH__)
  const float4 f = *reinterpret_cast<const float4 *>(src);
  v[0] = f.x;
  v[1] = f.y;
  v[2] = f.z;
  v[3] = f.w;
#else
  check_aligned(src, 16);
  for (int e = 0; e < 4; ++e)
    v[e] = src[e];
#endif
}
// One 16-byte copy global -> shared that holds no registers (cp.async, L2 only), or zeros where
// `in` is false (src-size 0: nothing is read). Each thread waits for its own copies (copy_wait)
// before the barrier that publishes the tile.
CONVBENCH_HD void copy16_async(float *dst, const float *src, bool in) {
#if defined(__CUDA_ARCH__)
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(in ? 16 : 0)
               : "memory");
#else
  check_aligned(dst, 16);
  float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (in)
    load4(src, v);
  for (int e = 0; e < 4; ++e)
    dst[e] = v[e];
#endif
}
CONVBENCH_HD void copy_wait() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
// The y stores are spelled in PTX, so that each stays one plain 16-byte (bf16: 8-byte) store: nvcc
// split a float4 assignment to y into four, and __stwb's is a strong (.STRONG.SM) store.
CONVBENCH_HD void store4_global(float *dst, const float (&v)[4]) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "f"(v[0]), "f"(v[1]),
               "f"(v[2]), "f"(v[3])
               : "memory");
#else
  check_aligned(dst, 16);
  for (int e = 0; e < 4; ++e)
    dst[e] = v[e];
#endif
}
CONVBENCH_HD void store4_global_bf16(uint16_t *dst, const float (&v)[4]) {
  uint16_t h[4];
  for (int e = 0; e < 4; ++e)
    h[e] = to_bf16(v[e]);
#if defined(__CUDA_ARCH__)
  asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(dst),
               "r"(uint32_t(h[0]) | uint32_t(h[1]) << 16),
               "r"(uint32_t(h[2]) | uint32_t(h[3]) << 16)
               : "memory");
#else
  check_aligned(dst, 8);
  for (int e = 0; e < 4; ++e)
    dst[e] = h[e];
#endif
}

// The group's four cells, each causal_cell over win[e .. e + K - 1].
template <int K, Fault F>
CONVBENCH_HD void group_cells(const float (&w)[K], const float (&win)[kWin<K>], float bias,
                              bool act, float (&out)[kGroup]) {
  CONVBENCH_CAUSAL_UNROLL
  for (int e = 0; e < kGroup; ++e) {
    float cw[K];
    for (int k = 0; k < K; ++k)
      cw[k] = win[e + k];
    out[e] = causal_cell<K, F>(w, cw, bias, act);
  }
}

// y[i .. i + n - 1] of a group (n < 4 only for a partial last group, element path).
template <bool kBf16, bool kVec>
CONVBENCH_HD void store_group(const CausalParams &p, int64_t i, int64_t n,
                              const float (&out)[kGroup]) {
  if constexpr (kVec) {
    if constexpr (kBf16)
      store4_global_bf16(static_cast<uint16_t *>(p.y) + i, out);
    else
      store4_global(static_cast<float *>(p.y) + i, out);
  } else {
    for (int e = 0; e < kGroup; ++e)
      if (e < n)
        store_y<kBf16>(p, i + e, out[e]);
  }
}

// win[idx] for an index known only at run time, by selects: a register array indexed at run
// time would live in local memory.
template <int N> CONVBENCH_HD float window_at(const float (&win)[N], int64_t idx) {
  float v = win[0];
  for (int m = 1; m < N; ++m)
    v = idx == m ? win[m] : v;
  return v;
}

// n / d for n < 2^31, by a multiply and a shift (Granlund-Montgomery, as PyTorch's IntDivider):
// the register kernel maps a flat group index to its channel once per group, where a hardware
// division would cost tens of instructions. Set up on the host; the emulation uses the same maths.
struct FastDiv {
  uint32_t d = 1, magic = 1, shift = 0;
};
inline FastDiv make_fast_div(uint32_t d) {
  FastDiv f;
  f.d = d;
  while (f.shift < 32 && (uint64_t(1) << f.shift) < d)
    ++f.shift;
  f.magic = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << f.shift) - d)) / d + 1);
  return f;
}
CONVBENCH_HD uint32_t fast_div(const FastDiv &f, uint32_t n) {
#if defined(__CUDA_ARCH__)
  const uint32_t t = __umulhi(n, f.magic);
#else
  const uint32_t t = uint32_t((uint64_t(n) * f.magic) >> 32);
#endif
  return (t + n) >> f.shift;
}

// ---- the register kernel: one thread per kRegGroups groups, its windows in registers ----
// The groups of a sequence are numbered flat, g = channel x per_row + t / 4 (rows back to back
// in memory, so consecutive g are consecutive 16 bytes of x and y even across rows). Lane l of
// warp w takes groups w x 32 x kRegGroups + 32 i + l: each load and store instruction of a warp
// covers 32 consecutive groups. A thread loads its whole window, halo included, from global
// memory into registers (the halo is the previous group's x, one more 16-byte load that the
// neighbouring lane's load has just brought into L1), then computes from registers alone.
constexpr int kRegGroups = 2;                // groups per thread, 32 groups apart
constexpr int kRegSeg = kGroup * kRegGroups; // outputs per thread
constexpr int kRegThreads = 128;             // threads per block

// gridDim = (blocks, batch); a sequence's groups must number below 2^31 (fast_div).
struct RegisterPlan {
  FastDiv per_row;     // groups per row, ceil(length / 4)
  uint32_t groups = 0; // groups per sequence, channels x per_row.d
  uint32_t blocks = 0; // blocks per sequence
};
inline bool register_plan_fits(const CausalParams &p) {
  return p.channels * ((p.length + kGroup - 1) / kGroup) < (int64_t(1) << 31);
}
inline RegisterPlan register_plan(const CausalParams &p) {
  RegisterPlan g;
  g.per_row = make_fast_div(uint32_t((p.length + kGroup - 1) / kGroup));
  g.groups = uint32_t(p.channels * g.per_row.d);
  const int64_t per_block = int64_t(kRegThreads) * kRegGroups;
  g.blocks = uint32_t((int64_t(g.groups) + per_block - 1) / per_block);
  return g;
}

// Where a group lies: channel c, position t = 4q, and `at`, the offset of x[row][t] (and of
// y[row][t]). On the vector path rows are a multiple of 4 long, so `at` is simply 4 x the flat
// group index past the sequence's start: no row x length products per group.
struct RegGroup {
  uint32_t c, q;
  int64_t at;
};

// Group `gr` of sequence `seq`: its window from global memory.
template <int K, bool kVec>
CONVBENCH_HD void register_window(const CausalParams &p, int64_t seq, const RegGroup &gr,
                                  float (&win)[kWin<K>]) {
  const float *xg = p.x + gr.at;
  if (gr.q > 0) { // halo xpad[t .. t + K - 2] = x[t - K + 1 .. t - 1], inside the row
    if constexpr (kVec) {
      float h[kGroup];
      load4(xg - kGroup, h);
      for (int m = 0; m < K - 1; ++m)
        win[m] = h[kGroup - (K - 1) + m];
    } else {
      for (int m = 0; m < K - 1; ++m)
        win[m] = xg[m - (K - 1)];
    }
  } else {
    const bool state = seq_has_state(p, seq);
    for (int m = 0; m < K - 1; ++m)
      win[m] = xpad<K>(p, seq * p.channels + gr.c, state, m);
  }
  if constexpr (kVec) {
    float v[kGroup];
    load4(xg, v);
    for (int e = 0; e < kGroup; ++e)
      win[K - 1 + e] = v[e];
  } else {
    const int64_t t = int64_t(gr.q) * kGroup;
    for (int e = 0; e < kGroup; ++e)
      win[K - 1 + e] = t + e < p.length ? xg[e] : 0.0f;
  }
}

// Thread `tid` (blockIdx.x x kRegThreads + threadIdx.x) of sequence `seq` (blockIdx.y). Every
// window is loaded before the first store, so all of the thread's loads are in flight at once.
template <int K, bool kBf16, bool kVec, Fault F = Fault::none>
CONVBENCH_HD void register_thread(const CausalParams &p, const RegisterPlan &g, int64_t seq,
                                  uint32_t tid) {
  const uint32_t first = tid / 32 * (32 * kRegGroups) + tid % 32;
  const int64_t seq_at = seq * p.channels * p.length;
  float win[kRegGroups][kWin<K>];
  RegGroup gr[kRegGroups];
  bool ok[kRegGroups];
  CONVBENCH_CAUSAL_UNROLL
  for (int i = 0; i < kRegGroups; ++i) {
    const uint32_t gi = first + 32 * uint32_t(i);
    ok[i] = gi < g.groups;
    gr[i].c = fast_div(g.per_row, gi);
    gr[i].q = gi - gr[i].c * g.per_row.d;
    gr[i].at = kVec ? seq_at + int64_t(gi) * kGroup
                    : (seq * p.channels + gr[i].c) * p.length + int64_t(gr[i].q) * kGroup;
    if (ok[i])
      register_window<K, kVec>(p, seq, gr[i], win[i]);
  }
  if (!ok[0])
    return;
  // The taps of the channel being computed: reloaded only where a thread's groups change row.
  float w[K], b;
  auto taps = [&](uint32_t c) {
    for (int k = 0; k < K; ++k)
      w[k] = p.w[int64_t(c) * K + k];
    b = p.bias ? p.bias[c] : 0.0f;
  };
  taps(gr[0].c);
  CONVBENCH_CAUSAL_UNROLL
  for (int i = 0; i < kRegGroups; ++i) {
    if (!ok[i])
      break;
    if (i > 0 && gr[i].c != gr[i - 1].c)
      taps(gr[i].c);
    float out[kGroup];
    group_cells<K, F>(w, win[i], b, p.silu, out);
    const int64_t t = int64_t(gr[i].q) * kGroup;
    store_group<kBf16, kVec>(p, gr[i].at, p.length - t, out);
    // The row's last group holds xpad[L .. L + K - 2] = win[L - t ..] (L - t = 4 on the vector
    // path) in registers: the final state, never read back from the state buffer.
    if (gr[i].q == g.per_row.d - 1) {
      float *fs = final_state_row<F>(p, seq * p.channels + gr[i].c, K - 1);
      for (int j = 0; j < K - 1; ++j)
        fs[j] = kVec ? win[i][kGroup + j] : window_at(win[i], p.length - t + j);
    }
  }
}

// ---- the tiled kernel: a block = G::kTileC channels x one chunk of G::kChunk positions ----
// Phase 1 stages the tile -- each row's x in 16-byte vectors plus its K - 1 halo values -- in
// shared memory; phase 2 (after the barrier) computes every group from the tile alone. Thread
// tid's groups are column j = 4 (tid % kRowGroups) of rows tid / kRowGroups + kRowStep i: each
// warp's accesses are contiguous runs of one or more rows, in global and in shared memory alike.
// The shape follows the rows' length (tile_shape): 8 x 512 for long rows (each warp 512
// contiguous bytes of a row) and 64 x 64 for rows of 17 to 64, four groups a thread; 64 x 16 for
// rows of 5 to 16 and 256 x 4 up to 4 (a decode step, L = 1), one group a thread, so that a
// decode step neither launches a block per 8 channels of which 511/512 of the positions are
// padding, nor leaves each working thread four groups in a row (the step is latency: every
// instruction a thread adds is on the critical path), nor launches three idle threads per row.
constexpr int kTiledThreads = 256;
constexpr int kHalo = 4; // slots before each tile row's x, so that x sits 16-byte aligned

template <int C, int Chunk> struct TileShape {
  static constexpr int kTileC = C;
  static constexpr int kChunk = Chunk;
  static constexpr int kRowGroups = kChunk / kGroup;
  static constexpr int kRowStep = kTiledThreads / kRowGroups; // rows between a thread's groups
  static constexpr int kGroups = kTileC / kRowStep;           // groups per thread
  static_assert(kTiledThreads % kRowGroups == 0 && kTileC % kRowStep == 0, "whole rows per pass");
};
using LongTile = TileShape<8, 512>;
using MidTile = TileShape<64, 64>;
using ShortTile = TileShape<64, 16>;
using DecodeTile = TileShape<256, 4>;
enum class TileKind { long_rows, mid_rows, short_rows, decode };

// The narrowest chunk that holds a whole row; rows longer than 64 take 512-position chunks.
inline TileKind tile_shape(int64_t length) {
  return length <= DecodeTile::kChunk  ? TileKind::decode
         : length <= ShortTile::kChunk ? TileKind::short_rows
         : length <= MidTile::kChunk   ? TileKind::mid_rows
                                       : TileKind::long_rows;
}
template <class G> void dims_of(int &tile_c, int &chunk) {
  tile_c = G::kTileC;
  chunk = G::kChunk;
}
// kTileC and kChunk of a kind, for the kernel's name.
inline void tile_dims(TileKind k, int &tile_c, int &chunk) {
  switch (k) {
  case TileKind::decode:
    return dims_of<DecodeTile>(tile_c, chunk);
  case TileKind::short_rows:
    return dims_of<ShortTile>(tile_c, chunk);
  case TileKind::mid_rows:
    return dims_of<MidTile>(tile_c, chunk);
  case TileKind::long_rows:
    return dims_of<LongTile>(tile_c, chunk);
  }
}

template <int K, class G> struct TiledSmem {
  static_assert(K - 1 <= kHalo, "the halo fits before the row");
  // x[r][kHalo - (K - 1) + u] = xpad[t0 + u] of tile row r (u < K - 1: the halo).
  alignas(16) float x[G::kTileC][kHalo + G::kChunk];
  float w[G::kTileC][K];
  float b[G::kTileC];
};

struct TiledBlock {
  int64_t chunk, tile, batch; // blockIdx.x, .y, .z
};

template <class G> CONVBENCH_HD int64_t tiled_chunks(const CausalParams &p) {
  return (p.length + G::kChunk - 1) / G::kChunk;
}
template <class G> CONVBENCH_HD int64_t tiled_tiles(const CausalParams &p) {
  return (p.channels + G::kTileC - 1) / G::kTileC;
}

// Where thread tid's groups lie: first tile row r0, column j, channel c0 of row r0, position t,
// and `at`, the offset of x[c0][t] (and y[c0][t]); row r0 + kRowStep i is `at` + i x `step`.
struct TiledLane {
  int r0, j;
  int64_t c0, t, at, step;
};
template <class G>
CONVBENCH_HD TiledLane tiled_lane(const CausalParams &p, const TiledBlock &blk, int tid) {
  TiledLane l;
  l.r0 = int(unsigned(tid) / G::kRowGroups);
  l.j = int(unsigned(tid) % G::kRowGroups) * kGroup;
  l.c0 = blk.tile * G::kTileC + l.r0;
  l.t = blk.chunk * G::kChunk + l.j;
  l.at = (blk.batch * p.channels + l.c0) * p.length + l.t;
  l.step = G::kRowStep * p.length;
  return l;
}

// Phase 1 (before the barrier): thread `tid` stages its share of the tile, coalesced along t
// (positions past the row's end staged as zeros, so every slot the compute reads is written).
// All of a thread's loads are issued before it waits for any (cp.async on the vector path). The
// halo, taps and bias take one pass of the block on the tiles of 8 and 64 rows, several on the
// 256-row decode tile.
template <int K, bool kVec, class G>
CONVBENCH_HD void tiled_stage(const CausalParams &p, const TiledBlock &blk, int tid,
                              TiledSmem<K, G> &sm) {
  constexpr int kG = G::kGroups, kStep = G::kRowStep;
  const int64_t t0 = blk.chunk * G::kChunk;
  const TiledLane l = tiled_lane<G>(p, blk, tid);
  if constexpr (kVec) {
    CONVBENCH_CAUSAL_UNROLL
    for (int i = 0; i < kG; ++i) {
      const bool in = l.c0 + kStep * i < p.channels && l.t < p.length;
      copy16_async(&sm.x[l.r0 + kStep * i][kHalo + l.j], in ? p.x + l.at + i * l.step : p.x, in);
    }
  } else {
    // The same rows element by element: thread tid takes columns j + e, e < 4, of each.
    float v[kG][kGroup];
    CONVBENCH_CAUSAL_UNROLL
    for (int i = 0; i < kG; ++i)
      for (int e = 0; e < kGroup; ++e) {
        const bool in = l.c0 + kStep * i < p.channels && l.t + e < p.length;
        v[i][e] = in ? p.x[l.at + i * l.step + e] : 0.0f;
      }
    CONVBENCH_CAUSAL_UNROLL
    for (int i = 0; i < kG; ++i)
      for (int e = 0; e < kGroup; ++e)
        sm.x[l.r0 + kStep * i][kHalo + l.j + e] = v[i][e];
  }
  // xpad[t0 .. t0 + K - 2] of each row (the state at t0 = 0), the taps and the bias: every load
  // of the thread issued before its first store, as for x (on the decode tile a thread has
  // several of each, and loads one after another would each wait their full latency).
  constexpr int kHaloN = G::kTileC * (K - 1), kTapN = G::kTileC * K;
  constexpr int kHaloIt = (kHaloN + kTiledThreads - 1) / kTiledThreads;
  constexpr int kTapIt = (kTapN + kTiledThreads - 1) / kTiledThreads;
  constexpr int kBiasIt = (G::kTileC + kTiledThreads - 1) / kTiledThreads;
  const bool state = t0 == 0 && seq_has_state(p, blk.batch);
  const int64_t c0 = blk.tile * G::kTileC;
  float halo[kHaloIt], taps[kTapIt], bias[kBiasIt];
  CONVBENCH_CAUSAL_UNROLL
  for (int i = 0; i < kHaloIt; ++i) {
    const int u = tid + i * kTiledThreads, r = u / (K - 1), m = u % (K - 1);
    const bool in = u < kHaloN && c0 + r < p.channels;
    halo[i] = in ? xpad<K>(p, blk.batch * p.channels + c0 + r, state, t0 + m) : 0.0f;
  }
  CONVBENCH_CAUSAL_UNROLL
  for (int i = 0; i < kTapIt; ++i) {
    const int u = tid + i * kTiledThreads;
    taps[i] = u < kTapN && c0 + u / K < p.channels ? p.w[(c0 + u / K) * K + u % K] : 0.0f;
  }
  CONVBENCH_CAUSAL_UNROLL
  for (int i = 0; i < kBiasIt; ++i) {
    const int u = tid + i * kTiledThreads;
    bias[i] = p.bias && u < G::kTileC && c0 + u < p.channels ? p.bias[c0 + u] : 0.0f;
  }
  CONVBENCH_CAUSAL_UNROLL
  for (int i = 0; i < kHaloIt; ++i) {
    const int u = tid + i * kTiledThreads;
    if (u < kHaloN && c0 + u / (K - 1) < p.channels)
      sm.x[u / (K - 1)][kHalo - (K - 1) + u % (K - 1)] = halo[i];
  }
  CONVBENCH_CAUSAL_UNROLL
  for (int i = 0; i < kTapIt; ++i) {
    const int u = tid + i * kTiledThreads;
    if (u < kTapN && c0 + u / K < p.channels)
      sm.w[u / K][u % K] = taps[i];
  }
  CONVBENCH_CAUSAL_UNROLL
  for (int i = 0; i < kBiasIt; ++i) {
    const int u = tid + i * kTiledThreads;
    if (u < G::kTileC && c0 + u < p.channels)
      sm.b[u] = bias[i];
  }
  copy_wait();
}

// Phase 2 (after the barrier): thread `tid` computes its groups, each window from two 16-byte
// reads of its tile row; the block of the last chunk also writes the final state, from the tile
// it staged (never from the state buffer another block reads).
template <int K, bool kBf16, bool kVec, Fault F, class G>
CONVBENCH_HD void tiled_compute(const CausalParams &p, const TiledBlock &blk, int tid,
                                const TiledSmem<K, G> &sm) {
  const int64_t t0 = blk.chunk * G::kChunk;
  const TiledLane l = tiled_lane<G>(p, blk, tid);
  // The thread's rows r0, r0 + kRowStep, ... that are channels (none past the row's end), walked
  // by running offsets.
  int n = 0;
  for (int i = 0; i < G::kGroups; ++i)
    if (l.t < p.length && l.c0 + G::kRowStep * i < p.channels)
      n = i + 1;
  int64_t at = l.at;
  for (int i = 0, r = l.r0; i < n; ++i, r += G::kRowStep, at += l.step) {
    // Slots j + 4 - (K - 1) .. j + 7 of the row are xpad[t .. t + K + 2].
    float lo[kGroup], hi[kGroup], win[kWin<K>], w[K];
    load4(&sm.x[r][l.j], lo);
    load4(&sm.x[r][l.j + kGroup], hi);
    for (int m = 0; m < K - 1; ++m)
      win[m] = lo[kGroup - (K - 1) + m];
    for (int e = 0; e < kGroup; ++e)
      win[K - 1 + e] = hi[e];
    for (int k = 0; k < K; ++k)
      w[k] = sm.w[r][k];
    float out[kGroup];
    group_cells<K, F>(w, win, sm.b[r], p.silu, out);
    store_group<kBf16, kVec>(p, at, p.length - l.t, out);
  }
  if (t0 + G::kChunk < p.length)
    return;
  for (int u = tid; u < G::kTileC * (K - 1); u += kTiledThreads) {
    const int r = u / (K - 1), j = u % (K - 1);
    const int64_t c = blk.tile * G::kTileC + r;
    if (c < p.channels)
      final_state_row<F>(p, blk.batch * p.channels + c, K - 1)[j] =
          sm.x[r][kHalo - (K - 1) + (p.length - t0) + j];
  }
}

} // namespace convbench::causal_detail
