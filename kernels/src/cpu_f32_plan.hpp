// cpu-f32 internals: the plan that turns any Conv1d / ConvTranspose1d into
// "phases", each an ordinary stride-1 multi-tap convolution over a zero-padded
// input buffer, i.e. one small GEMM per phase: Y_ph[oc, u] = sum_{ic, tap}
// W[ic, oc, k(tap)] * xbuf[ic][x_off(tap) + u].
//
//  transposed (any stride s, dilation d, K): output p + pad = q*s + r, the
//  phases of the polyphase planner (polyphase.hpp: c_r, cells, output index).
//  Phase r holds the taps k with (k*d) % s == r; with o_k = (k*d - r) / s the
//  input index is t = q - o_k. (For d = 1 and K % s == 0, o_k = j: the view of
//  the CUDA and tensor-core kernels, k = j*s + r, t = q - j.)
//  forward (any stride, dilation): one phase; the input is split into `stride`
//  rows,
//    xbuf[ic][ph][m] = x[ic][m*stride + ph], so tap k reads row (k*d - pad) mod
//    stride at the shift floor((k*d - pad) / stride) + u: contiguous in the
//    output index u.
//
// This header is plain data (no standard-library types) because it is included
// by the per-instruction-set translation units compiled under `#pragma GCC
// target`: an inline library function instantiated there could be compiled with
// AVX-512 and then picked by the linker for the whole program.
#pragma once

#include <cstdint>

namespace convbench::cpu_f32 {

struct Tap {
  int64_t k;     // weight tap index in [0, K)
  int64_t x_off; // offset in one input channel's strip (row * strip width + shift)
};

struct Phase {
  int64_t first_tap,
      n_taps;              // into Plan::taps; taps of one phase are contiguous
  int64_t n_out;           // cells u in [0, n_out)
  int64_t y_first, y_step; // output index of cell u: y_first + u * y_step
};

struct Plan {
  // The zero-padded input in strips of NR cells,
  // [batch][strip][cin][x_ic_stride]: a tile reads kc channels of one strip,
  // one contiguous run the prefetchers follow. (Whole rows per channel put the
  // channels kilobytes apart, past the stride prefetcher's reach: the tile then
  // waited on L2 for its x loads.)
  const float *xbuf;
  int64_t x_ic_stride;    // floats per input channel in a strip (rows x (NR +
                          // largest shift))
  int64_t x_strip_stride; // floats per strip (cin x x_ic_stride)
  int64_t x_batch_stride; // floats per batch element
  const float *w;         // the caller's weights, torch layout
  int64_t w_ic_stride;    // floats between input channels of one (oc, k)
  int64_t w_oc_stride;    // floats between output channels of one (ic, k)
  // Packed weights, per block of kc input channels [phase][ic][tap][mr], so a
  // tile reads them strictly sequentially (rows past cout hold zeros). When an
  // oc block's weights serve several items (several u chunks, or batch > 1),
  // they are packed once per call for all oc blocks (pack_weights in
  // cpu_f32_conv.cpp) and wpack points at them; when they serve one item only
  // (up0: one u chunk), wpack is null and the item packs each channel block
  // into its scratch while the block is hot in cache, so the weights cross
  // memory once rather than four times (read, write-allocate, write back, read
  // again: up0's 75 MB made that pass cost as much as the GEMM).
  const float *wpack;
  const float *bias; // nullptr when none
  float *y;          // [batch][cout][l_out]
  int64_t batch, cin, cout, l_out, k;
  const Tap *taps;
  int64_t n_taps_total;
  const Phase *phases;
  int64_t n_phases;
  // Blocking, fixed per shape (never per thread count): oc rows per block (the
  // micro-kernel's MR), cells per u chunk (a multiple of the micro-kernel's
  // NR), input channels per partial sum.
  int64_t mr, nr, chunk_u, kc;
  int64_t n_oc_blocks, n_u_chunks;
  int64_t items() const { return batch * n_oc_blocks * n_u_chunks; }
  // Per-worker scratch, in floats: the chunk's accumulator (all phases), then,
  // when wpack is null, one channel block of packed weights.
  int64_t acc_floats() const { return n_phases * mr * chunk_u; }
  int64_t item_pack_floats() const { return kc * n_taps_total * mr; }
  // The packed weights: floats per oc block (plus one cache line, so that oc
  // blocks whose size is a multiple of 4 KiB do not all fall in the same cache
  // sets), and in all.
  int64_t pack_ob_floats() const { return cin * n_taps_total * mr + 16; }
  int64_t pack_floats() const { return n_oc_blocks * pack_ob_floats(); }
};

// The instruction sets one binary carries; each is compiled with its own target
// attribute.
enum class Isa { generic, avx2, avx512 };

// Computes items [begin, end) (item = (batch, oc block, u chunk)); `scratch`
// holds acc_floats() + item_pack_floats() floats, 64-byte aligned. Defined in
// cpu_f32_<isa>.cpp.
void run_items_generic(const Plan &p, int64_t begin, int64_t end, float *scratch);
void run_items_avx2(const Plan &p, int64_t begin, int64_t end, float *scratch);
void run_items_avx512(const Plan &p, int64_t begin, int64_t end, float *scratch);

// Register block (MR oc rows x NR cells) of each instruction set's tile.
struct Block {
  int64_t mr, nr;
};
Block block_generic();
Block block_avx2();
Block block_avx512();

} // namespace convbench::cpu_f32
