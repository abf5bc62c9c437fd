/* Test plugins with one planted fault each, built from this one file (FAULT_* below, one per
 * .so): the naive host arm of examples/plugin, broken in exactly one way. bench_conv must refuse
 * the arm or the case with one line and go on with the others. FAULT_NONE is the control. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "naive_conv.h"

typedef struct fault_case {
  convbench_problem problem;
  float *y;
  long calls;
  char error[128];
} fault_case;

static char arm_error[128];
static pid_t loader_pid; /* the process that called the entry point: bench_conv itself */

static int32_t fail(char *dst, const char *message) {
  snprintf(dst, 128, "%s", message);
  return CONVBENCH_ERROR;
}

static int32_t prepare(const convbench_arm *arm, const convbench_problem *p, void *stream,
                       void **handle) {
  (void)arm;
  (void)stream;
#ifdef FAULT_PREPARE
  return fail(arm_error, "planted: prepare refuses every problem");
#endif
  fault_case *c = calloc(1, sizeof *c);
  c->problem = *p;
  c->y = malloc(sizeof(float) * (size_t)(p->shape.batch * p->shape.cout * p->shape.l_out));
  *handle = c;
  return CONVBENCH_OK;
}

static int32_t call(void *handle) {
  fault_case *c = handle;
  const convbench_shape s = c->problem.shape;
  ++c->calls;
#ifdef FAULT_CALL
  return fail(c->error, "planted: call fails");
#endif
#ifdef FAULT_CALL_IN_PARENT /* the trial run (a child process) passes; bench_conv's gate call      \
                               fails */
  if (getpid() == loader_pid)
    return fail(c->error, "planted: call fails outside the trial");
#endif
#ifdef FAULT_CALL_LATER /* the trial and the gate pass; the first timed call fails */
  if (getpid() == loader_pid && c->calls >= 2)
    return fail(c->error, "planted: call fails in the timed rounds");
#endif
#if defined(FAULT_SEGV) || defined(FAULT_SEGV_LATER)
    /* FAULT_SEGV: every call (caught by the trial run in a child); FAULT_SEGV_LATER: from this
     * process's second call on, so the trial (one call) and the gate (the first call here) pass
     * and the crash comes in the timed rounds, in bench_conv's own process. */
#ifdef FAULT_SEGV_LATER
  if (c->calls >= 2)
#endif
  {
    volatile float *nowhere = NULL;
    *nowhere = 1.0f;
  }
#endif
#if defined(FAULT_HANG) || defined(FAULT_HANG_LATER)
  /* FAULT_HANG: every call spins (the trial run, a child process, never returns);
   * FAULT_HANG_LATER: from this process's second call on (a timed round hangs). */
#ifdef FAULT_HANG_LATER
  if (getpid() == loader_pid && c->calls >= 2)
#endif
  {
    volatile int spin = 1;
    while (spin) {
    }
  }
#endif
#if defined(FAULT_EXIT) || defined(FAULT_EXIT_LATER)
  /* FAULT_EXIT: exit(0) in every call (in the trial run); FAULT_EXIT_LATER: in a timed round. */
#ifdef FAULT_EXIT_LATER
  if (getpid() == loader_pid && c->calls >= 2)
#endif
    exit(0);
#endif
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t oc = 0; oc < s.cout; ++oc)
      for (int64_t p = 0; p < s.l_out; ++p)
        c->y[(n * s.cout + oc) * s.l_out + p] =
#ifdef FAULT_WRONG /* the bias left out */
            naive_cell(s, c->problem.input, c->problem.weight, c->problem.bias, n, oc, p) -
            (s.has_bias ? c->problem.bias[oc] : 0.0f);
#else
            naive_cell(s, c->problem.input, c->problem.weight, c->problem.bias, n, oc, p);
#endif
#ifdef FAULT_NAN
  c->y[0] = 0.0f / 0.0f;
#endif
  return CONVBENCH_OK;
}

static int32_t output(void *handle, float *y) {
  fault_case *c = handle;
  const convbench_shape s = c->problem.shape;
  memcpy(y, c->y, sizeof(float) * (size_t)(s.batch * s.cout * s.l_out));
  return CONVBENCH_OK;
}

static void release(void *handle) {
  fault_case *c = handle;
  free(c->y);
  free(c);
}

static const char *last_error(const convbench_arm *arm, void *handle) {
  (void)arm;
  return handle ? ((fault_case *)handle)->error : arm_error;
}

#define ARM(name, gate, tol)                                                                       \
  {                                                                                                \
    sizeof(convbench_arm), name, 0, gate, tol, NULL, NULL, NULL, prepare, call, output, release,   \
        NULL, last_error                                                                           \
  }

static const convbench_arm arms[] = {
#ifdef FAULT_SHADOW /* a built-in's name, a bad tolerance, and one good arm */
    ARM("cpu-f32", CONVBENCH_GATE_TOLERANCE, 1e-4),
    ARM("fault-bad-tolerance", CONVBENCH_GATE_TOLERANCE, 2.0),
    ARM("fault-shadow-ok", CONVBENCH_GATE_TOLERANCE, 1e-4),
#else
    ARM(FAULT_ARM_NAME, CONVBENCH_GATE_TOLERANCE, 1e-4),
#endif
};

static convbench_plugin table = {CONVBENCH_ARM_PLUGIN_HEADER, "fault", "0.0.1",
                                 sizeof arms / sizeof *arms, arms};

#ifdef FAULT_EXIT_AT_LOAD /* a constructor that ends the process while bench_conv loads it */
__attribute__((constructor)) static void exit_at_load(void) { exit(0); }
#endif
#ifdef FAULT_CTOR_SEGV                /* a constructor that crashes while bench_conv loads it */
static int *volatile nowhere_at_load; /* NULL, and the compiler cannot know it */
__attribute__((constructor)) static void crash_at_load(void) { *nowhere_at_load = 1; }
#endif

#ifdef FAULT_NO_ENTRY
#define ENTRY not_the_entry_point /* exported, but not under the name bench_conv looks up */
#else
#define ENTRY convbench_arm_plugin
#endif

CONVBENCH_ARM_PLUGIN_EXPORT const convbench_plugin *ENTRY(uint32_t abi) {
  (void)abi;
  loader_pid = getpid();
#ifdef FAULT_ABI
  table.abi_version = 99;
#endif
#ifdef FAULT_SIZE
  table.arm_struct_size = (uint32_t)sizeof(convbench_arm) - 8;
#endif
  return &table;
}
