/* example-cpu-f32: the naive loop on the host, one thread. */
#include <stdlib.h>

#include "arms.h"
#include "naive_conv.h"

int32_t example_host_prepare(const convbench_arm *arm, const convbench_problem *p, void *stream,
                             void **handle) {
  (void)arm;
  (void)stream;
  example_case *c = calloc(1, sizeof *c);
  if (!c)
    return example_fail(NULL, "out of host memory");
  c->problem = *p;
  c->y = malloc(sizeof(float) * (size_t)(p->shape.batch * p->shape.cout * p->shape.l_out));
  if (!c->y) {
    free(c);
    return example_fail(NULL, "out of host memory");
  }
  *handle = c;
  return CONVBENCH_OK;
}

int32_t example_host_call(void *handle) {
  example_case *c = handle;
  const convbench_shape s = c->problem.shape;
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t oc = 0; oc < s.cout; ++oc)
      for (int64_t p = 0; p < s.l_out; ++p)
        c->y[(n * s.cout + oc) * s.l_out + p] =
            naive_cell(s, c->problem.input, c->problem.weight, c->problem.bias, n, oc, p);
  return CONVBENCH_OK;
}
