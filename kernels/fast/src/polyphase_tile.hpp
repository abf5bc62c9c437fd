// The polyphase tile of the fast transposed-conv kernels, written once for the device kernel and
// for the host emulation test (tests/fast_emulation_test.cpp), so the index arithmetic that the
// H200 runs is also checked here, on a machine without a GPU.
//
// Index mapping: the polyphase view of kernels/src/polyphase.hpp (dilation 1, K = M * s taps;
// phase r's taps k = j*s + r read t = q - j; cell u = q - c_r). c_r takes two values: c+1 for
// r < pad % s, c for r >= pad % s. A block (and every thread in it) owns TR consecutive phases
// that share one c_r (TR divides s and pad % s), so one x window serves all of the thread's
// phases.
//
// Thread block (Config below; the default is 64 threads): kOg oc-groups x kUg u-groups. A thread
// owns TM oc x TR phases x kTn consecutive u (TM * TR == Rows, 4 or 8; 16 cells by default). Per
// input-channel chunk of kBk channels the block stages the weights w[ic, oc0.., j*s + r0 ..] and
// the x window into shared memory (f64 kernel: converted to double once there, since f32->f64
// conversions run at 1/4 of the DFMA rate).
//
// f64 order (the byte-identity contract): per cell, ic ascending (chunks ascending, channels
// ascending within a chunk), then t ascending, i.e. j DESCENDING since t = q - j; x == 0 skipped;
// bias added last. fma(x, w, acc) equals __dadd_rn(acc, __dmul_rn(x, w)) bit for bit here: x and
// w are f32 values, so their product has at most 48 significant bits and lies far inside the
// double exponent range: it is exact in double, and rounding acc + exact product once is what
// the reference's add does. Out-of-range taps and padding channels stage x = 0 and add nothing.
// The x == 0 skip is explicit (compute<true>) only for chunks holding a non-finite weight; with
// finite weights it cannot change a bit (see nonfinite_weights), so the hot loop has no branch.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "async_copy.hpp"
#include "polyphase.hpp"

#ifdef __CUDA_ARCH__
#define CB_UNROLL _Pragma("unroll")
#else
#define CB_UNROLL
#endif

namespace convbench::fast::detail {

// The block shape, a compile-time configuration (configs.hpp): Threads = kOg oc-groups x kUg
// u-groups; each thread owns Rows (oc, phase) rows (TM oc x TR phases, TM * TR == Rows, 4 or 8)
// x Tn consecutive u, i.e. Rows * Tn cells; Bk input channels per shared-memory chunk. The block
// shape never changes the per-cell addition order (chunks ascending, channels ascending inside a
// chunk = ic ascending), so every configuration keeps the f64 byte-identity contract.
// MinBlocks: resident blocks per SM asked of ptxas through __launch_bounds__ (it caps the
// registers per thread at 65536 / (Threads * MinBlocks)); 1 leaves ptxas free.
//
// RowMajor picks how a thread id maps to its (oc-group, u-group). Row-major (the first layout):
// ug = tid % kUg, so a warp holds 16-32 consecutive u-groups of one or two oc-groups, and every
// 16-byte read of the x window in compute() is a different address per lane: 3 shared-memory
// wavefronts per read at 24 u-groups (f32), up to 6 in f64. Warp tiles (the default since session
// 4, as GEMM kernels lay out their warps): a warp is kWarpU u-groups x kWarpO oc-groups, so its x
// reads span kWarpU lanes' windows (f32, Tn = 4: 128 contiguous bytes, one wavefront) and its
// weight reads kWarpO oc-groups (one wavefront), each value shared by the other lanes through
// the broadcast. Which thread computes a cell never changes how the cell is computed.
//
// Buffers (f32 only): 0 moves each chunk through registers into two shared-memory
// buffers (the f64 kernels must: they convert to double on the way); >= 2 copies global ->
// shared memory with cp.async into that many buffers, Buffers - 1 chunks in flight ahead of the
// one being computed, so the copy holds no registers and costs one instruction per element.
template <int Threads, int UGroups, int Tn, int Bk, int Rows = 4, int MinBlocks = 1,
          bool RowMajor = false, int Buffers = 0>
struct Config {
  static constexpr int kThreads = Threads;
  static constexpr int kUg = UGroups; // u-groups per block
  static constexpr int kTn = Tn;      // consecutive u per thread
  static constexpr int kBk = Bk;      // input channels per shared-memory chunk
  static constexpr int kRows = Rows;  // (oc, phase) rows per thread
  static constexpr int kMinBlocks = MinBlocks;
  static constexpr int kBu = kTn * kUg;      // u per block
  static constexpr int kOg = kThreads / kUg; // oc-groups per block
  static constexpr int kXw = kBu + 4; // x window row: kBu + M - 1 <= kBu + 3, padded for float4
  // A thread reads its x values per channel as aligned kVec-vectors: 4 (16 bytes in f32), or 2
  // where it owns 2 consecutive u (Tn == 2: ug * 2 values from the row start is only
  // 8-byte aligned in f32). kXr values in all (kTn + M - 1 of them used).
  static constexpr int kVec = Tn % 4 == 0 ? 4 : 2;
  static constexpr int kXr = kTn + 4;
  static constexpr int kCells = kRows * kTn; // cells per thread
  static constexpr bool kRowMajor = RowMajor;
  static constexpr int kBuffers = Buffers;
  // Warp tile: u-groups along a warp's lanes (8 where the block allows, else 16 or 4; 0: none
  // fits, row-major), and oc-groups across them.
  static constexpr int kWarpU = RowMajor || kThreads % 32 != 0    ? 0
                                : (kUg % 8 == 0 && kOg % 4 == 0)  ? 8
                                : (kUg % 16 == 0 && kOg % 2 == 0) ? 16
                                : (kUg % 4 == 0 && kOg % 8 == 0)  ? 4
                                                                  : 0;
  static constexpr int kWarpO = kWarpU ? 32 / kWarpU : 0;
  // The u-group and oc-group of thread tid (a bijection of [0, kThreads) onto kUg x kOg).
  CONVBENCH_HD static int ug_of(int tid) {
    if constexpr (kWarpU == 0)
      return tid % kUg;
    else
      return (tid / 32) % (kUg / kWarpU) * kWarpU + tid % kWarpU;
  }
  CONVBENCH_HD static int og_of(int tid) {
    if constexpr (kWarpU == 0)
      return tid / kUg;
    else
      return (tid / 32) / (kUg / kWarpU) * kWarpO + (tid % 32) / kWarpU;
  }
  static_assert(kThreads % kUg == 0, "u-groups divide the block");
  static_assert(kRows == 4 || kRows == 8, "rows per thread");
  static_assert(kUg % kRows == 0,
                "weight rows (Rows * kOg elements) split evenly over the threads");
  static_assert(kTn % 4 == 0 || kTn == 2, "a thread's x window is read as aligned 4- or 2-vectors");
  static_assert(kBuffers == 0 || kBuffers >= 2, "cp.async copies need two buffers or more");
};

// Today's block (the default that launch_conv runs): 64 threads = 8 oc-groups x 8 u-groups, 16
// cells per thread, 16 channels per chunk. Small blocks on purpose: up0 at 96 frames has only
// ~590k output cells; 64-thread blocks give 576 blocks for 132 SMs.
using DefaultConfig = Config<64, 8, 4, 16>;
constexpr int kThreads = DefaultConfig::kThreads;
constexpr int kTn = DefaultConfig::kTn;
constexpr int kUg = DefaultConfig::kUg;
constexpr int kBu = DefaultConfig::kBu;
constexpr int kOg = DefaultConfig::kOg;
constexpr int kBk = DefaultConfig::kBk;

// Everything the kernel needs about the shape, computed once on the host.
struct Plan : polyphase::Geometry {
  int split;        // input-channel ranges per cluster (f32 only; 1 = no split)
  int64_t chunks;   // channel chunks of the block's Bk
  int tr;           // phases per thread (and per block)
  int groups;       // s / tr phase groups
  int64_t u_tiles;  // blocks along u
  int64_t oc_tiles; // blocks along oc
};

CONVBENCH_HD double add_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b; // host code is compiled with -ffp-contract=off
#endif
}
CONVBENCH_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
CONVBENCH_HD double mul_rn(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
CONVBENCH_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
CONVBENCH_HD double fma_rn(double a, double b, double c) {
#ifdef __CUDA_ARCH__
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
CONVBENCH_HD float fma_rn(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// Four consecutive shared-memory values; p is 16-byte aligned for float, 32-byte for double.
CONVBENCH_HD void load4(const float *p, float (&v)[4]) {
#ifdef __CUDA_ARCH__
  const float4 q = *reinterpret_cast<const float4 *>(p);
  v[0] = q.x;
  v[1] = q.y;
  v[2] = q.z;
  v[3] = q.w;
#else
  for (int i = 0; i < 4; ++i)
    v[i] = p[i];
#endif
}
CONVBENCH_HD void load4(const double *p, double (&v)[4]) {
#ifdef __CUDA_ARCH__
  const double2 a = *reinterpret_cast<const double2 *>(p);
  const double2 b = *reinterpret_cast<const double2 *>(p + 2);
  v[0] = a.x;
  v[1] = a.y;
  v[2] = b.x;
  v[3] = b.y;
#else
  for (int i = 0; i < 4; ++i)
    v[i] = p[i];
#endif
}

// Two consecutive shared-memory values (T = float or double); p is 8-byte aligned for float,
// 16-byte for double.
template <typename T> CONVBENCH_HD void load2(const T *p, T (&v)[2]) {
#ifdef __CUDA_ARCH__
  using V2 = std::conditional_t<sizeof(T) == sizeof(float), float2, double2>;
  const V2 q = *reinterpret_cast<const V2 *>(p);
  v[0] = q.x;
  v[1] = q.y;
#else
  v[0] = p[0];
  v[1] = p[1];
#endif
}

// Fused: each tap is one fma (the f32 arm, and the cuda-f64-fma arm); not fused: __dmul_rn then
// __dadd_rn, two fp64 instructions per tap (the cuda-f64 arm as its users specify it, whose
// counters must show zero DFMA). Both give the same bits for f32 operands (see above).
template <typename T, int M, int TR, bool Fused = true, class C = DefaultConfig> struct Tile {
  static_assert(M >= 1 && M <= 4, "taps per phase");
  // The block shape of this instantiation (these shadow the DefaultConfig names above).
  using Cfg = C;
  using Value = T; // the accumulator type
  static constexpr int kThreads = C::kThreads;
  static constexpr int kTn = C::kTn;
  static constexpr int kUg = C::kUg;
  static constexpr int kBu = C::kBu;
  static constexpr int kOg = C::kOg;
  static constexpr int kBk = C::kBk;
  static constexpr int kXw = C::kXw;
  static constexpr int kXr = C::kXr;
  static constexpr int kRows = C::kRows;
  static constexpr int kCells = C::kCells;
  static_assert(TR == 1 || TR == 2 || TR == 4, "phases per thread");
  static constexpr int TM = kRows / TR;            // oc per thread
  static constexpr int BO = kOg * TM;              // oc per block
  static constexpr int kWTile = kBk * M * BO * TR; // layout [ic][j][oc][rr], rr fastest
  static constexpr int kXTile = kBk * kXw;         // layout [ic][n]
  static constexpr int kWPt = kWTile / kThreads;
  static constexpr int kXPt = (kXTile + kThreads - 1) / kThreads;
  static_assert(kWTile % kThreads == 0, "weight tile splits evenly over the threads");

  struct Smem {
    alignas(16) T w[kWTile];
    alignas(16) T x[kXTile];
  };
  struct Loads { // one chunk's global loads, held in registers while the previous chunk computes
    float w[kWPt];
    float x[kXPt];
  };
  struct Acc {
    T v[TM][TR][kTn];
  };
  struct Block {
    int64_t b, oc0, u0, t_base;
    int64_t r0, c;
    int64_t chunk0, chunk1; // this block's channel chunks [chunk0, chunk1): its split's range
    int sp;                 // split index (the block's rank in its cluster)
  };

  CONVBENCH_HD static Block block_coords(const Plan &P, int64_t bx, int64_t by, int64_t bz) {
    Block k;
    const int64_t g = bx / P.u_tiles;
    k.u0 = (bx % P.u_tiles) * kBu;
    k.r0 = g * TR;
    k.c = polyphase::phase_first(P.pad, P.s, k.r0); // shared by the TR phases from r0
    k.oc0 = by * BO;
    k.b = bz / P.split;
    k.sp = static_cast<int>(bz % P.split);
    k.chunk0 = k.sp * P.chunks / P.split;
    k.chunk1 = (k.sp + 1) * P.chunks / P.split;
    k.t_base = k.u0 + k.c - (M - 1); // x index held at window column 0
    return k;
  }

  CONVBENCH_HD static void zero(Acc &a) {
    CB_UNROLL
    for (int tm = 0; tm < TM; ++tm)
      CB_UNROLL
    for (int rr = 0; rr < TR; ++rr)
      CB_UNROLL
    for (int n = 0; n < kTn; ++n)
      a.v[tm][rr][n] = T(0);
  }

  // Global -> registers for the chunk starting at channel ic0. Zero outside the tensors.
  // Offsets are int: make_plan() refuses tensors of 2^31 elements or more.
  // Weight element e = tid + i*kThreads of the tile is (ii, j, ol, rr) with rr fastest; since
  // kThreads is a multiple of TR*BO (= 4 * kOg), ol and rr are fixed per thread and (ii*M + j) =
  // tid/(TR*BO) + kRowStep*i.
  CONVBENCH_HD static void load_global(const Plan &P, const Block &k, int64_t ic0, int tid,
                                       const float *x, const float *w, Loads &st) {
    static_assert(kThreads % (TR * BO) == 0, "weight rows split evenly");
    constexpr int kRowStep = kThreads / (TR * BO);
    const int rr = tid % TR;
    const int ol = (tid / TR) % BO;
    const int jj0 = tid / (TR * BO);
    const int left = static_cast<int>(P.cin - ic0); // channels left in this chunk (> 0)
    const int row = static_cast<int>(P.cout * P.k); // elements per input channel of w
    const bool oc_ok = k.oc0 + ol < P.cout;
    const float *wp = w + (ic0 * P.cout + k.oc0 + ol) * P.k + k.r0 + rr;
    CB_UNROLL
    for (int i = 0; i < kWPt; ++i) {
      const int jj = jj0 + kRowStep * i;
      const int ii = jj / M;
      const int j = jj % M;
      st.w[i] = (oc_ok && ii < left) ? wp[ii * row + j * static_cast<int>(P.s)] : 0.0f;
    }
    const int l_in = static_cast<int>(P.l_in);
    const float *xp = x + (k.b * P.cin + ic0) * P.l_in;
    const int t0 = static_cast<int>(k.t_base);
    CB_UNROLL
    for (int i = 0; i < kXPt; ++i) {
      const int e = tid + i * kThreads;
      const int ii = e / kXw;
      const int t = t0 + e % kXw;
      const bool in = e < kXTile && ii < left && t >= 0 && t < l_in;
      st.x[i] = in ? xp[ii * l_in + t] : 0.0f;
    }
  }

  // The staging addresses of one thread, fixed for the block: computed once, so that a full
  // chunk's loads cost an add and a load each. (Computed per element, per chunk, the integer index
  // math, bounds predicates and Plan fields re-read took a large share of the issued
  // instructions outside the multiply-add loop.)
  static constexpr int kRowStep = kThreads / (TR * BO); // weight rows (ii*M + j) per element step
  // With kRowStep a multiple of M, a thread's j is fixed and ii advances by kRowStep / M.
  static constexpr bool kAffineW = kRowStep % M == 0;
  struct WeightCursor {
    int w_off; // element 0's offset from the chunk's first weight (ic0, 0, 0)
    bool w_ok; // the thread's oc exists
    int w_ii0; // element 0's channel within the chunk
  };
  struct Cursor : WeightCursor {
    int x_off[kXPt]; // element i's offset from the chunk's first x row; -1: outside (stage 0)
    int x_ii[kXPt];  // element i's channel within the chunk (for the last, partial chunk)
  };
  CONVBENCH_HD static WeightCursor make_weight_cursor(const Plan &P, const Block &k, int tid) {
    WeightCursor c;
    const int rr = tid % TR;
    const int ol = (tid / TR) % BO;
    const int jj0 = tid / (TR * BO);
    const int row = static_cast<int>(P.cout * P.k);
    c.w_ok = k.oc0 + ol < P.cout;
    c.w_ii0 = jj0 / M;
    c.w_off = static_cast<int>((k.oc0 + ol) * P.k + k.r0 + rr) + (jj0 / M) * row +
              (jj0 % M) * static_cast<int>(P.s);
    return c;
  }
  CONVBENCH_HD static Cursor make_cursor(const Plan &P, const Block &k, int tid) {
    Cursor c;
    static_cast<WeightCursor &>(c) = make_weight_cursor(P, k, tid);
    const int l_in = static_cast<int>(P.l_in);
    const int t0 = static_cast<int>(k.t_base);
    CB_UNROLL
    for (int i = 0; i < kXPt; ++i) {
      const int e = tid + i * kThreads;
      const int ii = e / kXw;
      const int t = t0 + e % kXw;
      c.x_ii[i] = e < kXTile ? ii : kBk; // kBk: never a valid channel
      // ii < cin keeps ii * l_in inside 32 bits (make_plan: cin * l_in < 2^31).
      c.x_off[i] = (e < kXTile && ii < P.cin && t >= 0 && t < l_in) ? ii * l_in + t : -1;
    }
    return c;
  }

  // Global -> registers for the chunk starting at channel ic0, through the cursor; the same
  // values as load_global (which it falls back to when the weights are not affine in i).
  CONVBENCH_HD static void load_chunk(const Plan &P, const Block &k, const Cursor &c, int64_t ic0,
                                      int tid, const float *x, const float *w, Loads &st) {
    if constexpr (!kAffineW) {
      load_global(P, k, ic0, tid, x, w, st);
    } else {
      const int left = static_cast<int>(P.cin - ic0); // channels left (> 0)
      const int row = static_cast<int>(P.cout * P.k);
      const float *wp = w + ic0 * P.cout * P.k;
      const float *xp = x + (k.b * P.cin + ic0) * P.l_in;
      if (left >= kBk) { // a full chunk: no channel bound
        CB_UNROLL
        for (int i = 0; i < kWPt; ++i)
          st.w[i] = c.w_ok ? wp[c.w_off + i * (kRowStep / M) * row] : 0.0f;
        CB_UNROLL
        for (int i = 0; i < kXPt; ++i)
          st.x[i] = c.x_off[i] >= 0 ? xp[c.x_off[i]] : 0.0f;
      } else {
        CB_UNROLL
        for (int i = 0; i < kWPt; ++i)
          st.w[i] = (c.w_ok && c.w_ii0 + i * (kRowStep / M) < left)
                        ? wp[c.w_off + i * (kRowStep / M) * row]
                        : 0.0f;
        CB_UNROLL
        for (int i = 0; i < kXPt; ++i)
          st.x[i] = (c.x_off[i] >= 0 && c.x_ii[i] < left) ? xp[c.x_off[i]] : 0.0f;
      }
    }
  }

  // cp.async copies (f32, kBuffers > 0): the same elements and zeros as load_chunk +
  // store_smem, with the x window cut so that a thread's addresses are affine in its element
  // index (the register cursor's per-element offsets, 2 x 9 registers at 16 channels a chunk,
  // spilled the 128 x 128 tile at its 128-register cap): the first kBu columns as rows of the
  // block's threads (thread tid owns column tid % kBu of rows tid / kBu + i * kXRowStep), the 4
  // columns past them (the M - 1 taps' overlap, padded) one element per thread.
  static constexpr int kXRowStep = kThreads / kBu; // x rows per element step
  static constexpr int kXMain = kBk / kXRowStep;   // main x elements per thread
  static constexpr int kXEdge = kBk * (kXw - kBu); // edge x elements per block
  static constexpr int kXEdgePt = (kXEdge + kThreads - 1) / kThreads;
  // The cp.async schedule (kBuffers buffers) of a block's n chunks, written once for the kernel
  // and its emulation: s.copy(i, b) copies the block's i-th chunk into buffer b, s.wait_for(i)
  // is the barrier after which chunk i is in shared memory for every thread (and every thread
  // is done with chunk i - 1), s.compute(b) runs the multiply-adds of buffer b. Chunk i lives in
  // buffer i % kBuffers; while it computes, chunk i + kBuffers - 1 is in flight into the buffer
  // chunk i - 1 was computed from. On the device every iteration commits one copy group, empty
  // past the last chunk, so that wait_for(i) = "all but kBuffers - 2 groups done".
  template <class S> CONVBENCH_HD static void async_schedule(int n, S &&s) {
    constexpr int NS = C::kBuffers;
    static_assert(NS >= 2, "a cp.async config");
    CB_UNROLL
    for (int i = 0; i < NS - 1; ++i)
      s.copy(i, i, i < n);
    for (int i = 0; i < n; ++i) {
      s.wait_for(i);
      const int ahead = i + NS - 1;
      s.copy(ahead, ahead % NS, ahead < n);
      s.compute(i % NS);
    }
  }
  static constexpr int kNoRow = 1 << 30; // never below a chunk's channels left
  struct AsyncCursor : WeightCursor {
    int x_row0;          // the thread's first main row
    int x_off;           // its first main element's offset from the chunk's first x row
    bool x_ok;           // its column's t is inside [0, l_in)
    int x_step;          // offset from one of its main elements to the next (kXRowStep rows)
    int e_row[kXEdgePt]; // edge element i's row; kNoRow: none, or its t outside [0, l_in)
    int e_off[kXEdgePt]; // its offset from the chunk's first x row
  };
  // Offsets are int: fast_config_unsupported_reason() refuses these configs when
  // max(cin, chunk) * l_in reaches 2^31.
  CONVBENCH_HD static AsyncCursor make_async_cursor(const Plan &P, const Block &k, int tid) {
    static_assert(kThreads % kBu == 0 && kBk % kXRowStep == 0,
                  "the x window's main columns split into whole rows of the block's threads");
    AsyncCursor c;
    static_cast<WeightCursor &>(c) = make_weight_cursor(P, k, tid);
    if (!c.w_ok) // oc outside cout: its copies (zeros) point at oc 0 of the same channels
      c.w_off = c.w_ii0 * static_cast<int>(P.cout * P.k);
    const int l_in = static_cast<int>(P.l_in);
    const int t0 = static_cast<int>(k.t_base);
    const int col = tid % kBu;
    c.x_row0 = tid / kBu;
    c.x_ok = t0 + col >= 0 && t0 + col < l_in;
    c.x_off = c.x_row0 * l_in + (c.x_ok ? t0 + col : 0); // outside: column 0 of its row
    c.x_step = kXRowStep * l_in;
    CB_UNROLL
    for (int i = 0; i < kXEdgePt; ++i) {
      const int e = tid + i * kThreads;
      const int t = t0 + kBu + e % (kXw - kBu); // >= 0: t0 >= -3 and kBu >= 32
      const bool in = e < kXEdge && t < l_in;
      c.e_row[i] = in ? e / (kXw - kBu) : kNoRow;
      c.e_off[i] = in ? (e / (kXw - kBu)) * l_in + t : 0;
    }
    return c;
  }

  // A full chunk (kBk channels left) takes the bounds the cursor fixed for the block: each copy
  // is one pointer step and one cp.async. The cursor clamps the offsets of a thread's elements
  // outside the tensors to valid addresses (they copy zeros), so no address is ever invalid;
  // the last, partial chunk selects a valid address per element.
  CONVBENCH_HD static void copy_chunk_async(const Plan &P, const Block &k, const AsyncCursor &c,
                                            int64_t ic0, int tid, const float *x, const float *w,
                                            Smem &sm) {
    static_assert(sizeof(T) == sizeof(float), "cp.async copies f32 as it is: f32 kernels only");
    static_assert(kAffineW, "cp.async staging needs the cursor's affine weight offsets");
    const int left = static_cast<int>(P.cin - ic0); // channels left (> 0)
    const int w_step = (kRowStep / M) * static_cast<int>(P.cout * P.k);
    const float *wq = w + ic0 * P.cout * P.k + c.w_off;
    const float *xp = x + (k.b * P.cin + ic0) * P.l_in;
    const float *xq = xp + c.x_off;
    const int col = tid % kBu;
    if (left >= kBk) { // pointers stepped, not recomputed: two integer adds per copy
      const float *p = wq;
      CB_UNROLL
      for (int i = 0; i < kWPt; ++i, p += w_step)
        copy4_async(&sm.w[tid + i * kThreads], p, c.w_ok);
      p = xq;
      CB_UNROLL
      for (int i = 0; i < kXMain; ++i, p += c.x_step)
        copy4_async(&sm.x[(c.x_row0 + i * kXRowStep) * kXw + col], p, c.x_ok);
    } else {
      CB_UNROLL
      for (int i = 0; i < kWPt; ++i) {
        const bool ok = c.w_ok && c.w_ii0 + i * (kRowStep / M) < left;
        copy4_async(&sm.w[tid + i * kThreads], ok ? wq + i * w_step : w, ok);
      }
      CB_UNROLL
      for (int i = 0; i < kXMain; ++i) {
        const int r = c.x_row0 + i * kXRowStep;
        const bool ok = c.x_ok && r < left;
        copy4_async(&sm.x[r * kXw + col], ok ? xq + i * c.x_step : x, ok);
      }
    }
    CB_UNROLL
    for (int i = 0; i < kXEdgePt; ++i) {
      const int e = tid + i * kThreads;
      if (e < kXEdge) {
        const bool ok = c.e_row[i] < left; // never for kNoRow
        copy4_async(&sm.x[(e / (kXw - kBu)) * kXw + kBu + e % (kXw - kBu)],
                    ok ? xp + c.e_off[i] : x, ok);
      }
    }
  }

  CONVBENCH_HD static void store_smem(int tid, const Loads &st, Smem &sm) {
    CB_UNROLL
    for (int i = 0; i < kWPt; ++i)
      sm.w[tid + i * kThreads] = T(st.w[i]);
    CB_UNROLL
    for (int i = 0; i < kXPt; ++i) {
      const int e = tid + i * kThreads;
      if (e < kXTile)
        sm.x[e] = T(st.x[i]);
    }
  }

  // True when a weight this thread staged is inf or NaN. Only then can the reference's skip of
  // x == 0 change a bit: with finite w, 0 * w is +-0, and adding +-0 leaves any accumulator
  // that is not -0.0 unchanged -- and ours never is -0.0 (it starts at +0.0, and a round-to-
  // nearest sum is -0.0 only when both addends are). The block ORs this over its threads and
  // runs the branch-free compute<false> for all-finite chunks.
  CONVBENCH_HD static bool nonfinite_weights(const Loads &st) {
    bool any = false;
    CB_UNROLL
    for (int i = 0; i < kWPt; ++i)
      any |= !(st.w[i] - st.w[i] == 0.0f); // inf - inf and NaN - NaN are NaN
    return any;
  }

  // One chunk of kBk channels into the thread's kRows * kTn accumulators. Skip: the reference's
  // "x == 0 adds nothing" made explicit (needed only with non-finite weights, see above).
  template <bool Skip> CONVBENCH_HD static void compute(int tid, const Smem &sm, Acc &a) {
    const int ug = C::ug_of(tid);
    const int og = C::og_of(tid);
#ifdef __CUDA_ARCH__
#pragma unroll 4
#endif
    for (int ii = 0; ii < kBk; ++ii) {
      T xr[kXr];
      constexpr int V = C::kVec;
      CB_UNROLL
      for (int v = 0; v < kXr / V; ++v) {
        T q[V];
        if constexpr (V == 4)
          load4(&sm.x[ii * kXw + ug * kTn + 4 * v], q);
        else
          load2(&sm.x[ii * kXw + ug * kTn + 2 * v], q);
        CB_UNROLL
        for (int i = 0; i < V; ++i)
          xr[V * v + i] = q[i];
      }
      T wr[M][kRows];
      CB_UNROLL
      for (int j = 0; j < M; ++j)
        CB_UNROLL
      for (int q = 0; q < kRows / 4; ++q) {
        T v[4];
        load4(&sm.w[((ii * M + j) * BO + og * TM) * TR + 4 * q], v);
        CB_UNROLL
        for (int i = 0; i < 4; ++i)
          wr[j][4 * q + i] = v[i];
      }
      // t ascending == j descending: the reference's per-cell order.
      CB_UNROLL
      for (int j = M - 1; j >= 0; --j) {
        CB_UNROLL
        for (int n = 0; n < kTn; ++n) {
          // cell u = u0 + ug*kTn + n reads t = u + c - j: window column ug*kTn + n + M-1-j
          const T xv = xr[n + M - 1 - j];
          if (Skip && xv == T(0))
            continue; // the reference's skip
          CB_UNROLL
          for (int tm = 0; tm < TM; ++tm)
            CB_UNROLL
          for (int rr = 0; rr < TR; ++rr)
            a.v[tm][rr][n] = Fused ? fma_rn(xv, wr[j][tm * TR + rr], a.v[tm][rr][n])
                                   : add_rn(a.v[tm][rr][n], mul_rn(xv, wr[j][tm * TR + rr]));
        }
      }
    }
  }

  // One finished cell (tm, rr, n) of thread (og, ug): bias LAST, as the reference.
  CONVBENCH_HD static void store_cell(const Plan &P, const Block &k, int og, int ug, int tm, int rr,
                                      int n, T v, const float *bias, float *y) {
    const int64_t oc = k.oc0 + og * TM + tm;
    if (oc >= P.cout)
      return;
    const int64_t u = k.u0 + ug * kTn + n;
    const int64_t p = (u + k.c) * P.s + k.r0 + rr - P.pad; // >= 0 by the choice of c
    if (p >= P.l_out)
      return;
    if (P.bias)
      v = add_rn(v, T(bias[oc]));
    y[(k.b * P.cout + oc) * P.l_out + p] = static_cast<float>(v);
  }

  CONVBENCH_HD static void store_output(const Plan &P, const Block &k, int tid, const Acc &a,
                                        const float *bias, float *y) {
    const int ug = C::ug_of(tid);
    const int og = C::og_of(tid);
    CB_UNROLL
    for (int tm = 0; tm < TM; ++tm)
      CB_UNROLL
    for (int rr = 0; rr < TR; ++rr)
      CB_UNROLL
    for (int n = 0; n < kTn; ++n)
      store_cell(P, k, og, ug, tm, rr, n, a.v[tm][rr][n], bias, y);
  }

  // Split (f32): the partial sums of a block live in partial[cell * kThreads + tid] (dynamic
  // shared memory, kThreads * kCells values); every rank of the cluster adds the same cells of
  // all ranks in rank order, each rank owning a 1/split slice of the tile.
  CONVBENCH_HD static void store_partial(int tid, const Acc &a, T *partial) {
    CB_UNROLL
    for (int tm = 0; tm < TM; ++tm)
      CB_UNROLL
    for (int rr = 0; rr < TR; ++rr)
      CB_UNROLL
    for (int n = 0; n < kTn; ++n)
      partial[((tm * TR + rr) * kTn + n) * kThreads + tid] = a.v[tm][rr][n];
  }
  // partials[r] is rank r's partial array (distributed shared memory on the device).
  template <class Partials>
  CONVBENCH_HD static void reduce_store(const Plan &P, const Block &k, int tid,
                                        const Partials &partials, const float *bias, float *y) {
    constexpr int kN = kThreads * kCells;
    const int lo = k.sp * (kN / P.split), hi = lo + kN / P.split;
    for (int e = lo + tid; e < hi; e += kThreads) {
      T v = partials(0)[e];
      for (int r = 1; r < P.split; ++r)
        v = add_rn(v, partials(r)[e]);
      const int t = e % kThreads, cell = e / kThreads;
      store_cell(P, k, C::og_of(t), C::ug_of(t), cell / (TR * kTn), (cell / kTn) % TR, cell % kTn,
                 v, bias, y);
    }
  }
};

} // namespace convbench::fast::detail
