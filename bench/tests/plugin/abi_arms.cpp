// Built-in arms re-expressed through the plugin ABI: abi-cpu-f32 calls cpu-f32's kernel and, in
// CUDA builds, abi-cuda-f32 calls cuda-f32's (the same launch, on the stream convbench hands
// over). Timed in one run beside the built-ins, they show what the ABI costs.
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "convbench/arm_plugin.h"
#include "convbench/cpu_conv.hpp"
#include "convbench/thread_pool.hpp"
#if CONVBENCH_HAVE_CUDA
#include "convbench/cuda_conv.hpp"
#include "cuda/launch.cuh"
#endif

namespace {

using convbench::ConvShape;

ConvShape to_shape(const convbench_shape &a) {
  ConvShape s;
  s.op = a.op == CONVBENCH_OP_CONV1D ? convbench::ConvOp::forward : convbench::ConvOp::transposed;
  s.batch = a.batch;
  s.cin = a.cin;
  s.cout = a.cout;
  s.k = a.k;
  s.stride = a.stride;
  s.dilation = a.dilation;
  s.padding = a.padding;
  s.output_padding = a.output_padding;
  s.l_in = a.l_in;
  s.bias = a.has_bias != 0;
  return s;
}

struct Case {
  convbench_problem p;
  ConvShape shape;
  void *stream = nullptr;
  std::unique_ptr<convbench::ThreadPool> pool;
  std::vector<float> y;
#if CONVBENCH_HAVE_CUDA
  std::unique_ptr<convbench::cuda::detail::ConvLaunch> launch;
#endif
  std::string error;
};

thread_local std::string arm_error;

// Every entry point catches: the ABI forbids exceptions across it.
template <class F> int32_t guard(std::string &error, F f) {
  try {
    return f();
  } catch (const std::exception &e) {
    error = e.what();
    return CONVBENCH_ERROR;
  }
}

int32_t prepare(const convbench_arm *, const convbench_problem *p, void *stream, void **handle) {
  return guard(arm_error, [&] {
    auto c = std::make_unique<Case>();
    c->p = *p;
    c->shape = to_shape(p->shape);
    c->shape.validate();
    c->stream = stream;
    c->y.resize(size_t(c->shape.output_elems()));
    if (p->staging == CONVBENCH_STAGING_HOST)
      c->pool = std::make_unique<convbench::ThreadPool>(p->host_threads > 0 ? p->host_threads : 1);
#if CONVBENCH_HAVE_CUDA
    if (p->staging == CONVBENCH_STAGING_RESIDENT)
      c->launch = std::make_unique<convbench::cuda::detail::ConvLaunch>(
          c->shape, convbench::cuda::Accum::f32, convbench::cuda::Kernel::best);
#endif
    *handle = c.release();
    return int32_t(CONVBENCH_OK);
  });
}

int32_t call(void *handle) {
  auto *c = static_cast<Case *>(handle);
  return guard(c->error, [&] {
    const convbench_problem &p = c->p;
    switch (p.staging) {
    case CONVBENCH_STAGING_HOST:
      convbench::conv_cpu_f32(c->shape, p.input, p.weight, p.bias, c->y.data(), *c->pool);
      break;
#if CONVBENCH_HAVE_CUDA
    case CONVBENCH_STAGING_PER_CALL:
      convbench::cuda::per_call_conv(c->shape, convbench::cuda::Accum::f32, p.input, p.weight,
                                     p.bias, c->y.data());
      break;
    case CONVBENCH_STAGING_RESIDENT:
      (*c->launch)(p.d_input, p.d_weight, p.d_bias, p.d_output, cudaStream_t(c->stream));
      break;
#endif
    default:
      c->error = "staging not built";
      return int32_t(CONVBENCH_ERROR);
    }
    return int32_t(CONVBENCH_OK);
  });
}

int32_t output(void *handle, float *y) {
  auto *c = static_cast<Case *>(handle);
#if CONVBENCH_HAVE_CUDA
  if (c->p.staging == CONVBENCH_STAGING_RESIDENT) {
    cudaError_t e = cudaStreamSynchronize(cudaStream_t(c->stream));
    if (e == cudaSuccess)
      e = cudaMemcpy(y, c->p.d_output, c->y.size() * sizeof(float), cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
      c->error = cudaGetErrorString(e);
      return CONVBENCH_ERROR;
    }
    return CONVBENCH_OK;
  }
#endif
  std::memcpy(y, c->y.data(), c->y.size() * sizeof(float));
  return CONVBENCH_OK;
}

void release(void *handle) { delete static_cast<Case *>(handle); }

int32_t describe(void *handle, char *text, size_t size) {
  auto *c = static_cast<Case *>(handle);
  std::string d = c->p.staging == CONVBENCH_STAGING_HOST
                      ? std::string("cpu-f32 ") + convbench::cpu_f32_isa() + " through the ABI"
                      : "cuda-f32 through the ABI";
#if CONVBENCH_HAVE_CUDA
  if (c->p.staging != CONVBENCH_STAGING_HOST)
    d = convbench::cuda::kernel_name(c->shape, convbench::cuda::Accum::f32,
                                     convbench::cuda::Kernel::best) +
        " through the ABI";
#endif
  std::snprintf(text, size, "%s", d.c_str());
  return CONVBENCH_OK;
}

const char *last_error(const convbench_arm *, void *handle) {
  return handle ? static_cast<Case *>(handle)->error.c_str() : arm_error.c_str();
}

const convbench_arm arms[] = {
    {sizeof(convbench_arm), "abi-cpu-f32", 0, CONVBENCH_GATE_TOLERANCE, 1e-4, nullptr, nullptr,
     nullptr, prepare, call, output, release, describe, last_error},
#if CONVBENCH_HAVE_CUDA
    {sizeof(convbench_arm), "abi-cuda-f32", 1, CONVBENCH_GATE_TOLERANCE, 1e-4, "fp32_fma", nullptr,
     nullptr, prepare, call, output, release, describe, last_error},
#endif
};
const convbench_plugin table = {CONVBENCH_ARM_PLUGIN_HEADER, "abi-arms", "0.1.0",
                                sizeof arms / sizeof *arms, arms};

} // namespace

extern "C" CONVBENCH_ARM_PLUGIN_EXPORT const convbench_plugin *convbench_arm_plugin(uint32_t) {
  return &table;
}
