// The split-K kernels' one launch (the forward tile kernel, the fast polyphase kernels, the wgmma
// row kernels): `grid` with, where cluster_z > 1, clusters of cluster_z blocks along z (the split
// ranks of one tile, which reduce their partial sums through distributed shared memory); a plain
// launch where cluster_z is 1. Returns the launch's error; the caller checks it.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace convbench::cuda::detail {

template <class... Params, class... Args>
cudaError_t launch_z_clusters(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes,
                              cudaStream_t stream, unsigned cluster_z, Args &&...args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = 1;
  at[0].val.clusterDim.y = 1;
  at[0].val.clusterDim.z = cluster_z;
  cfg.attrs = at;
  cfg.numAttrs = cluster_z > 1 ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

} // namespace convbench::cuda::detail
