// Device helpers for the GPU tests: an owning device buffer and stream (calls checked with the
// kernels' CONVBENCH_CUDA_CHECK).
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "convbench/cuda_check.hpp"

namespace convbench::peer_testing {

class DeviceFloats {
public:
  explicit DeviceFloats(size_t n) : n_(n) { CONVBENCH_CUDA_CHECK(cudaMalloc(&p_, bytes())); }
  explicit DeviceFloats(const std::vector<float> &host) : DeviceFloats(host.size()) {
    CONVBENCH_CUDA_CHECK(cudaMemcpy(p_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  ~DeviceFloats() { cudaFree(p_); }
  DeviceFloats(const DeviceFloats &) = delete;
  DeviceFloats &operator=(const DeviceFloats &) = delete;
  float *get() const { return p_; }
  size_t bytes() const { return n_ * sizeof(float) + (n_ == 0 ? sizeof(float) : 0); }
  // All-ones bytes: a NaN, so a cell the kernel never writes is visible afterwards.
  void poison(cudaStream_t st) { CONVBENCH_CUDA_CHECK(cudaMemsetAsync(p_, 0xFF, bytes(), st)); }
  std::vector<float> download() const {
    std::vector<float> h(n_);
    CONVBENCH_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }

private:
  size_t n_;
  float *p_ = nullptr;
};

class Stream {
public:
  Stream() { CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(s_)); }

private:
  cudaStream_t s_ = nullptr;
};

} // namespace convbench::peer_testing
