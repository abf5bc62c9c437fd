// The hardware's ceilings on a case without its arithmetic (kernels/include/convbench/
// ceilings.hpp): cuda-copy, a device-to-device copy of the case's least bytes (half read, half
// written), the memory-bound kernels' ceiling; cuda-launch, an empty launch, the ceiling of a
// launch-bound call (a decode step, L = 1). Timed in the same rounds as every arm, resident
// staging, any single-stage case (Conv1d, ConvTranspose1d, the causal op), only when --arms names
// them. Role "ceiling"; the gate runs their own check (GateKind::self): a poisoned destination
// the call must overwrite exactly.
#pragma once

#if CONVBENCH_HAVE_CUDA

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "convbench/ceilings.hpp"
#include "core/device_gate.hpp"
#include "plan/arm.hpp"

namespace convbench::bench {

inline GateResult self_gate(const ceilings::SelfCheck &k) {
  GateResult g;
  g.kind = GateKind::self;
  g.pass = k.pass();
  g.cells = k.compared;
  g.mismatches = k.mismatches;
  return g;
}

// One prepared copy or launch: its own stream, a NaN output, its own check.
template <class Work> class CeilingPrepared final : public PreparedArm {
public:
  template <class... A>
  CeilingPrepared(const Problem &p, A &&...a)
      : n_(size_t(p.output_elems())), work_(std::forward<A>(a)...) {}
  void call() override { work_.launch(); }
  void *stream_begin() const override { return work_.stream(); }
  void *stream_end() const override { return work_.stream(); }
  bool enqueue_only() const override { return true; }
  void sync() override { work_.sync(); }
  // No convolution is computed: NaN, should anything ask.
  void output(float *y) override {
    work_.sync();
    std::fill(y, y + n_, std::numeric_limits<float>::quiet_NaN());
  }
  GateResult own_check() override {
    work_.poison(); // a call that writes nothing, or too little, fails
    work_.launch();
    return self_gate(work_.check());
  }

private:
  size_t n_;
  Work work_;
};

using CopyPrepared = CeilingPrepared<ceilings::DeviceCopy>;
using LaunchPrepared = CeilingPrepared<ceilings::EmptyLaunch>;

class CeilingArm : public Arm {
public:
  bool device() const override { return true; }
  GateKind gate() const override { return GateKind::self; }
  // The time the case's least bytes take at the device's bandwidth: what a copy is held to.
  std::string floor_kind() const override { return "memory"; }
  // No CUDA call: available() runs before the lease.
  bool available(std::string *why_not) const override { return gpu_visible(why_not); }
  std::vector<std::string> stagings() const override { return {"resident"}; }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (p.sequence()) {
      *why_not = "a copy or launch ceiling stands beside one stage, not a sequence (chain, "
                 "generator)";
      return false;
    }
    return true;
  }
  // Run only when --arms names them: the default set, the main job, stays as it was.
  bool hidden() const override { return true; }
};

} // namespace convbench::bench

#endif // CONVBENCH_HAVE_CUDA
