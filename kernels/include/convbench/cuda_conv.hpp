// Device arms, callable from plain C++ (no CUDA headers here). Declared only when the build has
// CUDA (CONVBENCH_HAVE_CUDA == 1); device_available() exists in every build.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "convbench/shape.hpp"
#if CONVBENCH_HAVE_CUDA
#include "convbench/fast_conv.hpp"
#endif

namespace convbench::cuda {

// Every CUDA call is checked; a failure throws this, naming the call and CUDA's message.
class CudaError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// True when this build has CUDA and a device can be used; otherwise *why_not says why.
bool device_available(std::string *why_not);

// A forced plan of cuda-f32's forward tile kernel: its tile of bm x bn output cells per block
// and the split of the reduction over a cluster (1..8), instead of the plan's choice for the
// shape (the tile sweep times each as an arm of its own, e.g. cuda-f32@fwd-32x256-s3). Plain
// C++, in every build: the arms' refusals are host code.
struct ForwardTile {
  int bm, bn, split;
};

// Every tile shape the kernel is compiled for, with every split: the sweep's variants.
std::vector<ForwardTile> forward_tile_variants();

// Why the forward tile kernel cannot run `s` with `t` forced (a ConvTranspose1d stage, cout
// below 16, a tile shape not compiled, a split outside 1..8 or leaving a rank without steps);
// empty when it can.
std::string forward_tile_unsupported_reason(const ConvShape &s, const ForwardTile &t);

#if CONVBENCH_HAVE_CUDA

enum class Accum { f64, f32 }; // cuda-f64 (byte-identical to cpu-f64), cuda-f32

// Which device kernel computes an arm.
//  best:   the fast polyphase kernel where it handles the shape (transposed, dilation 1, K a
//          multiple of the stride: every vocoder upsample stage); for f32 on a forward Conv1d with
//          cout >= 16 the implicit-GEMM tile kernel (kernels/src/cuda/forward_tile.hpp); else
//          `simple`. f64: __dmul_rn + __dadd_rn per tap.
//  simple: one thread per output cell, the first-cut kernel (any shape).
//  fused:  f64 only, the fast kernel with one __fma_rn per tap: byte-identical too, because the
//          product of two f32 values is exact in f64 (cuda-f64-fma). Falls back like `best`, to
//          the simple kernel with one __fma_rn per tap (the forward Conv1d stages).
enum class Kernel { best, simple, fused };

// What a thread block computes, fixed instead of launch_conv's choice for the shape; the sweeps
// time each as an arm of its own. Default (or std::nullopt): launch_conv's choice.
//  fast:    a block shape of the fast polyphase kernel (cuda-f32@t128-c8-k16-u16). `best` and
//           `fused` run the fast kernel in it or throw std::invalid_argument
//           (fast_config_unsupported_reason) where it cannot run the shape.
//  forward: a tile and split of cuda-f32's forward tile kernel (cuda-f32@fwd-128x128-s2). Where
//           set it decides: Accum::f32 with `best` runs the tile kernel in exactly that plan, or
//           throws std::invalid_argument (forward_tile_unsupported_reason); never another plan.
struct Block {
  std::optional<fast::FastConfig> fast;
  std::optional<ForwardTile> forward;

  Block() = default;
  Block(std::nullopt_t) {}
  Block(const fast::FastConfig &c) : fast(c) {}
  Block(const ForwardTile &t) : forward(t) {}
};

// The kernel launch_conv would run, in words (recorded in results), and the multiply-adds it
// issues per call (what the instruction counters must show: taps cut off by padding or tile
// remainders are issued with x staged as 0 by the fast kernel, skipped by the simple one).
std::string kernel_name(const ConvShape &s, Accum acc, Kernel k, const Block &block = {});
int64_t issued_macs(const ConvShape &s, Accum acc, Kernel k, const Block &block = {});

// `resident` staging: weights, bias, input and output buffers stay on the device; one
// persistent stream. Only launch() belongs in a timed region.
class ResidentConv {
public:
  ResidentConv(const ConvShape &s, Accum acc, const float *w, const float *bias,
               Kernel kernel = Kernel::best, const Block &block = {});
  ~ResidentConv();
  ResidentConv(const ResidentConv &) = delete;
  ResidentConv &operator=(const ResidentConv &) = delete;

  void upload_input(const float *x);         // host -> device input buffer, synchronous
  void launch();                             // enqueue on stream(): own input -> own output
  void launch(const float *d_x, float *d_y); // enqueue on stream() with caller's device buffers
  void download_output(float *y);            // synchronises stream(), device -> host
  void *stream() const;                      // the cudaStream_t
  const ConvShape &shape() const;
  float *d_input();
  float *d_output();

private:
  struct Impl;
  Impl *impl_;
};

// `per-call` staging, as a naive provider does: allocate, upload, create a stream, launch,
// download, destroy, free, all inside this synchronous call.
void per_call_conv(const ConvShape &s, Accum acc, const float *x, const float *w, const float *bias,
                   float *y, Kernel kernel = Kernel::best, const Block &block = {});

#endif // CONVBENCH_HAVE_CUDA

} // namespace convbench::cuda
