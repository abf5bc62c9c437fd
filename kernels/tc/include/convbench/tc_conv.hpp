// Tensor-core arms: cuda-tf32, cuda-f32x3 and cuda-f64-dmma. Plain C++ (no CUDA headers): streams
// are passed as void* (a cudaStream_t).
//
// Two kernel families compute them:
//  wgmma (sm_90a, compute capability 9.0: H100, H200), tf32 and f32x3, Conv1d with stride 1 and
//        ConvTranspose1d with dilation 1: the convolution as shifted-window GEMMs over the input
//        transposed to [t][ic] and the weights packed once per stage (kernels/tc/src/wg_plan.hpp),
//        TMA loads, an mbarrier pipeline, wgmma.mma_async, split over a thread-block cluster
//        where the tiles alone would not fill the device.
//  DMMA  (sm_90a, compute capability 9.0), f64, the same shapes and shifted-window GEMMs as the
//        wgmma kernels: the weights packed once per stage in f64, mma.sync m16n8k16 with f64
//        operands and accumulate (kernels/tc/src/dm_plan.hpp), split-K through a workspace.
//  WMMA  (sm_80 and newer), tf32, f32x3 and f64, ConvTranspose1d whose taps split into phases of
//        at most 4: the polyphase GEMM (kernels/tc/src/tc_tile.hpp) on WMMA fragments, split-K
//        through a workspace; where the device or the shape does not take the kernels above.
// The arithmetic of each arm is the same in both:
//  tf32: x and w rounded to tf32 (cvt.rna, the tensor-op conversion), f32 accumulate, bias added
//        in f32 at the end. Gate: relative L2 <= 5e-3 (as cudnn-tf32).
//  f32x3: each operand split into hi = tf32(a) and lo = tf32(a - hi), three products per k-step,
//        lo*hi + hi*lo first, then hi*hi (lo*lo, ~2^-22 relative, dropped), each short run of
//        k-steps in a fresh accumulator whose sum is added to the total with FADD (the MMA's own
//        f32 accumulation truncates), bias added in f32 at the end. Gate: relative L2 <= 1e-4,
//        as cuda-f32.
//  f64:  x and w converted to double (exact), DMMA (m16n8k16, or WMMA's m8n8k4) with f64
//        accumulate, bias added in f64
//        at the end, one rounding to f32. Not byte-identical to cpu-f64 (another addition order):
//        each cell is within one f32 rounding step of the reference (see tests/tc_gpu_test.cpp
//        for why that, and not a 1e-12 relative L2, is the bound that holds).
// Neither skips x == 0 as the reference does: with a non-finite weight, 0 * inf gives NaN here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convbench/shape.hpp"

namespace convbench::tc {

enum class Precision { tf32, f32x3, f64 };
std::string to_string(Precision p); // "tf32", "f32x3", "f64-dmma"

// ---- what an arm runs on the current device ----

// Options that run a chosen variant: the tests', and the hidden tile arms (cuda-tf32@rows-n128-s2);
// the arms use the defaults.
struct TcOptions {
  bool wmma = false;     // tf32 / f32x3: the WMMA kernels even where the wgmma kernels run
  bool workspace = true; // WMMA: split-K through a workspace where the plan splits (else unsplit)
  // wgmma, each 0 for the plan's choice: the orientation (1: rows on M, 2: positions on M), wgmma
  // N, the cluster split (rows on M), the groups per block (positions on M).
  // DMMA (f64): the tile's rows bm and columns n, the split of the iterations.
  int along = 0, n = 0, split = 0, gpb = 0, bm = 0;
  // wgmma, positions on M: 1, an input window per tap even where one per chunk would serve.
  int window = 0;
  // wgmma, positions on M: 1, one tile per block; 2, persistent blocks (0: the plan's choice).
  int persist = 0;
  // wgmma, positions on M: at most this many pipeline buffers (stages), where the plan would take
  // more (0: the plan's choice): a smaller block leaves room for a second on a multiprocessor.
  int stages = 0;
  // wgmma / DMMA: a planted fault (tests only; wg_kernel.cuh's Planted, dm_launch.hpp's Planted)
  int planted = 0;
  bool forced() const { return along || n || split || gpb || bm || window || persist || stages; }
};

// The DMMA kernels' tiles (rows x columns) and the most splits their plan tries: the variants the
// hidden tile arms force (cuda-f64-dmma@t128x64-s2).
struct DmmaTile {
  int bm, bn;
};
std::vector<DmmaTile> dmma_tiles();
int dmma_max_split();

// Whether an arm of precision p computes `s` here (the wgmma kernels, else the WMMA kernels);
// otherwise false and *why says why (both families' reasons where neither takes it).
// With a forced wgmma variant (o.forced()), only where the wgmma kernels run s exactly so.
bool tc_supported(const ConvShape &s, Precision p, std::string *why, const TcOptions &o = {});
// The kernel an arm runs for s, in words (family, tile, split), for the result record.
std::string tc_kernel_name(const ConvShape &s, Precision p, const TcOptions &o = {});
// Multiply-adds the tensor cores issue per call: the padded tiles (every tile cell, every chunk
// of channels, the zero-staged taps), three times over for f32x3.
int64_t tc_issued_macs(const ConvShape &s, Precision p, const TcOptions &o = {});
// Device bytes a prepared stage holds beyond its input, weights, bias and output: the packed
// weights and the transposed input (wgmma), or the split-K workspace (WMMA).
size_t tc_extra_device_bytes(const ConvShape &s, Precision p, const TcOptions &o = {});

// One stage's tensor-core convolution on the device: its weights in the layout its kernel reads
// (packed and tf32-rounded for the wgmma kernels, enqueued on `stream` here; as given for the
// WMMA kernels, which read d_w at every call, so d_w must outlive this object), its scratch and
// workspace, and the stream its calls are enqueued on. d_b may be null when !s.bias. Throws
// std::invalid_argument for a shape no kernel takes, cuda::CudaError on a CUDA error.
class TcConv {
public:
  TcConv(const ConvShape &s, Precision p, const float *d_w, const float *d_b, void *stream,
         const TcOptions &o = {});
  ~TcConv();
  TcConv(const TcConv &) = delete;
  TcConv &operator=(const TcConv &) = delete;

  void launch(const float *d_x, float *d_y); // enqueue one call: d_x -> d_y (device buffers)
  std::string kernel_name() const;
  int64_t issued_macs() const;
  bool wgmma() const; // which family runs: wgmma (tf32, f32x3), DMMA (f64), else WMMA
  bool dmma() const;

private:
  struct Impl;
  Impl *impl_;
};

// ---- the WMMA kernels themselves ----

// ConvTranspose1d, dilation 1, K a multiple of the stride with K / stride <= 4 (every vocoder
// upsample stage), any batch, tensors below 2^31 elements. Otherwise false and *why says why.
bool wmma_supported(const ConvShape &s, std::string *why);
std::string wmma_kernel_name(const ConvShape &s, Precision p);
int64_t wmma_issued_macs(const ConvShape &s, Precision p);
// Device bytes of the split-K workspace a call of s wants (0: the shape has tile blocks enough
// and runs unsplit). Small shapes (up0 at 96 frames: 144 tiles for 132 SMs) split the input
// channels over several blocks and add the partial sums in a fixed order (deterministic).
size_t wmma_workspace_bytes(const ConvShape &s, Precision p);
// Enqueue one call on `stream`. Device pointers; d_b may be null when !s.bias. workspace: device
// memory of at least wmma_workspace_bytes(s, p) bytes, owned by the caller and not used by
// another call in flight; without it (null or too small) the call runs unsplit -- same contract,
// fewer blocks. Throws std::invalid_argument for an unsupported shape, cuda::CudaError on a CUDA
// error.
void launch_wmma_tf32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                      float *d_y, void *stream, void *workspace = nullptr,
                      size_t workspace_bytes = 0);
void launch_wmma_f32x3(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                       float *d_y, void *stream, void *workspace = nullptr,
                       size_t workspace_bytes = 0);
void launch_wmma_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, void *workspace = nullptr,
                     size_t workspace_bytes = 0);

} // namespace convbench::tc

namespace convbench::tc {

// `resident` staging, as cuda::ResidentConv: weights (packed where the kernel wants them), bias,
// input, output, scratch and workspace on the device, one persistent stream; only launch() belongs
// in a timed region.
class ResidentTc {
public:
  ResidentTc(const ConvShape &s, Precision p, const float *w, const float *bias,
             const TcOptions &o = {});
  ~ResidentTc();
  ResidentTc(const ResidentTc &) = delete;
  ResidentTc &operator=(const ResidentTc &) = delete;

  void upload_input(const float *x);         // host -> device input buffer, synchronous
  void launch();                             // enqueue on stream(): own input -> own output
  void launch(const float *d_x, float *d_y); // enqueue on stream() with caller's device buffers
  void download_output(float *y);            // synchronises stream(), device -> host
  void *stream() const;                      // the cudaStream_t
  float *d_output();

private:
  struct Impl;
  Impl *impl_;
};

// `per-call` staging, as a naive provider does: allocate, upload, create a stream, (pack,) launch,
// download, destroy, free, all inside this synchronous call.
void per_call_tc(const ConvShape &s, Precision p, const float *x, const float *w, const float *bias,
                 float *y, const TcOptions &o = {});

} // namespace convbench::tc
