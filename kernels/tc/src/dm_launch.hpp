// The DMMA kernels' host interface (dm_kernel.cu): the weight packing and the launch. Needs the
// CUDA headers; the plan (dm_plan.hpp) does not. The device check is the wgmma kernels' (both are
// built for sm_90a alone: wg_launch.hpp's device_reason).
#pragma once

#include <cuda_runtime.h>

#include "dm_plan.hpp"

namespace convbench::tc::dm {

// Faults the device tests plant (tests only): the last iteration of every split dropped, the
// input window read one position late.
enum Planted { kPlantNone = 0, kPlantDropIter = 1, kPlantShift = 2 };

// Packs torch-layout weights d_w into A[j][row][ic] (dm_plan.hpp) in f64, exact.
void launch_pack(const Plan &p, const float *d_w, double *a, cudaStream_t st);
// The convolution of one call: y = the shape's output from x (device buffers; bias may be null
// when !p.g.bias). ws: workspace_doubles(p) doubles where p.g.split > 1 (else unused).
void launch(const Plan &p, const double *a, const float *x, const float *bias, float *y, double *ws,
            cudaStream_t st, int planted = kPlantNone);

} // namespace convbench::tc::dm
