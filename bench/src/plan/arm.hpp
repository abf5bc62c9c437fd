// The arms registry: one interface for every way to compute a stage. An arm lives in one .cpp
// file under arms/ that registers itself with CONVBENCH_REGISTER_ARM; bench_conv knows arms only
// through this interface.
#pragma once

#include "core/types.hpp"

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/cudnn_algo.hpp"
#include "plan/problem.hpp"

namespace convbench {
class ThreadPool;
}

namespace convbench::bench {

// What a prepared case needs from the run: the host threads; for the cuDNN arms, the case's id
// and the algorithms --cudnn-algo pins, by case id.
struct ArmContext {
  ThreadPool *pool = nullptr;
  const std::map<std::string, CudnnAlgo> *cudnn_algos = nullptr;
  std::string case_id; // set by the gate for each case it prepares
};

// One arm prepared for one problem and one staging: buffers allocated, weights in place.
// Lives from the correctness gate to the counter pass, so resident buffers stay resident.
class PreparedArm {
public:
  virtual ~PreparedArm() = default;
  // One complete call of the stage (or the whole chain). Host arms and per-call staging: returns
  // when done. Resident staging: enqueued; the work starts on stream_begin() and ends on
  // stream_end(), which is where the timing events go.
  virtual void call() = 0;
  virtual void *stream_begin() const { return nullptr; } // nullptr: CUDA's legacy default stream
  virtual void *stream_end() const { return nullptr; }
  virtual void sync() {} // wait for everything call() enqueued
  // True when call() only enqueues work on the device (resident staging): the runner may then
  // hold the stream's queue while the call is enqueued (--device-timing queued).
  virtual bool enqueue_only() const { return false; }
  virtual void output(float *y) = 0; // the last call's output (synchronises first)
  // What the arm chose while it was prepared (cuDNN: the algorithm its Find picked and the
  // workspace), merged into the case's "kernel" block; null when it chose nothing.
  virtual nlohmann::json chosen() const { return nullptr; }
  // An arm of GateKind::gemm (a ceiling) computes a GEMM, not the convolution; one of
  // GateKind::self (the copy, the launch) computes nothing: the gate calls this instead of
  // comparing output() with the reference. It runs the call and checks its product (the GEMM
  // against the host's; the copy's or launch's poisoned destination overwritten exactly).
  virtual GateResult own_check() { throw std::logic_error("this arm has no check of its own"); }
};

// What an arm computes with, in the record's words (each case's "precision", "math", "role"):
// the analysis groups and compares arms by these instead of parsing their names.
enum class ArmPrecision { f64, f32, f32x3, tf32, bf16 }; // the arithmetic the result carries
enum class ArmRole {
  reference, // the arm every other is gated against (cpu-f64)
  candidate, // a kernel under test: ours, a plugin's
  peer,      // the library to beat (cuDNN)
  ceiling,   // what the hardware reaches: a plain GEMM of the same arithmetic (cuBLAS), a copy of
             // the case's bytes (cuda-copy), an empty launch (cuda-launch)
};
std::string to_string(ArmPrecision p);
std::string to_string(ArmRole r);

struct ArmFacts {
  // Unset only for a plugin arm whose name and floor say nothing of it.
  std::optional<ArmPrecision> precision;
  // The instruction family doing the multiply-adds, short: "host", "simt" (separate mul and add),
  // "simt-fma", "dmma", "mma-tf32" (tensor-core tf32: wgmma where the Hopper kernels take the
  // shape, WMMA elsewhere), "wgmma-tf32" (the Hopper kernels only), "cudnn", "cublas", "plugin".
  // The case's "kernel" block names the exact kernel.
  std::string math;
  ArmRole role = ArmRole::candidate;
};

class Arm {
public:
  virtual ~Arm() = default;
  virtual std::string name() const = 0; // <provider>-<accumulator>[-<variant>]
  virtual bool device() const = 0;      // timed with CUDA events, probed with NVML
  virtual GateKind gate() const = 0;
  virtual double tolerance() const { return 0.0; } // relative L2 bound, GateKind::tolerance only
  // An arm whose output this one promises to equal bit for bit (two kernels of one summation
  // order, e.g. the causal op's register and tiled kernels): when both run a problem, the gate
  // also compares their outputs byte for byte, and any differing cell fails this arm. "": none.
  virtual std::string bitwise_sibling() const { return {}; }
  // Which devices.json floor applies: "fp32_fma", "fp64_fma", "fp64_nofma"; "" for host arms.
  virtual std::string floor_kind() const = 0;
  virtual bool available(std::string *why_not) const = 0;
  virtual ArmFacts facts() const = 0;
  // Device bytes one prepared case of `p` in `staging` holds at once (0 for host arms).
  virtual double device_bytes(const Problem &p, const std::string &staging) const;
  virtual std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &staging,
                                               const ArmContext &ctx) const = 0;
  // What computes the case, for the result's "kernel" block: e.g. {"name": "polyphase-tile f64
  // dmul+dadd", "issued_macs": N} (the counter checks compare instruction counts with it).
  virtual nlohmann::json describe(const Problem &) const { return nullptr; }
  // The stagings this arm runs in: {"host"} for host arms, {"per-call", "resident"} for device
  // arms.
  virtual std::vector<std::string> stagings() const;
  // Whether this arm computes problem `p` (e.g. the cuDNN peer runs single stages, not the chain);
  // a case it cannot run is left out of the plan, with *why_not on stderr.
  virtual bool supports(const Problem &, std::string * /*why_not*/) const { return true; }
  // A hidden arm (a variant such as cuda-f32@t128-c8-k16-u16, one block shape of a kernel) runs
  // only when --arms names it, alone or by a pattern; it is not in the default set.
  virtual bool hidden() const { return false; }
};

bool register_arm(std::unique_ptr<Arm> arm);
// An A/A twin: the same arm under the name "<name>#<n>", so `--arms cuda-f32,cuda-f32` times one
// arm twice in one run and the analysis can check that their ratio is 1 (the instrument's own
// noise). Owned by the registry; returns the same pointer for the same (arm, n).
const Arm *twin_arm(const Arm &arm, int n);
// Every registered arm that is not hidden, the reference first, then by name: the default set.
std::vector<const Arm *> registered_arms();
// Every registered arm, hidden ones included, in registration order.
std::vector<const Arm *> every_arm();
// Any registered arm, hidden ones included.
const Arm *find_arm(const std::string &name);
// --arms with its patterns expanded: a name holding '*', '?' or '[' (fnmatch, e.g. "cuda-f32@*")
// becomes every registered arm it matches that is available here, hidden ones included, by name
// (all it matches when none is available, so the run refuses naming why); a pattern that matches
// none is kept as it is, so the unknown-arm error names it. Other names pass unchanged.
std::vector<std::string> expand_arm_patterns(const std::vector<std::string> &names);
const Arm &reference_arm();

} // namespace convbench::bench

#define CONVBENCH_ARM_CONCAT_(a, b) a##b
#define CONVBENCH_ARM_CONCAT(a, b) CONVBENCH_ARM_CONCAT_(a, b)
// Registers an arm at static-initialisation time; usable more than once per file.
#define CONVBENCH_REGISTER_ARM(Type)                                                               \
  namespace {                                                                                      \
  [[maybe_unused]] const bool CONVBENCH_ARM_CONCAT(convbench_arm_registered_, __LINE__) =          \
      ::convbench::bench::register_arm(std::make_unique<Type>());                                  \
  }
