// The peer arms: cuDNN's own convolution, in-process, as a user would pick it instead of ours.
// cudnn-f32 (IEEE f32, FMA math, no tensor-op conversion), cudnn-tf32 (tensor-op math allowed),
// cudnn-f64 (double tensors). Plain C++: no CUDA or cuDNN headers; the stream is a void*.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "convbench/shape.hpp"

namespace convbench::cudnn {

enum class Mode { f32, tf32, f64 };
std::string to_string(Mode m); // "f32", "tf32", "f64" (the arm is "cudnn-" + this)

// A failed cuDNN call: what() names the call and cuDNN's message (a failed CUDA call throws
// cuda::CudaError, as everywhere in kernels/).
class CudnnError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A pinned algorithm cuDNN does not run for this shape (its workspace query or its first call
// fails): the case cannot run as asked; what() says why.
class AlgoRefused : public CudnnError {
public:
  using CudnnError::CudnnError;
};

// cuDNN's algorithm counts (cudnnConvolutionFwdAlgo_t, cudnnConvolutionBwdDataAlgo_t).
inline constexpr int kFwdAlgoCount = 8, kBwdDataAlgoCount = 6;

// An algorithm the user chose instead of Find's: its cuDNN enum value (forward for Conv1d,
// backward-data for ConvTranspose1d) and the math as algorithm() spells it ("fma math"); empty
// math: the mode's own (f32: fma, tf32: tensor-op, f64: default).
struct Pinned {
  int algo = 0;
  std::string math;
};

// True when a device is usable and a cuDNN handle can be created; otherwise *why_not says why.
// Creates a CUDA context.
bool cudnn_available(std::string *why_not);
// True when the cuDNN library answers (cudnnGetVersion): no device is touched, no context made.
bool cudnn_library_available(std::string *why_not);

// Whether the peer can run this shape: both ops, any stride, dilation and padding;
// ConvTranspose1d only with output_padding < stride (so the dgrad formulation is exact).
bool cudnn_supported(const ConvShape &s, Mode m);

// Resident peer: weights (and bias) uploaded once (f64 mode: converted to double once, on the
// host, outside any timed region), input and output buffers on the device, the algorithm chosen
// by cuDNN's Find once per shape in the constructor, the workspace allocated once. Only launch()
// belongs in a timed region.
//   forward:    cudnnConvolutionForward, Conv1d as 2-D with H = 1, filter [cout, cin, 1, K].
//   transposed: cudnnConvolutionBackwardData of the Conv1d(cout -> cin) whose filter is
//               [K=cin, C=cout, 1, K] -- exactly torch's ConvTranspose1d weight [cin, cout, k]
//               in memory; dy = our input [N, cin, 1, l_in], dx = our output [N, cout, 1, l_out]
//               (output_padding is carried by the dx descriptor's length).
//   bias:       cudnnAddTensor of [1, cout, 1, 1] onto the output, after the convolution.
class CudnnConv {
public:
  // stream: a cudaStream_t to run on, or nullptr to create (and own) one.
  // pin: run this algorithm, Find skipped (throws AlgoRefused when cuDNN does not run it).
  CudnnConv(const ConvShape &s, Mode mode, const float *w, const float *bias,
            void *stream = nullptr, const std::optional<Pinned> &pin = std::nullopt);
  ~CudnnConv();
  CudnnConv(const CudnnConv &) = delete;
  CudnnConv &operator=(const CudnnConv &) = delete;

  void upload_input(const float *x); // host f32 -> device (f64 mode: converted on the host)
  void launch();                     // enqueue convolution + bias on stream()
  void download_output(float *y);    // synchronises stream(); f64 mode rounds to f32 here
  void poison_output();              // NaN-fill the device output (gates: every cell written)
  void *stream() const;              // the cudaStream_t
  const ConvShape &shape() const;
  Mode mode() const;
  std::string algorithm() const; // e.g. "bwd_data_algo_1 (fma math)", for the record
  std::size_t workspace_bytes() const;
  bool pinned() const; // the algorithm was pinned, not found

private:
  struct Impl;
  Impl *impl_;
};

} // namespace convbench::cudnn
