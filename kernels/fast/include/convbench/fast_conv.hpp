// Fast device arms for the polyphase-friendly transposed convolutions of the vocoders:
// fast cuda-f32 (IEEE f32 arithmetic, f32 accumulation, FMA) and fast cuda-f64 (byte-identical to
// cpu-f64). Plain C++ declarations: no CUDA headers, the stream is a cudaStream_t passed as void*.
// All pointers are device pointers; launches are asynchronous on `stream`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convbench/shape.hpp"

namespace convbench::fast {

// The block shape of the polyphase tile (the block-shape sweep times each). threads = (threads /
// u_groups) oc-groups x u_groups u-groups; each thread owns cells_per_thread output cells (4
// oc-phase pairs x cells_per_thread / 4 consecutive positions); chunk input channels are staged
// through shared memory per pair of barriers. Every configuration performs the same f64 additions
// in the same order per cell, so all of them are byte-identical to conv_cpu_f64.
//
// rows_per_thread: the (oc, phase) rows a thread owns (4 or 8); cells_per_thread / rows are its
// consecutive positions. split (f32 only): the input channels are cut into `split` ranges run by
// the blocks of one thread-block cluster, whose partial sums are added through distributed
// shared memory in rank order (deterministic, no workspace). It changes the f32 summation order
// (rel-L2 gate) and is refused for f64, whose order is the byte-identity contract.
struct FastConfig {
  int threads = 64;
  int cells_per_thread = 16;
  int chunk = 16;
  int u_groups = 8;
  int rows_per_thread = 4;
  int min_blocks = 1; // blocks per SM asked of ptxas (__launch_bounds__): a register cap
  int split = 1;
  // Threads laid out row-major over (oc-group, u-group), the first kernels' mapping, instead of in
  // warp tiles (polyphase_tile.hpp, Config): compiled for two controls only, so that one sweep
  // measures what the warp tiles change ("-rm" in the name).
  bool row_major = false;
  // f32 only: 0 moves each chunk through registers into two shared-memory buffers; >= 2 copies
  // it with cp.async into that many buffers ("-a3" in the name), see fast_f32_configs().
  int buffers = 0;
  // e.g. "t64-c16-k16-u8", "t256-c64-k8-u16-r8-s4": threads, cells per thread, chunk, u-groups,
  // then rows per thread, min blocks per SM, "-rm", "-a<buffers>" and split when they differ
  // from 4, 1, warp tiles, register staging and 1.
  std::string name() const;
  // A split changes the f32 summation order and cp.async staging copies f32 as it is: either
  // makes the configuration an f32-only candidate (fast_config_unsupported_reason refuses it
  // for f64).
  bool f32_only() const { return split != 1 || buffers != 0; }
  // The compiled block shape, without the runtime split.
  FastConfig block() const {
    FastConfig c = *this;
    c.split = 1;
    return c;
  }
  bool operator==(const FastConfig &o) const {
    return threads == o.threads && cells_per_thread == o.cells_per_thread && chunk == o.chunk &&
           u_groups == o.u_groups && rows_per_thread == o.rows_per_thread &&
           min_blocks == o.min_blocks && split == o.split && row_major == o.row_major &&
           buffers == o.buffers;
  }
};

// The configuration launch_conv runs (64 threads, 16 cells, 16 channels): fast_configs()[0].
FastConfig default_fast_config();

// Every compiled configuration (split 1), the default first. The default handles every
// fast_supported shape; the others are compiled only for M = K / stride == 2 taps per phase
// (every vocoder stage of bench/data/models.json), to keep nvcc time down -- see
// fast_config_unsupported_reason().
std::vector<FastConfig> fast_configs();

// The f32 candidates: fast_configs(), then the f32-only cp.async configurations (3 buffers);
// and for each 8-row configuration split 2, 4 and 8, for each 4-row one but the default and the
// row-major control split 2 and 4.
std::vector<FastConfig> fast_f32_configs();

// Empty when `config` is compiled and can run shape `s` (in f64 when `f64`: no split there),
// otherwise why not (one line).
std::string fast_config_unsupported_reason(const ConvShape &s, const FastConfig &config,
                                           bool f64 = false);

// The configuration launch_conv (and the no-config launch_fast_* calls) run for a shape: the
// fastest of the last H200 block-shape sweep for that vocoder stage shape and arm
// (src/tuned_configs.inc, made by kernels/fast/tools/fast_tuning.py from the sweep's bench_conv
// records); for a stage swept at other lengths, its row at the nearest length; else the arm's block
// with the best geomean over the sweep. *tuned (when given) says whether the shape itself was in
// the table.
FastConfig choose_fast_config(const ConvShape &s, bool f64, bool fused, bool *tuned = nullptr);

// Shapes the fast path handles: ConvTranspose1d (op == transposed) with dilation 1, K a multiple
// of the stride with K / stride in [1, 4], padding >= 0, any output_padding, batch, cin, cout,
// l_in. Forward Conv1d is NOT handled by the fast path (cuda-f32 runs the forward tile
// kernel there, cuda-f64 the one-thread-per-cell one). Every
// stage of the models in bench/data/models.json is supported (K == 2 * stride). The answer is the
// same for f32 and f64; the argument is kept so a path may differ later.
bool fast_supported(const ConvShape &s, bool f64);

namespace detail {
struct Plan;
}

// One shape's fast launch, resolved once: the configuration (choose_fast_config unless given),
// the shape's checks and the launch plan. launch() then only enqueues, so a resident arm's timed
// launches carry no table lookup and no validation (host time that would land inside the timed
// interval when the stream is idle). The constructor throws
// what launch_fast_* throw for the shape (std::invalid_argument); launch() throws
// std::invalid_argument for a null bias the shape needs, std::runtime_error when the launch fails.
class FastLaunch {
public:
  FastLaunch(const ConvShape &s, bool f64, bool fused);
  FastLaunch(const ConvShape &s, bool f64, bool fused, const FastConfig &config);
  ~FastLaunch();
  FastLaunch(FastLaunch &&) noexcept;
  FastLaunch &operator=(FastLaunch &&) noexcept;
  void launch(const float *d_x, const float *d_w, const float *d_b, float *d_y, void *stream) const;
  const FastConfig &config() const { return config_; }

private:
  bool f64_, fused_;
  FastConfig config_;
  std::unique_ptr<detail::Plan> plan_;
};

// Polyphase tiled kernel, f32 accumulation (fma allowed), with choose_fast_config(s, false, true).
// Throws std::invalid_argument when the
// shape is not fast_supported, std::runtime_error (naming the call) when a launch fails.
void launch_fast_f32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream);
// The same with a chosen block shape; throws std::invalid_argument (with
// fast_config_unsupported_reason) when the config is not compiled for the shape.
void launch_fast_f32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, const FastConfig &config);

// Same tiling, f64 accumulator (choose_fast_config(s, true, fused)); per output cell the same
// sequence of f64 additions as conv_cpu_f64 (ic ascending, t ascending, zero inputs skipped, bias
// last), so its f32 output is bitwise equal to the reference. fused = false: __dmul_rn + __dadd_rn
// per tap (cuda-f64, no DFMA); fused = true: one __fma_rn per tap (cuda-f64-fma), the same bits
// because the product of two f32 values is exact in f64, at half the fp64 instructions.
void launch_fast_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, bool fused = false);
void launch_fast_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, bool fused, const FastConfig &config);

// Multiply-adds the fast kernel with `config` issues for a shape (it also issues the taps that
// padding and the chunk/tile remainders cut off, with x staged as 0): what the fp64/fp32
// counters must show.
int64_t fast_issued_macs(const ConvShape &s, const FastConfig &config);

} // namespace convbench::fast
