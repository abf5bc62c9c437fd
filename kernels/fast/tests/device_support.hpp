// Device helpers for the GPU tests and the bench: checked CUDA calls, an owning device buffer.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace convbench::peer_testing {

inline void cuda_check(cudaError_t e, const char *call) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(e) + ": " +
                             cudaGetErrorString(e));
}
#define CB_TEST_CUDA(call) ::convbench::peer_testing::cuda_check((call), #call)

class DeviceFloats {
public:
  explicit DeviceFloats(size_t n) : n_(n) { CB_TEST_CUDA(cudaMalloc(&p_, bytes())); }
  explicit DeviceFloats(const std::vector<float> &host) : DeviceFloats(host.size()) {
    CB_TEST_CUDA(cudaMemcpy(p_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  ~DeviceFloats() { cudaFree(p_); }
  DeviceFloats(const DeviceFloats &) = delete;
  DeviceFloats &operator=(const DeviceFloats &) = delete;
  float *get() const { return p_; }
  size_t bytes() const { return n_ * sizeof(float) + (n_ == 0 ? sizeof(float) : 0); }
  // All-ones bytes: a NaN, so a cell the kernel never writes is visible afterwards.
  void poison(cudaStream_t st) { CB_TEST_CUDA(cudaMemsetAsync(p_, 0xFF, bytes(), st)); }
  std::vector<float> download() const {
    std::vector<float> h(n_);
    CB_TEST_CUDA(cudaMemcpy(h.data(), p_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
  }

private:
  size_t n_;
  float *p_ = nullptr;
};

class Stream {
public:
  Stream() { CB_TEST_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { CB_TEST_CUDA(cudaStreamSynchronize(s_)); }

private:
  cudaStream_t s_ = nullptr;
};

} // namespace convbench::peer_testing
