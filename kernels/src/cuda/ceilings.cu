// The copy and launch ceilings (convbench/ceilings.hpp): a device-to-device cudaMemcpyAsync and
// a one-thread kernel, each on a non-blocking stream of its own, each checked against a poisoned
// destination it must overwrite.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "convbench/ceilings.hpp"
#include "convbench/cuda_check.hpp"

namespace convbench::ceilings {

namespace {

constexpr size_t kShortBy = 16; // Fault::short_copy leaves this many bytes unwritten

__global__ void store_sequence(unsigned long long *word, unsigned long long sequence) {
  *word = sequence;
}

// splitmix64: the source's bytes from (seed, index), never 0xFF (the poison).
uint8_t pattern_byte(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return uint8_t((z ^ (z >> 31)) % 255);
}

cudaStream_t as_stream(void *s) { return static_cast<cudaStream_t>(s); }

} // namespace

size_t copy_bytes(double min_bytes) {
  const double half = std::ceil((min_bytes > 0 ? min_bytes : 0) / 2.0);
  const size_t n = (size_t(half) + 15) / 16 * 16;
  return n < 16 ? 16 : n;
}

// ---- DeviceCopy ----

DeviceCopy::DeviceCopy(size_t bytes, uint64_t seed, Fault fault) : bytes_(bytes), fault_(fault) {
  if (bytes_ == 0 || bytes_ % 16 != 0)
    throw cuda::CudaError("device copy: " + std::to_string(bytes_) +
                          " bytes; a copy moves a positive multiple of 16 bytes");
  try {
    cudaStream_t s;
    CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    stream_ = s;
    CONVBENCH_CUDA_CHECK(cudaMalloc(&src_, bytes_));
    CONVBENCH_CUDA_CHECK(cudaMalloc(&dst_, bytes_));
    std::vector<uint8_t> h(bytes_);
    for (size_t i = 0; i < bytes_; ++i)
      h[i] = pattern_byte(seed, i);
    // Enqueued on the copy's stream, which does not wait for the legacy one; synchronised here.
    CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(src_, h.data(), bytes_, cudaMemcpyHostToDevice, s));
    CONVBENCH_CUDA_CHECK(cudaMemsetAsync(dst_, 0, bytes_, s));
    CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(s));
  } catch (...) {
    release();
    throw;
  }
}

DeviceCopy::~DeviceCopy() { release(); }

void DeviceCopy::release() {
  if (src_)
    cudaFree(src_);
  if (dst_)
    cudaFree(dst_);
  if (stream_)
    cudaStreamDestroy(as_stream(stream_));
  src_ = dst_ = stream_ = nullptr;
}

void DeviceCopy::launch() {
  const size_t n = fault_ == Fault::short_copy ? bytes_ - kShortBy : bytes_;
  CONVBENCH_CUDA_CHECK(
      cudaMemcpyAsync(dst_, src_, n, cudaMemcpyDeviceToDevice, as_stream(stream_)));
}

void *DeviceCopy::stream() const { return stream_; }

void DeviceCopy::sync() { CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_))); }

void DeviceCopy::poison() {
  CONVBENCH_CUDA_CHECK(cudaMemsetAsync(dst_, 0xFF, bytes_, as_stream(stream_)));
  sync();
}

SelfCheck DeviceCopy::check() const {
  std::vector<uint8_t> src(bytes_), dst(bytes_);
  const cudaStream_t s = as_stream(stream_);
  CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(src.data(), src_, bytes_, cudaMemcpyDeviceToHost, s));
  CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(dst.data(), dst_, bytes_, cudaMemcpyDeviceToHost, s));
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(s));
  SelfCheck c;
  c.compared = int64_t(bytes_);
  for (size_t i = 0; i < bytes_; ++i)
    c.mismatches += src[i] != dst[i];
  return c;
}

// ---- EmptyLaunch ----

EmptyLaunch::EmptyLaunch(Fault fault) : fault_(fault) {
  try {
    cudaStream_t s;
    CONVBENCH_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    stream_ = s;
    CONVBENCH_CUDA_CHECK(cudaMalloc(&word_, sizeof(unsigned long long)));
    CONVBENCH_CUDA_CHECK(cudaMemsetAsync(word_, 0, sizeof(unsigned long long), s));
    CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(s));
  } catch (...) {
    release();
    throw;
  }
}

EmptyLaunch::~EmptyLaunch() { release(); }

void EmptyLaunch::release() {
  if (word_)
    cudaFree(word_);
  if (stream_)
    cudaStreamDestroy(as_stream(stream_));
  word_ = stream_ = nullptr;
}

void EmptyLaunch::launch() {
  ++sequence_;
  if (fault_ == Fault::skipped_launch)
    return;
  store_sequence<<<1, 1, 0, as_stream(stream_)>>>(static_cast<unsigned long long *>(word_),
                                                  sequence_);
  CONVBENCH_CUDA_CHECK(cudaGetLastError());
}

void *EmptyLaunch::stream() const { return stream_; }

void EmptyLaunch::sync() { CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream_))); }

void EmptyLaunch::poison() {
  CONVBENCH_CUDA_CHECK(
      cudaMemsetAsync(word_, 0xFF, sizeof(unsigned long long), as_stream(stream_)));
  sync();
}

SelfCheck EmptyLaunch::check() const {
  unsigned long long word = 0;
  const cudaStream_t s = as_stream(stream_);
  CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(&word, word_, sizeof word, cudaMemcpyDeviceToHost, s));
  CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(s));
  SelfCheck c;
  c.compared = 1;
  c.mismatches = sequence_ == 0 || word != sequence_;
  return c;
}

} // namespace convbench::ceilings
