// example-cuda-f32: the naive loop as a CUDA kernel, one thread per output cell.
//   resident: convbench's device buffers; call() only enqueues the kernel on the given stream.
//   per-call: what a naive provider does per call: allocate, upload, launch, download, free.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include "arms.h"
#include "naive_conv.h"

namespace {

constexpr int kThreads = 256;

__global__ void naive_conv_kernel(convbench_shape s, const float *x, const float *w, const float *b,
                                  float *y) {
  const int64_t cells = s.batch * s.cout * s.l_out;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < cells;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = i % s.l_out, oc = (i / s.l_out) % s.cout, n = i / (s.l_out * s.cout);
    y[i] = naive_cell(s, x, w, b, n, oc, p);
  }
}

int32_t cuda_fail(example_case *c, const char *what, cudaError_t e) {
  char buf[200];
  snprintf(buf, sizeof buf, "%s: %s", what, cudaGetErrorString(e));
  return example_fail(c, buf);
}

size_t out_elems(const convbench_shape &s) { return size_t(s.batch * s.cout * s.l_out); }

void launch(const convbench_shape &s, const float *x, const float *w, const float *b, float *y,
            cudaStream_t stream) {
  const int64_t cells = int64_t(out_elems(s));
  const int64_t blocks = (cells + kThreads - 1) / kThreads;
  naive_conv_kernel<<<unsigned(blocks < 65535 ? blocks : 65535), kThreads, 0, stream>>>(s, x, w, b,
                                                                                        y);
}

// per-call: one complete provider call, synchronous.
int32_t per_call(example_case *c) {
  const convbench_problem &p = c->problem;
  const convbench_shape &s = p.shape;
  const size_t nx = size_t(s.batch * s.cin * s.l_in), ny = out_elems(s);
  const size_t nw = size_t(s.cin * s.cout * s.k), nb = s.has_bias ? size_t(s.cout) : 0;
  float *d = nullptr;
  cudaError_t e = cudaMalloc(&d, sizeof(float) * (nx + nw + nb + ny));
  if (e != cudaSuccess)
    return cuda_fail(c, "cudaMalloc", e);
  float *dx = d, *dw = d + nx, *db = nb ? d + nx + nw : nullptr, *dy = d + nx + nw + nb;
  cudaMemcpy(dx, p.input, sizeof(float) * nx, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, p.weight, sizeof(float) * nw, cudaMemcpyHostToDevice);
  if (nb)
    cudaMemcpy(db, p.bias, sizeof(float) * nb, cudaMemcpyHostToDevice);
  launch(s, dx, dw, db, dy, nullptr);
  e = cudaMemcpy(c->y, dy, sizeof(float) * ny, cudaMemcpyDeviceToHost);
  cudaFree(d);
  return e == cudaSuccess ? CONVBENCH_OK : cuda_fail(c, "per-call conv", e);
}

} // namespace

extern "C" int32_t example_cuda_prepare(const convbench_arm *, const convbench_problem *p,
                                        void *stream, void **handle) {
  example_case *c = static_cast<example_case *>(calloc(1, sizeof(example_case)));
  if (!c)
    return example_fail(nullptr, "out of host memory");
  c->problem = *p;
  c->stream = stream;
  if (p->staging == CONVBENCH_STAGING_PER_CALL) {
    c->y = static_cast<float *>(malloc(sizeof(float) * out_elems(p->shape)));
    if (!c->y) {
      free(c);
      return example_fail(nullptr, "out of host memory");
    }
  } else if (p->staging != CONVBENCH_STAGING_RESIDENT || !p->d_output) {
    free(c);
    return example_fail(nullptr, "example-cuda-f32 runs per-call or resident staging only");
  }
  *handle = c;
  return CONVBENCH_OK;
}

extern "C" int32_t example_cuda_call(void *handle) {
  example_case *c = static_cast<example_case *>(handle);
  const convbench_problem &p = c->problem;
  if (p.staging == CONVBENCH_STAGING_PER_CALL)
    return per_call(c);
  launch(p.shape, p.d_input, p.d_weight, p.d_bias, p.d_output, cudaStream_t(c->stream));
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? CONVBENCH_OK : cuda_fail(c, "naive_conv_kernel launch", e);
}

extern "C" int32_t example_cuda_output(void *handle, float *y) {
  example_case *c = static_cast<example_case *>(handle);
  const convbench_problem &p = c->problem;
  if (p.staging == CONVBENCH_STAGING_PER_CALL)
    return example_output(handle, y);
  cudaError_t e = cudaStreamSynchronize(cudaStream_t(c->stream));
  if (e == cudaSuccess)
    e = cudaMemcpy(y, p.d_output, sizeof(float) * out_elems(p.shape), cudaMemcpyDeviceToHost);
  return e == cudaSuccess ? CONVBENCH_OK : cuda_fail(c, "output", e);
}

extern "C" void example_cuda_release(void *handle) { example_release(handle); }

extern "C" int32_t example_cuda_describe(void *handle, char *text, size_t size) {
  (void)handle;
  snprintf(text, size, "naive_conv_kernel f32, one thread per output cell, %d threads/block",
           kThreads);
  return CONVBENCH_OK;
}
