// Host arms. Tensors are f32 in and f32 out (what a provider is handed); the accumulator differs.
#pragma once

#include "convbench/shape.hpp"
#include "convbench/thread_pool.hpp"

namespace convbench {

// cpu-f64, the reference: one f64 accumulator per output cell.
//  forward:    bias first, then ic ascending, k ascending.
//  transposed: scatter, ic ascending, t ascending, one tap per (t, destination), bias LAST.
//  An input value == 0.0 is skipped. Output channels are split over the pool; the result is
//  bitwise identical at any thread count.
void conv_cpu_f64(const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
                  ThreadPool &pool);

// cpu-f32: f32 accumulator with per-input-channel blocked partial sums (blocked-GEMM order).
void conv_cpu_f32(const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
                  ThreadPool &pool);

// The instruction set conv_cpu_f32 runs on this CPU: "avx512", "avx2" or "generic" (the same
// arm is a different kernel on another machine: the result record says which ran).
const char *cpu_f32_isa();
// The instruction set of cpu-f64's register tile ("generic": the per-tap sweep alone).
const char *cpu_f64_isa();

// The instruction sets conv_cpu_f32 is built for, the best first: "avx512", "avx2", "generic".
// Each is a different tile with the same addition order; the bench times each this CPU runs as
// an arm of its own (cpu-f32@avx2).
const char *const *cpu_f32_isas(); // null-terminated
bool cpu_f32_isa_supported(const char *isa);
// conv_cpu_f32 on the named instruction set; std::invalid_argument for one unknown or one this
// CPU lacks.
void conv_cpu_f32_on(const char *isa, const ConvShape &s, const float *x, const float *w,
                     const float *bias, float *y, ThreadPool &pool);

} // namespace convbench
