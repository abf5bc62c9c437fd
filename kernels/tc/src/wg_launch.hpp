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

// The tensor maps of one plan, zero fill outside the tensor: a over the packed weights (cin x
// rows x taps; boxes of 32 x 128 rows on M, 32 x ng positions on M; 128-byte swizzle), hi and
// lo planes (a_lo for f32x3); b over the input: rows on M, xT (cin x l_in x batch, boxes of 32 x
// bn, 128-byte swizzle; b_lo its lo plane for f32x3), positions on M, x itself (l_in x cin x
// batch, boxes of the plan's window x 32, no swizzle; no lo plane: the kernel splits the input
// itself).
struct Maps {
  CUtensorMap a, b, a_lo, b_lo;
};
// w_hi, w_lo: the packed weights' planes; x: the input (positions on M) or xT's hi plane, x_lo
// xT's lo plane (rows on M, f32x3); a lo plane may be null where the plan has none.
Maps make_maps(const Plan &p, const float *w_hi, const float *w_lo, const float *x,
               const float *x_lo);

// Packs torch-layout weights d_w into A[j][row][ic] (wg_plan.hpp), rounded to tf32, with the lo
// parts for f32x3 (lo null for tf32).
void launch_pack(const Plan &p, const float *d_w, float *hi, float *lo, cudaStream_t st);
// Transposes x[b][ic][t] into xT[b][t][ic], rounded likewise (rows on M only).
void launch_transpose(const Plan &p, const float *d_x, float *hi, float *lo, cudaStream_t st);
// The convolution of one call (y = the shape's output; bias may be null when !p.bias). planted:
// a wg_kernel.cuh Planted fault, tests only.
void launch_tf32(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                 int planted = 0);
void launch_f32x3(const Plan &p, const Maps &m, const float *bias, float *y, cudaStream_t st,
                  int planted = 0);
// Blocks of the plan's kernel one multiprocessor of the current device holds at once
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor with its threads and shared memory): what the
// plan's blocks_per_sm models.
int resident_blocks_tf32(const Plan &p);
int resident_blocks_f32x3(const Plan &p);
inline int resident_blocks(const Plan &p) {
  return p.math == Math::f32x3 ? resident_blocks_f32x3(p) : resident_blocks_tf32(p);
}

} // namespace convbench::tc::wg
