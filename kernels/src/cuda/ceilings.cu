// The copy and launch ceilings (convbench/ceilings.hpp): a device-to-device cudaMemcpyAsync and
// a one-thread kernel, each on a non-blocking stream of its own, each checked against a poisoned
// destination it must overwrite.
#include <cuda_runtime.h>

#include <algorithm>
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

// How many of the four bytes of a and b differ: a byte of d = a ^ b is nonzero exactly where its
// high bit, or the carry out of its low seven bits plus 0x7F, is set.
__device__ __forceinline__ unsigned differing_bytes(uint32_t a, uint32_t b) {
  const uint32_t d = a ^ b;
  return __popc((((d & 0x7f7f7f7fu) + 0x7f7f7f7fu) | d) & 0x80808080u);
}

// The destination against the source on the device, 16 bytes a thread a step: the count of bytes
// that differ, summed per warp, then into *count (which starts at 0).
__global__ void count_differing(const uint4 *a, const uint4 *b, size_t n16,
                                unsigned long long *count) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n16;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint4 x = a[i], y = b[i];
    mine += differing_bytes(x.x, y.x) + differing_bytes(x.y, y.y) + differing_bytes(x.z, y.z) +
            differing_bytes(x.w, y.w);
  }
  for (int o = 16; o > 0; o /= 2)
    mine += __shfl_down_sync(0xffffffffu, mine, o);
  if (threadIdx.x % 32 == 0 && mine)
    atomicAdd(count, mine);
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

// Compared on the device (a GB-sized case would otherwise cross PCIe twice for its check); only
// the count comes back.
SelfCheck DeviceCopy::check() const {
  const cudaStream_t s = as_stream(stream_);
  unsigned long long *count = nullptr;
  CONVBENCH_CUDA_CHECK(cudaMalloc(&count, sizeof *count));
  unsigned long long differ = 0;
  try {
    CONVBENCH_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof *count, s));
    const size_t n16 = bytes_ / 16;
    const unsigned blocks = unsigned(std::min<size_t>((n16 + 255) / 256, 4096));
    count_differing<<<blocks, 256, 0, s>>>(static_cast<const uint4 *>(src_),
                                           static_cast<const uint4 *>(dst_), n16, count);
    CONVBENCH_CUDA_CHECK(cudaGetLastError());
    CONVBENCH_CUDA_CHECK(cudaMemcpyAsync(&differ, count, sizeof differ, cudaMemcpyDeviceToHost, s));
    CONVBENCH_CUDA_CHECK(cudaStreamSynchronize(s));
  } catch (...) {
    cudaFree(count);
    throw;
  }
  cudaFree(count);
  SelfCheck c;
  c.compared = int64_t(bytes_);
  c.mismatches = int64_t(differ);
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
