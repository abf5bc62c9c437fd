// Tensor-core arms of the transposed stages: cuda-tf32, cuda-f32x3 and cuda-f64-dmma.
// Plain C++ (no CUDA headers): streams are passed as void* (a cudaStream_t).
//
// All compute the polyphase GEMM (kernels/tc/src/tc_tile.hpp) with WMMA:
//  tf32: x and w rounded to tf32 (__float_to_tf32, the tensor-op conversion), m16n16k8, f32
//        accumulate, bias added in f32 at the end. Gate: relative L2 <= 5e-3 (as cudnn-tf32).
//  f32x3: 3xTF32 on the same MMA: each operand split into hi = tf32(a) and lo = tf32(a - hi),
//        three products per k-step into one f32 accumulator, lo*hi + hi*lo first, then hi*hi
//        (lo*lo, ~2^-22 relative, dropped), bias added in f32 at the end. Gate: relative L2 <=
//        1e-4, as cuda-f32 (the operands carry ~22 bits, the f32 accumulator dominates).
//  f64:  x and w converted to double (exact), DMMA m8n8k4 with f64 accumulate, bias added in f64
//        at the end, one rounding to f32. Not byte-identical to cpu-f64 (another addition order):
//        each cell is within one f32 rounding step of the reference (see tests/tc_gpu_test.cpp
//        for why that, and not a 1e-12 relative L2, is the bound that holds).
// Neither skips x == 0 as the reference does: with a non-finite weight, 0 * inf gives NaN here.
#pragma once

#include <cstdint>
#include <string>

#include "convbench/shape.hpp"

namespace convbench::tc {

enum class Precision { tf32, f32x3, f64 };
std::string to_string(Precision p); // "tf32", "f32x3", "f64-dmma"

// Transposed, dilation 1, K a multiple of the stride with K / stride <= 4 (every vocoder
// upsample stage), any batch, tensors below 2^31 elements. Otherwise false and *why says why.
bool tc_supported(const ConvShape &s, std::string *why);

// The kernel launch_tc_* runs for s with its workspace, in words (block shape, split), for the
// result record.
std::string tc_kernel_name(const ConvShape &s, Precision p);
// Multiply-adds the tensor cores issue per call: the padded GEMM (rows to whole 32-channel x
// phase tiles, columns to whole tiles, channels to whole chunks, the zero-staged taps included),
// three times over for f32x3 (three products per k-step).
int64_t tc_issued_macs(const ConvShape &s, Precision p);

// Device bytes of the split-K workspace a call of s wants (0: the shape has tile blocks enough
// and runs unsplit). Small shapes (up0 at 96 frames: 144 tiles for 132 SMs) split the input
// channels over several blocks and add the partial sums in a fixed order (deterministic).
size_t tc_workspace_bytes(const ConvShape &s, Precision p);

// Enqueue one call on `stream`. Device pointers; d_b may be null when !s.bias. workspace: device
// memory of at least tc_workspace_bytes(s, p) bytes, owned by the caller and not used by another
// call in flight; without it (null or too small) the call runs unsplit -- same contract, fewer
// blocks. Throws std::invalid_argument for an unsupported shape, cuda::CudaError on a CUDA error.
void launch_tc_tf32(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                    float *d_y, void *stream, void *workspace = nullptr,
                    size_t workspace_bytes = 0);
void launch_tc_f32x3(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                     float *d_y, void *stream, void *workspace = nullptr,
                     size_t workspace_bytes = 0);
void launch_tc_f64(const ConvShape &s, const float *d_x, const float *d_w, const float *d_b,
                   float *d_y, void *stream, void *workspace = nullptr, size_t workspace_bytes = 0);

} // namespace convbench::tc

namespace convbench::tc {

// `resident` staging, as cuda::ResidentConv: weights, bias, input, output and split-K workspace
// buffers on the device, one persistent stream; only launch() belongs in a timed region.
class ResidentTc {
public:
  ResidentTc(const ConvShape &s, Precision p, const float *w, const float *bias);
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

// `per-call` staging, as a naive provider does: allocate, upload, create a stream, launch,
// download, destroy, free, all inside this synchronous call.
void per_call_tc(const ConvShape &s, Precision p, const float *x, const float *w, const float *bias,
                 float *y);

} // namespace convbench::tc
