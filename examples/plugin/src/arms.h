/* The example's arms: a host arm (host_arm.c) and, when CUDA is found, a CUDA arm (cuda_arm.cu). */
#ifndef EXAMPLE_ARMS_H
#define EXAMPLE_ARMS_H

#include <convbench/arm_plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What every prepared case of this plugin holds. */
typedef struct example_case {
  convbench_problem problem; /* a copy: the pointers stay valid until release */
  void *stream;              /* resident: the cudaStream_t to enqueue on */
  float *y;                  /* host output (host arm, per-call) */
  char error[256];
} example_case;

int32_t example_host_prepare(const convbench_arm *arm, const convbench_problem *p, void *stream,
                             void **handle);
int32_t example_host_call(void *handle);
int32_t example_cuda_prepare(const convbench_arm *arm, const convbench_problem *p, void *stream,
                             void **handle);
int32_t example_cuda_call(void *handle);
int32_t example_cuda_output(void *handle, float *y);
void example_cuda_release(void *handle);
int32_t example_cuda_describe(void *handle, char *text, size_t size);

/* Shared by both arms (plugin.c). */
int32_t example_output(void *handle, float *y);
void example_release(void *handle);
int32_t example_fail(example_case *c, const char *message); /* sets c->error (or the arm's) */

#ifdef __cplusplus
}
#endif

#endif
