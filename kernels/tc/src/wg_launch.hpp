// The wgmma kernels' host interface (wg_maps.cpp, wg_prep.cu, wg_tf32.cu, wg_f32x3.cu): the
// device check, the TMA tensor maps, the operand preparation and the launches. Needs the CUDA
// headers; the plan (wg_plan.hpp) does not.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

#include "wg_plan.hpp"

namespace convbench::tc::wg {

// Whether the current device runs the wgmma kernels: they are built for sm_90a, so compute
// capability 9.0 exactly (H100, H200). Empty when it does, else why not. Read once per process.
std::string device_reason();
// The current device's multiprocessors (132 on an H200), read once per process.
int device_sms();

// The tensor maps of one plan: A over the packed weights (cin x rows x taps, boxes of 32 x 128),
// B over the transposed input (cin x l_in x batch, boxes of 32 x bn), hi planes and, for f32x3,
// lo planes; 128-byte swizzle, zero fill outside the tensor.
struct Maps {
  CUtensorMap a, b, a_lo, b_lo;
};
Maps make_maps(const Plan &p, const float *a_hi, const float *a_lo, const float *b_hi,
               const float *b_lo);

// Packs torch-layout weights d_w into A[j][row][ic] (wg_plan.hpp), rounded to tf32, with the lo
// parts for f32x3 (lo null for tf32).
void launch_pack(const Plan &p, const float *d_w, float *hi, float *lo, cudaStream_t st);
// Transposes x[b][ic][t] into xT[b][t][ic], rounded likewise.
void launch_transpose(const Plan &p, const float *d_x, float *hi, float *lo, cudaStream_t st);
// The convolution of one call (y = the shape's output; bias may be null when !p.bias). planted:
// a wg_kernel.cuh Planted fault, tests only.
void launch_tf32(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                 int planted = 0);
void launch_f32x3(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                  int planted = 0);

} // namespace convbench::tc::wg
