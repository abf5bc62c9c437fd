// Functions that run both in the device kernels and in their host emulation tests (the same index
// maths checked on a machine without a GPU) are marked CONVBENCH_HD.
#pragma once

#ifdef __CUDACC__
#define CONVBENCH_HD __host__ __device__ __forceinline__
#else
#define CONVBENCH_HD inline
#endif
