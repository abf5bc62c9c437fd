// The index mapping of the tensor-core transposed-conv kernels, written once for the device
// kernel (tc_conv.cu) and for the host emulation test (tests/tc_emulation_test.cpp), so the
// arithmetic the H200 runs is also checked on CI, where there is no GPU.
//
// Polyphase view (kernels/src/polyphase.hpp; ConvTranspose1d, dilation 1, K = M*s): write
// P = p + pad = q*s + r. Phase r's taps are k = j*s + r (j < M) with t = q - j, so the whole
// stage is one GEMM  Y[(r, oc)][q] = sum_{(ic, j)} W[(r, oc)][(ic, j)] * X[(ic, j)][q]
// with W[(r, oc)][(ic, j)] = w[ic, oc, j*s + r] and X[(ic, j)][q] = x[ic, q - j].
//
// Padding: phase r's first valid q is c_r = ceil((pad - r) / s); columns are indexed by
// u = q - c_r, so every phase has its own u = 0 and no column is wasted at the left edge (for the
// vocoder stages, K = 2s and pad = s/2, every phase has exactly l_in columns; indexing by q
// instead would give l_in + 1, one more 32-column tile at 96 frames). c_r takes at most two
// adjacent values (c + 1 for r < pad % s, c for the rest). A block holds PB consecutive phases
// and stages M + 1 shifted copies of its x window, slot d = column offset d - (M - 1) from
// u + c_lo (c_lo = the smallest c_r of its phases): phase r, tap j reads slot
// d = M - 1 - j + (c_r - c_lo). A warp owns one phase, so one slot per (warp, tap). The shifted
// copies exist because WMMA fragment loads need 32-byte aligned rows: a one-column shift of a
// single window cannot be loaded as a fragment.
//
// Block tile: rows (rr, ocl) = PB phases x kBOc (32) output channels, row = rr * 32 + ocl;
// columns kBN = 32 * WNC consecutive u; one warp per (phase, 32-column slice). K-dimension per
// chunk of kBKc input channels: kk = j * kBKc + icl. Everything outside the tensors (oc >= cout,
// ic >= cin, r >= s, t outside [0, l_in)) is staged as 0, so tails need no branches in the MMA
// loop; the output store masks cells outside the tensor.
#pragma once

#include <cstdint>

#include "polyphase.hpp"

namespace convbench::tc::detail {

constexpr int kBOc = 32; // output channels per phase per block = rows of one warp

// Block shape: PB phases x 32 output channels rows, 32 * WNC columns, BKC channels per chunk.
template <int PB, int WNC, int BKC> struct Geometry {
  static constexpr int kPB = PB;
  static constexpr int kWnc = WNC;
  static constexpr int kBKc = BKC;
  static constexpr int kBM = PB * kBOc;
  static constexpr int kBN = 32 * WNC;
  static constexpr int kWarps = PB * WNC;
  static constexpr int kThreads = 32 * kWarps;
};

struct Plan : polyphase::Geometry {
  int64_t u_cols;       // the most columns any phase has
  int64_t phase_blocks; // blocks along the phases
  int64_t u_tiles;      // blocks along u
  int64_t oc_tiles;     // blocks along oc
  int64_t ic_chunks;    // chunks of kBKc input channels
  // Split-K: the chunks are cut into `splits` consecutive ranges of chunks_per_split, one block
  // each (grid z = batch x splits); each writes its raw partial tile to a workspace slice and
  // tc_reduce adds the slices in ascending order, then the bias (deterministic: no atomics).
  int64_t splits;
  int64_t chunks_per_split;
};

// The polyphase planner's c_r and cell count of phase r (polyphase.hpp).
CONVBENCH_HD int64_t phase_c(const Plan &P, int64_t r) {
  return polyphase::phase_first(P.pad, P.s, r);
}
CONVBENCH_HD int64_t phase_cells(const Plan &P, int64_t r) {
  return polyphase::phase_cells(P.l_out, P.pad, P.s, r);
}

struct Block {
  int64_t b, oc0, u0, r_a, c_lo;
  int64_t sp, ch_begin, ch_end; // the split and its chunk range [ch_begin, ch_end)
};

template <class G>
CONVBENCH_HD Block block_coords(const Plan &P, int64_t bx, int64_t by, int64_t bz) {
  Block k;
  // Phase blocks vary fastest: the blocks that read the same 32-byte weight sectors (one oc, one
  // tap row, all phases) run side by side and share them through L2.
  const int64_t pb = bx % P.phase_blocks;
  k.u0 = (bx / P.phase_blocks) * G::kBN;
  k.r_a = pb * G::kPB;
  const int64_t r_last = (k.r_a + G::kPB < P.s ? k.r_a + G::kPB : P.s) - 1;
  k.c_lo = phase_c(P, r_last); // c_r does not increase with r
  k.oc0 = by * kBOc;
  k.b = bz / P.splits;
  k.sp = bz % P.splits;
  k.ch_begin = k.sp * P.chunks_per_split;
  k.ch_end =
      k.ch_begin + P.chunks_per_split < P.ic_chunks ? k.ch_begin + P.chunks_per_split : P.ic_chunks;
  return k;
}

// The x-window slot offset of the warp holding phase r_a + rr: c_r - c_lo (0 or 1). Rows of a
// phase >= s are all-zero weights, any slot will do.
CONVBENCH_HD int phase_delta(const Plan &P, const Block &k, int rr) {
  const int64_t r = k.r_a + rr;
  return r < P.s ? static_cast<int>(phase_c(P, r) - k.c_lo) : 0;
}

// Weight-tile element e of the chunk at ic0: (icl, ocl, j, rr) with rr fastest, i.e. in memory
// order of w[ic, oc, j*s + r]. Writes its tile coordinates and returns the value (0 outside).
// M == P.m, a template argument so the divisions are by constants.
//
// A weight slot q = e % (kBOc * M * PB) is the (ocl, j, rr) part, fixed across channels and
// chunks: the kernel computes a thread's slots once and then only adds the channel offset.
struct WeightSlot {
  int64_t off; // (oc0 + ocl) * K + j * s + r_a + rr: w's offset inside one input channel
  int row;     // tile row rr * kBOc + ocl
  int kk0;     // tile column of channel 0: j * kBKc
  bool ok;     // oc < cout and r < s
};
template <class G, int M>
CONVBENCH_HD WeightSlot weight_slot(const Plan &P, const Block &k, int q) {
  const int rr = q % G::kPB;
  const int j = (q / G::kPB) % M;
  const int ocl = q / (G::kPB * M);
  const int64_t oc = k.oc0 + ocl, r = k.r_a + rr;
  return {oc * P.k + j * P.s + r, rr * kBOc + ocl, j * G::kBKc, oc < P.cout && r < P.s};
}
template <class G, int M> CONVBENCH_HD constexpr int weight_slots() { return M * kBOc * G::kPB; }

template <class G, int M>
CONVBENCH_HD float weight_element(const Plan &P, const Block &k, int64_t ic0, int e, const float *w,
                                  int &row, int &kk) {
  const WeightSlot ws = weight_slot<G, M>(P, k, e % weight_slots<G, M>());
  const int icl = e / weight_slots<G, M>();
  row = ws.row;
  kk = ws.kk0 + icl;
  const int64_t ic = ic0 + icl;
  if (ic >= P.cin || !ws.ok)
    return 0.0f;
  return w[ic * P.cout * P.k + ws.off];
}
template <class G, int M> CONVBENCH_HD constexpr int weight_elements() {
  return G::kBKc * M * kBOc * G::kPB;
}

// x-window element e of the chunk at ic0: slot d, channel icl, column n (n fastest). Slot d
// holds t = u0 + n + c_lo + d - (M - 1).
template <class G, int M>
CONVBENCH_HD float x_element(const Plan &P, const Block &k, int64_t ic0, int e, const float *x,
                             int &d, int &icl, int &n) {
  n = e % G::kBN;
  icl = (e / G::kBN) % G::kBKc;
  d = e / (G::kBN * G::kBKc);
  const int64_t ic = ic0 + icl;
  const int64_t t = k.u0 + n + k.c_lo + d - (M - 1);
  if (ic >= P.cin || t < 0 || t >= P.l_in)
    return 0.0f;
  return x[(k.b * P.cin + ic) * P.l_in + t];
}
template <class G, int M> CONVBENCH_HD constexpr int x_elements() {
  return (M + 1) * G::kBKc * G::kBN;
}

// The block's phases as the store needs them, computed once per thread (64-bit divisions by
// the stride are expensive on the device; per cell they cost more than the tile's MMAs).
template <class G> struct BlockPhases {
  int64_t base[G::kPB];  // output index of u = 0: c_r * s + r - pad (the batch row added later)
  int64_t cells[G::kPB]; // valid u of the phase (0 for a phase >= s)
};
template <class G> CONVBENCH_HD BlockPhases<G> block_phases(const Plan &P, const Block &k) {
  BlockPhases<G> ph;
  for (int rr = 0; rr < G::kPB; ++rr) {
    const int64_t r = k.r_a + rr;
    ph.cells[rr] = r < P.s ? phase_cells(P, r) : 0;
    ph.base[rr] = r < P.s ? polyphase::phase_output(0, P.pad, P.s, r) : 0;
  }
  return ph;
}

// Where tile cell (row rr * kBOc + ocl, column n) goes in y; -1 when it lies outside the
// output. p = (u + c_r) * s + r - pad >= 0 by the choice of c_r. (rr apart from ocl: the kernel
// indexes ph with a compile-time rr, keeping it in registers.)
template <class G>
CONVBENCH_HD int64_t output_index(const Plan &P, const Block &k, const BlockPhases<G> &ph, int rr,
                                  int ocl, int n) {
  const int64_t oc = k.oc0 + ocl, u = k.u0 + n;
  if (oc >= P.cout || u >= ph.cells[rr])
    return -1;
  return (k.b * P.cout + oc) * P.l_out + u * P.s + ph.base[rr];
}

// cuda-f32x3 (3xTF32): each operand is split a = hi + lo, hi = tf32(a), lo = tf32(a - hi) (a - hi
// is exact in f32), and each k-step issues the products of kSplitTerms operand pairs into the
// same f32 accumulator, the small ones first: lo*hi, hi*lo, then hi*hi. lo*lo (about 2^-22 of
// the product) is dropped. Term t multiplies A's part split_a_part(t) by B's part
// split_b_part(t) (0 = hi, 1 = lo); the kernel and the host emulation both walk this list.
constexpr int kSplitTerms = 3;
CONVBENCH_HD constexpr int split_a_part(int t) { return t == 0 ? 1 : 0; }
CONVBENCH_HD constexpr int split_b_part(int t) { return t == 1 ? 1 : 0; }

} // namespace convbench::tc::detail
