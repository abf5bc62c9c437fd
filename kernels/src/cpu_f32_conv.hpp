// cpu-f32 with a chosen instruction set, for the tests (every variant this CPU
// can run must pass the gates) and cpu_f32_bench. conv_cpu_f32 calls it with
// best_isa().
#pragma once

#include "convbench/shape.hpp"
#include "convbench/thread_pool.hpp"
#include "cpu_f32_plan.hpp"

namespace convbench::cpu_f32 {

bool isa_supported(Isa isa); // whether this CPU runs it
Isa best_isa();              // AVX-512 if supported, else AVX2, else generic
const char *isa_name(Isa isa);

// Throws ShapeError for an invalid shape, std::invalid_argument for an
// unsupported isa.
void conv(Isa isa, const ConvShape &s, const float *x, const float *w, const float *bias, float *y,
          ThreadPool &pool);

} // namespace convbench::cpu_f32
