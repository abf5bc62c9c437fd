// cuDNN peer arms through the legacy v9 "cnn" API (see cudnn_conv.hpp for the formulation).
#include "convbench/cudnn_conv.hpp"

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "convbench/cuda_check.hpp"

namespace convbench::cudnn {

namespace {

void check_cudnn(cudnnStatus_t st, const char *call) {
  if (st != CUDNN_STATUS_SUCCESS)
    throw CudnnError(std::string(call) + " failed: " + cudnnGetErrorString(st));
}
#define CB_CUDNN(call) check_cudnn((call), #call)

int narrow(int64_t v, const char *what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw CudnnError(std::string("cudnn peer: ") + what + " does not fit cuDNN's int");
  return static_cast<int>(v);
}

const char *math_name(cudnnMathType_t m) {
  switch (m) {
  case CUDNN_DEFAULT_MATH:
    return "default math";
  case CUDNN_TENSOR_OP_MATH:
    return "tensor-op math";
  case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
    return "tensor-op math, conversion";
  case CUDNN_FMA_MATH:
    return "fma math";
  }
  return "unknown math";
}

// f32 mode promises IEEE f32: tensor-op results are refused even if Find offers them, and
// CUDNN_DEFAULT_MATH (which permits TF32 for float data on Ampere and later) is run as FMA math.
bool math_allowed(Mode mode, cudnnMathType_t m) {
  if (mode == Mode::f32)
    return m != CUDNN_TENSOR_OP_MATH && m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  return true;
}
cudnnMathType_t math_to_run(Mode mode, cudnnMathType_t found) {
  return mode == Mode::f32 ? CUDNN_FMA_MATH : found;
}

static_assert(kFwdAlgoCount == CUDNN_CONVOLUTION_FWD_ALGO_COUNT &&
              kBwdDataAlgoCount == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);

} // namespace

std::string to_string(Mode m) {
  switch (m) {
  case Mode::f32:
    return "f32";
  case Mode::tf32:
    return "tf32";
  case Mode::f64:
    return "f64";
  }
  return "?";
}

bool cudnn_available(std::string *why_not) {
  std::string why;
  if (!convbench::cuda::device_available(&why)) {
    if (why_not)
      *why_not = why;
    return false;
  }
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t st = cudnnCreate(&h);
  if (st != CUDNN_STATUS_SUCCESS) {
    if (why_not)
      *why_not = std::string("cudnnCreate failed: ") + cudnnGetErrorString(st);
    return false;
  }
  cudnnDestroy(h);
  return true;
}

bool cudnn_library_available(std::string *why_not) {
  if (cudnnGetVersion() == 0) {
    if (why_not)
      *why_not = "the cuDNN library reports version 0";
    return false;
  }
  return true;
}

bool cudnn_supported(const ConvShape &s, Mode) {
  try {
    s.validate();
  } catch (const ShapeError &) {
    return false;
  }
  if (s.op == ConvOp::transposed && s.output_padding >= s.stride)
    return false;
  const int64_t big = std::numeric_limits<int>::max();
  return s.batch <= big && s.cin <= big && s.cout <= big && s.l_in <= big && s.l_out() <= big &&
         s.k <= big;
}

struct CudnnConv::Impl {
  ConvShape s;
  Mode mode;
  cudnnDataType_t dtype;
  size_t elem; // bytes per device element
  cudnnHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  bool own_stream = false;
  cudnnTensorDescriptor_t in_desc = nullptr, out_desc = nullptr, bias_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  void *d_x = nullptr, *d_w = nullptr, *d_b = nullptr, *d_y = nullptr, *d_ws = nullptr;
  size_t ws_bytes = 0;
  cudnnConvolutionFwdAlgo_t fwd_algo{};
  cudnnConvolutionBwdDataAlgo_t bwd_algo{};
  cudnnMathType_t math{};
  std::string algo_name;
  std::optional<Pinned> pin;

  // Host f32 -> device buffer of this mode's type (f64: converted here, outside any timing).
  void upload(void *dst, const float *src, int64_t n) {
    if (mode == Mode::f64) {
      std::vector<double> tmp(src, src + n);
      CONVBENCH_CUDA_CHECK(
          cudaMemcpy(dst, tmp.data(), size_t(n) * sizeof(double), cudaMemcpyHostToDevice));
    } else {
      CONVBENCH_CUDA_CHECK(cudaMemcpy(dst, src, size_t(n) * sizeof(float), cudaMemcpyHostToDevice));
    }
  }

  void release() noexcept {
    if (d_ws)
      cudaFree(d_ws);
    if (d_y)
      cudaFree(d_y);
    if (d_b)
      cudaFree(d_b);
    if (d_w)
      cudaFree(d_w);
    if (d_x)
      cudaFree(d_x);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
    if (w_desc)
      cudnnDestroyFilterDescriptor(w_desc);
    if (bias_desc)
      cudnnDestroyTensorDescriptor(bias_desc);
    if (out_desc)
      cudnnDestroyTensorDescriptor(out_desc);
    if (in_desc)
      cudnnDestroyTensorDescriptor(in_desc);
    if (handle)
      cudnnDestroy(handle);
    if (own_stream && stream)
      cudaStreamDestroy(stream);
  }

  void choose_forward() {
    int max_algos = 0;
    CB_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_algos));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(max_algos, 1)));
    int returned = 0;
    CB_CUDNN(cudnnFindConvolutionForwardAlgorithm(handle, in_desc, w_desc, conv, out_desc,
                                                  int(perf.size()), &returned, perf.data()));
    for (int i = 0; i < returned; ++i) { // sorted fastest first
      if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_allowed(mode, perf[i].mathType))
        continue;
      fwd_algo = perf[i].algo;
      math = math_to_run(mode, perf[i].mathType);
      algo_name = "fwd_algo_" + std::to_string(int(fwd_algo)) + " (" + math_name(math) + ")";
      CB_CUDNN(cudnnSetConvolutionMathType(conv, math));
      CB_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(handle, in_desc, w_desc, conv, out_desc,
                                                       fwd_algo, &ws_bytes));
      return;
    }
    throw CudnnError("cudnnFindConvolutionForwardAlgorithm: no usable algorithm for this shape");
  }

  void choose_backward_data() {
    int max_algos = 0;
    CB_CUDNN(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &max_algos));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(size_t(std::max(max_algos, 1)));
    int returned = 0;
    CB_CUDNN(cudnnFindConvolutionBackwardDataAlgorithm(handle, w_desc, in_desc, conv, out_desc,
                                                       int(perf.size()), &returned, perf.data()));
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_allowed(mode, perf[i].mathType))
        continue;
      bwd_algo = perf[i].algo;
      math = math_to_run(mode, perf[i].mathType);
      algo_name = "bwd_data_algo_" + std::to_string(int(bwd_algo)) + " (" + math_name(math) + ")";
      CB_CUDNN(cudnnSetConvolutionMathType(conv, math));
      CB_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w_desc, in_desc, conv, out_desc,
                                                            bwd_algo, &ws_bytes));
      return;
    }
    throw CudnnError(
        "cudnnFindConvolutionBackwardDataAlgorithm: no usable algorithm for this shape");
  }

  cudnnMathType_t pinned_math() const {
    if (pin->math.empty())
      return mode == Mode::f32 ? CUDNN_FMA_MATH
                               : (mode == Mode::tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH);
    for (cudnnMathType_t m : {CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH,
                              CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH})
      if (pin->math == math_name(m)) {
        if (!math_allowed(mode, m))
          throw AlgoRefused("cudnn peer: " + pin->math + " is not IEEE f32 (cudnn-f32)");
        return math_to_run(mode, m);
      }
    throw AlgoRefused("cudnn peer: unknown math '" + pin->math + "'");
  }

  // The pinned algorithm, Find skipped: cuDNN's workspace query says whether it runs the shape.
  void use_pinned() {
    const bool fwd = s.op == ConvOp::forward;
    const int count = fwd ? kFwdAlgoCount : kBwdDataAlgoCount;
    const std::string family = fwd ? "fwd_algo_" : "bwd_data_algo_";
    if (pin->algo < 0 || pin->algo >= count)
      throw AlgoRefused("cudnn peer: no " + family + std::to_string(pin->algo));
    math = pinned_math();
    algo_name = family + std::to_string(pin->algo) + " (" + math_name(math) + ")";
    CB_CUDNN(cudnnSetConvolutionMathType(conv, math));
    cudnnStatus_t st;
    if (fwd) {
      fwd_algo = cudnnConvolutionFwdAlgo_t(pin->algo);
      st = cudnnGetConvolutionForwardWorkspaceSize(handle, in_desc, w_desc, conv, out_desc,
                                                   fwd_algo, &ws_bytes);
    } else {
      bwd_algo = cudnnConvolutionBwdDataAlgo_t(pin->algo);
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(handle, w_desc, in_desc, conv, out_desc,
                                                        bwd_algo, &ws_bytes);
    }
    if (st != CUDNN_STATUS_SUCCESS)
      throw AlgoRefused(algo_name + ": cuDNN does not run it for this shape (workspace query: " +
                        cudnnGetErrorString(st) + ")");
  }

  void setup(const float *w, const float *bias, void *user_stream) {
    s.validate();
    if (!cudnn_supported(s, mode))
      throw CudnnError("cudnn peer: shape not supported (transposed output_padding >= stride "
                       "or a size beyond int)");
    const int n = narrow(s.batch, "batch"), cin = narrow(s.cin, "cin"),
              cout = narrow(s.cout, "cout"), k = narrow(s.k, "K"), l_in = narrow(s.l_in, "l_in"),
              l_out = narrow(s.l_out(), "l_out");
    if (user_stream) {
      stream = static_cast<cudaStream_t>(user_stream);
    } else {
      CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      own_stream = true;
    }
    CB_CUDNN(cudnnCreate(&handle));
    CB_CUDNN(cudnnSetStream(handle, stream));
    CB_CUDNN(cudnnCreateTensorDescriptor(&in_desc));
    CB_CUDNN(cudnnCreateTensorDescriptor(&out_desc));
    CB_CUDNN(cudnnCreateTensorDescriptor(&bias_desc));
    CB_CUDNN(cudnnCreateFilterDescriptor(&w_desc));
    CB_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    CB_CUDNN(cudnnSetTensor4dDescriptor(in_desc, CUDNN_TENSOR_NCHW, dtype, n, cin, 1, l_in));
    CB_CUDNN(cudnnSetTensor4dDescriptor(out_desc, CUDNN_TENSOR_NCHW, dtype, n, cout, 1, l_out));
    CB_CUDNN(cudnnSetTensor4dDescriptor(bias_desc, CUDNN_TENSOR_NCHW, dtype, 1, cout, 1, 1));
    // Forward filter [cout, cin, 1, K]; transposed: [cin, cout, 1, K] is the filter of the
    // Conv1d(cout -> cin) whose backward-data is our ConvTranspose1d.
    if (s.op == ConvOp::forward)
      CB_CUDNN(cudnnSetFilter4dDescriptor(w_desc, dtype, CUDNN_TENSOR_NCHW, cout, cin, 1, k));
    else
      CB_CUDNN(cudnnSetFilter4dDescriptor(w_desc, dtype, CUDNN_TENSOR_NCHW, cin, cout, 1, k));
    // torch's conv is a cross-correlation; accumulate in the tensors' own type.
    CB_CUDNN(cudnnSetConvolution2dDescriptor(
        conv, 0, narrow(s.padding, "padding"), 1, narrow(s.stride, "stride"), 1,
        narrow(s.dilation, "dilation"), CUDNN_CROSS_CORRELATION, dtype));
    CB_CUDNN(cudnnSetConvolutionMathType(
        conv, mode == Mode::f32
                  ? CUDNN_FMA_MATH
                  : (mode == Mode::tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH)));

    CONVBENCH_CUDA_CHECK(cudaMalloc(&d_x, size_t(s.input_elems()) * elem));
    CONVBENCH_CUDA_CHECK(cudaMalloc(&d_w, size_t(s.weight_elems()) * elem));
    CONVBENCH_CUDA_CHECK(cudaMalloc(&d_y, size_t(s.output_elems()) * elem));
    upload(d_w, w, s.weight_elems());
    if (s.bias) {
      if (!bias)
        throw CudnnError("cudnn peer: shape has bias but no bias values were given");
      CONVBENCH_CUDA_CHECK(cudaMalloc(&d_b, size_t(s.cout) * elem));
      upload(d_b, bias, s.cout);
    }
    CONVBENCH_CUDA_CHECK(cudaMemset(d_x, 0, size_t(s.input_elems()) * elem));
    // Find (runs every algorithm; outside any timed region), then the workspace, once.
    if (pin)
      use_pinned();
    else if (s.op == ConvOp::forward)
      choose_forward();
    else
      choose_backward_data();
    if (ws_bytes > 0)
      CONVBENCH_CUDA_CHECK(cudaMalloc(&d_ws, ws_bytes));
    if (pin) { // Find would have dropped an algorithm whose call fails; a pin is tried once here
      try {
        launch();
      } catch (const CudnnError &e) {
        throw AlgoRefused(algo_name + ": " + e.what());
      }
    }
    CONVBENCH_CUDA_CHECK(cudaDeviceSynchronize());
  }

  void launch() {
    // alpha/beta are host values of the compute type (double for f64 tensors).
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const void *one = mode == Mode::f64 ? static_cast<const void *>(&one_d) : &one_f;
    const void *zero = mode == Mode::f64 ? static_cast<const void *>(&zero_d) : &zero_f;
    if (s.op == ConvOp::forward)
      CB_CUDNN(cudnnConvolutionForward(handle, one, in_desc, d_x, w_desc, d_w, conv, fwd_algo, d_ws,
                                       ws_bytes, zero, out_desc, d_y));
    else
      CB_CUDNN(cudnnConvolutionBackwardData(handle, one, w_desc, d_w, in_desc, d_x, conv, bwd_algo,
                                            d_ws, ws_bytes, zero, out_desc, d_y));
    if (s.bias)
      CB_CUDNN(cudnnAddTensor(handle, one, bias_desc, d_b, one, out_desc, d_y));
  }
};

CudnnConv::CudnnConv(const ConvShape &s, Mode mode, const float *w, const float *bias, void *stream,
                     const std::optional<Pinned> &pin)
    : impl_(new Impl) {
  impl_->s = s;
  impl_->pin = pin;
  impl_->mode = mode;
  impl_->dtype = mode == Mode::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  impl_->elem = mode == Mode::f64 ? sizeof(double) : sizeof(float);
  try {
    impl_->setup(w, bias, stream);
  } catch (...) {
    impl_->release();
    delete impl_;
    throw;
  }
}

CudnnConv::~CudnnConv() {
  if (impl_->stream)
    cudaStreamSynchronize(impl_->stream);
  impl_->release();
  delete impl_;
}

void CudnnConv::upload_input(const float *x) {
  impl_->upload(impl_->d_x, x, impl_->s.input_elems());
}

void CudnnConv::launch() { impl_->launch(); }

void CudnnConv::download_output(float *y) {
  const int64_t n = impl_->s.output_elems();
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
  if (impl_->mode == Mode::f64) {
    std::vector<double> tmp(static_cast<size_t>(n));
    CONVBENCH_CUDA_CHECK(
        cudaMemcpy(tmp.data(), impl_->d_y, size_t(n) * sizeof(double), cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<float>(tmp[size_t(i)]);
  } else {
    CONVBENCH_CUDA_CHECK(
        cudaMemcpy(y, impl_->d_y, size_t(n) * sizeof(float), cudaMemcpyDeviceToHost));
  }
}

void CudnnConv::poison_output() {
  // All-ones bytes are a NaN in both f32 and f64.
  CONVBENCH_CUDA_CHECK(cudaMemsetAsync(
      impl_->d_y, 0xFF, size_t(impl_->s.output_elems()) * impl_->elem, impl_->stream));
}

void *CudnnConv::stream() const { return impl_->stream; }
const ConvShape &CudnnConv::shape() const { return impl_->s; }
Mode CudnnConv::mode() const { return impl_->mode; }
std::string CudnnConv::algorithm() const { return impl_->algo_name; }
std::size_t CudnnConv::workspace_bytes() const { return impl_->ws_bytes; }
bool CudnnConv::pinned() const { return impl_->pin.has_value(); }

} // namespace convbench::cudnn
