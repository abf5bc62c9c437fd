// cpu-f32 with a chosen instruction set, for the tests (every variant this CPU
// can run must pass the gates) and the cpu-f32@<isa> arms. conv_cpu_f32 calls
// it with best_isa().
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

#include "convbench/shape.hpp"
#include "convbench/thread_pool.hpp"
#include "cpu_f32_plan.hpp"

namespace convbench::cpu_f32 {

// A 64-byte aligned buffer that keeps its pages between calls on the same
// thread: the packed weights of up0 are 75 MB, and a fresh allocation that size
// is a fresh mmap whose page faults (and the kernel's zeroing) cost more per
// call than the packing itself. conv() keeps one per thread for the input strips
// and one for the packed weights.
class ReusedBuffer {
public:
  ReusedBuffer() = default;
  ReusedBuffer(const ReusedBuffer &) = delete;
  ReusedBuffer &operator=(const ReusedBuffer &) = delete;
  // At least `floats` floats; the contents are whatever the last user left.
  float *get(int64_t floats) {
    if (floats > floats_) {
      std::free(data_);
      data_ = static_cast<float *>(std::aligned_alloc(64, size_t((floats + 15) / 16 * 16) * 4));
      floats_ = data_ ? floats : 0;
      if (!data_)
        throw std::bad_alloc();
    }
    return data_;
  }
  int64_t capacity() const { return floats_; }
  ~ReusedBuffer() { std::free(data_); }

private:
  float *data_ = nullptr;
  int64_t floats_ = 0;
};

bool isa_supported(Isa isa); // whether this CPU runs it
Isa best_isa();              // AVX-512 if supported, else AVX2, else generic
const char *isa_name(Isa isa);

// Throws ShapeError for an invalid shape, std::invalid_argument for an
// unsupported isa.
void conv(Isa isa, const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
          ThreadPool &pool);

// How conv() splits a shape, for the tests that hold the split to what 16 threads need.
struct PlanSummary {
  int64_t items;     // work items handed out on the pool: batch x oc blocks x u chunks
  int64_t oc_blocks; // of mr rows; the last may be partial
  int64_t u_chunks;  // u chunks per phase
  int64_t chunk_u;   // cells per u chunk
  int64_t cells;     // cells of the longest phase (the last chunk holds the remainder)
  bool packs_once;   // weights packed once per call (else per item, each oc block serving one)
};
PlanSummary plan_summary(Isa isa, const ConvShape &s);

} // namespace convbench::cpu_f32
