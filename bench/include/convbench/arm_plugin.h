/* convbench's arm plugin ABI, version 1: how a shared library brings its own arms to bench_conv.
 *
 * A plugin exports one C function, convbench_arm_plugin(), that returns a table of arms. Each arm
 * is gated against the cpu-f64 reference before it is timed, then timed, probed, counted and
 * named in NVTX exactly like a built-in arm. Only C types cross this boundary: build the plugin
 * in C, C++ or CUDA, with any compiler whose C ABI matches the platform's.
 *
 * Rules every callback follows:
 *   - It returns CONVBENCH_OK (0) or an error status; on an error, last_error() says why in one
 *     line. bench_conv prints that line with the plugin's path and the arm's name and goes on
 *     without the case.
 *   - It never throws. (A C++ exception that escapes anyway is caught at the boundary when it can
 *     unwind through the plugin, and counts as an error; one that cannot ends the process.)
 *   - It is called from one bench_conv thread at a time per arm; handles are never shared
 *     between threads by bench_conv.
 *
 * The entry point and supports() run before bench_conv holds its lease (a run may then wait for
 * it for minutes): they must not touch the GPU (no CUDA call), or the waiting run shows on the
 * GPU as a foreign process and voids the run that holds it. Every later call runs under the lease.
 *
 * Lifecycle of one case (one problem, one staging):
 *   supports(shape)         at planning: may this arm run the shape? (optional; NULL = yes)
 *   prepare(problem, ...)   once: allocate, upload weights, choose a kernel -> handle
 *   call(handle)            the timed work, many times (see the staging for what it may do)
 *   output(handle, y)       after a call: the output into y (host memory), synchronising first
 *   describe(handle, ...)   optional: what computes it, for the record ("naive f32, 256 threads")
 *   release(handle)         once, at the end of the run
 */
#ifndef CONVBENCH_ARM_PLUGIN_H
#define CONVBENCH_ARM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change to the layout or meaning of the structs below. bench_conv refuses a plugin
 * whose table says another version, or whose struct sizes differ from its own. */
#define CONVBENCH_ARM_PLUGIN_ABI_VERSION 1u

/* The entry point's name, as dlsym() looks it up. */
#define CONVBENCH_ARM_PLUGIN_ENTRY "convbench_arm_plugin"

typedef enum convbench_status {
  CONVBENCH_OK = 0,
  CONVBENCH_ERROR = 1,      /* the callback failed; last_error() says why */
  CONVBENCH_UNSUPPORTED = 2 /* supports(): this arm does not run the shape; `why` says why */
} convbench_status;

/* Operations. Values are fixed forever; new ones are appended. */
typedef enum convbench_op {
  CONVBENCH_OP_CONV1D = 0,           /* torch.nn.Conv1d */
  CONVBENCH_OP_CONV_TRANSPOSE1D = 1, /* torch.nn.ConvTranspose1d */
  CONVBENCH_OP_CAUSAL_DEPTHWISE = 2  /* causal depthwise conv1d (groups = channels, left pad k-1) */
} convbench_op;

/* How an arm's output is checked against the cpu-f64 reference before it may be timed. */
typedef enum convbench_gate {
  CONVBENCH_GATE_BITWISE = 1,  /* every output cell byte-identical to the reference */
  CONVBENCH_GATE_TOLERANCE = 2 /* ||y - ref||_2 / ||ref||_2 <= tolerance, every cell finite */
} convbench_gate;

/* Where the case's data live while it is timed. */
typedef enum convbench_staging {
  /* host arm: call() computes on the host and returns when done. */
  CONVBENCH_STAGING_HOST = 0,
  /* device arm: call() does everything a naive provider call does (allocate, upload, launch,
   * download, free) and returns when the output is on the host; `stream` is NULL (the legacy
   * default stream, which the timing events are recorded on). */
  CONVBENCH_STAGING_PER_CALL = 1,
  /* device arm: convbench owns device buffers of the input, weight, bias and output (the d_*
   * pointers of the problem, valid from prepare to release); call() only ENQUEUES its work on
   * `stream` (a cudaStream_t) and returns without waiting: the timing events bracket the stream. */
  CONVBENCH_STAGING_RESIDENT = 2
} convbench_staging;

/* One convolution, with torch's conventions. Layouts (row-major, f32):
 *   input  [batch, cin, l_in]
 *   weight [cout, cin, k] for CONV1D, [cin, cout, k] for CONV_TRANSPOSE1D,
 *          [cin, 1, k] for CAUSAL_DEPTHWISE (cin == cout)
 *   bias   [cout] when has_bias
 *   output [batch, cout, l_out] */
typedef struct convbench_shape {
  int32_t op;       /* a convbench_op */
  int32_t has_bias; /* 0 or 1 */
  int64_t batch, cin, cout, k, stride, dilation, padding, output_padding, l_in, l_out;
} convbench_shape;

typedef struct convbench_problem {
  uint32_t struct_size; /* sizeof(convbench_problem) as bench_conv was built */
  int32_t staging;      /* a convbench_staging */
  convbench_shape shape;
  /* Host copies, owned by convbench, valid from prepare to release, never written to. */
  const float *input, *weight, *bias; /* bias NULL when !has_bias */
  /* CONVBENCH_STAGING_RESIDENT only (else NULL): device buffers owned by convbench, uploaded
   * before prepare. call() reads d_input/d_weight/d_bias and writes d_output. */
  const float *d_input, *d_weight, *d_bias;
  float *d_output;
  int32_t host_threads; /* how many host threads the run was given (--threads) */
  int32_t reserved;
} convbench_problem;

typedef struct convbench_arm convbench_arm;

struct convbench_arm {
  uint32_t struct_size; /* sizeof(convbench_arm) as the plugin was built */
  /* <provider>-<accumulator>[-<variant>]: lower-case letters, digits, '-', '.', '_'; at most 63
   * characters; may not be the name of a built-in arm (bench_conv refuses the arm, not the run). */
  const char *name;
  int32_t device;   /* 0: host arm (CONVBENCH_STAGING_HOST); 1: CUDA arm (per-call, resident) */
  int32_t gate;     /* a convbench_gate */
  double tolerance; /* relative L2 bound, in (0, 1), for CONVBENCH_GATE_TOLERANCE; else 0 */
  /* Which arithmetic floor of the device applies: "fp32_fma", "fp64_fma" or "fp64_nofma";
   * NULL for host arms. */
  const char *floor_kind;
  void *user; /* the plugin's own pointer, unused by convbench */

  /* Optional (NULL: every shape whose op is CONV1D or CONV_TRANSPOSE1D). CONVBENCH_OK when the
   * arm runs `shape`; CONVBENCH_UNSUPPORTED with a reason in why[0..why_size) when not. */
  int32_t (*supports)(const convbench_arm *arm, const convbench_shape *shape, char *why,
                      size_t why_size);
  /* `stream` is the cudaStream_t to enqueue on (resident), or NULL. On CONVBENCH_OK, *handle is
   * the prepared case (any non-NULL pointer); on an error, *handle is ignored and
   * last_error(arm, NULL) says why. `problem` and what it points to outlive the handle. */
  int32_t (*prepare)(const convbench_arm *arm, const convbench_problem *problem, void *stream,
                     void **handle);
  int32_t (*call)(void *handle);
  /* The last call's output, batch * cout * l_out floats, into host memory y (synchronise first). */
  int32_t (*output)(void *handle, float *y);
  void (*release)(void *handle);
  /* Optional: a short description of what computes the prepared case into text[0..text_size). */
  int32_t (*describe)(void *handle, char *text, size_t text_size);
  /* The last error's message: of `handle`, or of the arm when handle is NULL (a failed prepare).
   * Valid until the next callback on the same handle or arm. */
  const char *(*last_error)(const convbench_arm *arm, void *handle);
};

typedef struct convbench_plugin {
  uint32_t abi_version;         /* CONVBENCH_ARM_PLUGIN_ABI_VERSION as the plugin was built */
  uint32_t plugin_struct_size;  /* sizeof(convbench_plugin) */
  uint32_t arm_struct_size;     /* sizeof(convbench_arm) */
  uint32_t problem_struct_size; /* sizeof(convbench_problem) */
  const char *name;             /* the plugin's name, e.g. "myconv" */
  const char *version;          /* the plugin's own version, recorded with every case */
  size_t arm_count;
  const convbench_arm *arms; /* arm_count entries, valid until the library is unloaded */
} convbench_plugin;

/* Fills every size and version field of a plugin table from this header. */
#define CONVBENCH_ARM_PLUGIN_HEADER                                                                \
  CONVBENCH_ARM_PLUGIN_ABI_VERSION, (uint32_t)sizeof(convbench_plugin),                            \
      (uint32_t)sizeof(convbench_arm), (uint32_t)sizeof(convbench_problem)

#if defined(_WIN32)
#define CONVBENCH_ARM_PLUGIN_EXPORT __declspec(dllexport)
#else
#define CONVBENCH_ARM_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The entry point a plugin defines: bench_conv passes its own ABI version; return NULL to
 * decline (e.g. a version this plugin was not written for). Called once, at load. */
typedef const convbench_plugin *(*convbench_arm_plugin_fn)(uint32_t host_abi_version);
CONVBENCH_ARM_PLUGIN_EXPORT const convbench_plugin *convbench_arm_plugin(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* CONVBENCH_ARM_PLUGIN_H */
