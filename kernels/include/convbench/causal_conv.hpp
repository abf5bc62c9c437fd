// The causal depthwise conv1d (causal_conv1d_fwd) arms' compute: the host reference and cpu-f32,
// and, in CUDA builds, a register kernel and a tiled kernel that promise the same bits, each with
// an f32 and a bf16 output.
#pragma once

#include <cstdint>
#include <string>

#include "convbench/shape.hpp"
#include "convbench/thread_pool.hpp"

namespace convbench {

// Host views of one problem's tensors (layouts in CausalConvShape). initial_state and
// has_initial_state are read only when shape.initial_state; bias only when shape.bias.
struct CausalTensors {
  const float *x = nullptr;
  const float *w = nullptr;
  const float *bias = nullptr;
  const float *initial_state = nullptr;
  const uint8_t *has_initial_state = nullptr;
  float *y = nullptr;
  float *final_state = nullptr;
};

// cpu-f64, the reference: per cell one f64 accumulator, bias first, then k ascending (products of
// two f32 values are exact in f64); SiLU in f64 (v / (1 + exp(-v))); one rounding to f32 at the
// end. The final state is copied. Rows are split over the pool: same bits at any thread count.
void causal_cpu_f64(const CausalConvShape &s, const CausalTensors &t, ThreadPool &pool);

// cpu-f32: the device kernels' per-cell arithmetic (causal_tile.hpp: f32, bias first, k ascending,
// no FMA, SiLU through a portable exp), so its bits equal the CUDA kernels' f32 output.
void causal_cpu_f32(const CausalConvShape &s, const CausalTensors &t, ThreadPool &pool);

namespace cuda {

enum class CausalKernel { reg, tiled }; // windows in registers / in a shared-memory tile
enum class CausalOut { f32, bf16 };     // y stored as f32, or rounded to bf16

std::string to_string(CausalKernel k);
// Which shapes the CUDA kernels take: k in {2, 3, 4}; *why_not says why not.
bool causal_supported(const CausalConvShape &s, std::string *why_not);
// In words, for the result record.
std::string causal_kernel_name(const CausalConvShape &s, CausalKernel k, CausalOut out);

#if CONVBENCH_HAVE_CUDA

// `resident`: every tensor on the device, one stream; only launch() belongs in a timed region.
// The final state goes to its own device buffer: no block writes what another block reads.
class ResidentCausal {
public:
  ResidentCausal(const CausalConvShape &s, CausalKernel k, CausalOut out, const CausalTensors &t);
  ~ResidentCausal();
  ResidentCausal(const ResidentCausal &) = delete;
  ResidentCausal &operator=(const ResidentCausal &) = delete;
  void launch();
  // Synchronises; y widened to f32 when the output is bf16 (exactly: bf16 is a subset of f32).
  void download(float *y, float *final_state);
  void *stream() const;

private:
  struct Impl;
  Impl *impl_;
};

// `per-call`: allocate, upload, launch, download and free inside this synchronous call.
void per_call_causal(const CausalConvShape &s, CausalKernel k, CausalOut out,
                     const CausalTensors &t);

#endif // CONVBENCH_HAVE_CUDA

} // namespace cuda
} // namespace convbench
