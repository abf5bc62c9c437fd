/* The example plugin's table: what bench_conv sees when it loads libexample_arms.so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arms.h"

static char arm_error[256]; /* errors before a handle exists (a failed prepare) */

int32_t example_fail(example_case *c, const char *message) {
  char *dst = c ? c->error : arm_error;
  snprintf(dst, 256, "%s", message);
  return CONVBENCH_ERROR;
}

int32_t example_output(void *handle, float *y) {
  example_case *c = handle;
  const convbench_shape s = c->problem.shape;
  memcpy(y, c->y, sizeof(float) * (size_t)(s.batch * s.cout * s.l_out));
  return CONVBENCH_OK;
}

void example_release(void *handle) {
  example_case *c = handle;
  free(c->y);
  free(c);
}

static const char *last_error(const convbench_arm *arm, void *handle) {
  (void)arm;
  return handle ? ((example_case *)handle)->error : arm_error;
}

static int32_t supports(const convbench_arm *arm, const convbench_shape *s, char *why,
                        size_t size) {
  (void)arm;
  if (s->op == CONVBENCH_OP_CONV1D || s->op == CONVBENCH_OP_CONV_TRANSPOSE1D)
    return CONVBENCH_OK;
  snprintf(why, size, "the example arms compute Conv1d and ConvTranspose1d only");
  return CONVBENCH_UNSUPPORTED;
}

static int32_t describe_host(void *handle, char *text, size_t size) {
  (void)handle;
  snprintf(text, size, "naive f32 loop, one host thread");
  return CONVBENCH_OK;
}

static convbench_arm arms[2];
static convbench_plugin table = {CONVBENCH_ARM_PLUGIN_HEADER, "example", "0.1.0", 0, arms};

CONVBENCH_ARM_PLUGIN_EXPORT const convbench_plugin *convbench_arm_plugin(uint32_t abi) {
  if (abi != CONVBENCH_ARM_PLUGIN_ABI_VERSION)
    return NULL;
  const convbench_arm host = {
      .struct_size = sizeof(convbench_arm),
      .name = "example-cpu-f32",
      .device = 0,
      .gate = CONVBENCH_GATE_TOLERANCE,
      .tolerance = 1e-4, /* relative L2 against cpu-f64: an f32 sum, as the built-in cpu-f32 */
      .supports = supports,
      .prepare = example_host_prepare,
      .call = example_host_call,
      .output = example_output,
      .release = example_release,
      .describe = describe_host,
      .last_error = last_error,
  };
  arms[0] = host;
  table.arm_count = 1;
#ifdef EXAMPLE_HAVE_CUDA
  const convbench_arm cuda = {
      .struct_size = sizeof(convbench_arm),
      .name = "example-cuda-f32",
      .device = 1,
      .gate = CONVBENCH_GATE_TOLERANCE,
      .tolerance = 1e-4,
      .floor_kind = "fp32_fma",
      .supports = supports,
      .prepare = example_cuda_prepare,
      .call = example_cuda_call,
      .output = example_cuda_output,
      .release = example_cuda_release,
      .describe = example_cuda_describe,
      .last_error = last_error,
  };
  arms[1] = cuda;
  table.arm_count = 2;
#endif
  return &table;
}
