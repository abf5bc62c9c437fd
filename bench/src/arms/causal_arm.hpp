// What the causal depthwise conv1d's arms share: a prepared host case (cpu-f64, cpu-f32 run it
// through HostArm::causal_function) and the CUDA pair's two stagings. A case's output is y
// followed by the final state, so the gate compares both.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "convbench/causal_conv.hpp"
#include "convbench/cuda_conv.hpp"
#include "core/device_gate.hpp"
#include "plan/arm.hpp"

#if CONVBENCH_HAVE_CUDA
#include "measurement/device.hpp"
#endif

namespace convbench::bench {

using CausalHostFn = void (*)(const CausalConvShape &, const CausalTensors &, ThreadPool &);

inline CausalTensors causal_tensors(const Problem &p, float *out) {
  const CausalConvShape &s = *p.causal;
  CausalTensors t;
  t.x = p.input.data();
  t.w = p.weights[0].data();
  t.bias = s.bias ? p.biases[0].data() : nullptr;
  t.initial_state = s.initial_state ? p.initial_state.data() : nullptr;
  t.has_initial_state = s.initial_state ? p.has_initial_state.data() : nullptr;
  t.y = out;
  t.final_state = out ? out + s.output_elems() : nullptr;
  return t;
}

class CausalHostPrepared final : public PreparedArm {
public:
  CausalHostPrepared(const Problem &p, CausalHostFn fn, ThreadPool &pool)
      : p_(p), fn_(fn), pool_(pool), out_(size_t(p.output_elems())) {}
  void call() override { fn_(*p_.causal, causal_tensors(p_, out_.data()), pool_); }
  void output(float *y) override { std::memcpy(y, out_.data(), out_.size() * sizeof(float)); }

private:
  const Problem &p_;
  CausalHostFn fn_;
  ThreadPool &pool_;
  std::vector<float> out_;
};

inline bool refuse_causal(const Problem &p, std::string *why_not) {
  if (!p.causal)
    return false;
  *why_not = "computes Conv1d / ConvTranspose1d, not the causal depthwise conv1d";
  return true;
}

#if CONVBENCH_HAVE_CUDA

class CausalResidentPrepared final : public PreparedArm {
public:
  CausalResidentPrepared(const Problem &p, cuda::CausalKernel k, cuda::CausalOut out)
      : p_(p), conv_(*p.causal, k, out, causal_tensors(p, nullptr)) {}
  void call() override { conv_.launch(); }
  void *stream_begin() const override { return conv_.stream(); }
  void *stream_end() const override { return conv_.stream(); }
  bool enqueue_only() const override { return true; }
  void sync() override { device::sync_stream(conv_.stream()); }
  void output(float *y) override { conv_.download(y, y + p_.causal->output_elems()); }

private:
  const Problem &p_;
  cuda::ResidentCausal conv_;
};

class CausalPerCallPrepared final : public PreparedArm {
public:
  CausalPerCallPrepared(const Problem &p, cuda::CausalKernel k, cuda::CausalOut out)
      : p_(p), k_(k), out_kind_(out), out_(size_t(p.output_elems())) {}
  void call() override {
    cuda::per_call_causal(*p_.causal, k_, out_kind_, causal_tensors(p_, out_.data()));
  }
  void output(float *y) override { std::memcpy(y, out_.data(), out_.size() * sizeof(float)); }

private:
  const Problem &p_;
  cuda::CausalKernel k_;
  cuda::CausalOut out_kind_;
  std::vector<float> out_;
};

// One of the CUDA pair: its file names the kernel and the output type. Gated against cpu-f64 at
// a tolerance, and the tiled kernel bitwise against the register kernel of the same output type
// when both run (the pair's 0-ulp promise; on bf16 outputs that comparison is the one that hides
// order changes, kept to show it).
class CausalCudaArm : public Arm {
public:
  std::string name() const override {
    return "cuda-causal-" + cuda::to_string(kernel()) +
           (out() == cuda::CausalOut::bf16 ? "-bf16" : "");
  }
  bool device() const override { return true; }
  GateKind gate() const override { return GateKind::tolerance; }
  std::string bitwise_sibling() const override {
    return kernel() == cuda::CausalKernel::tiled
               ? "cuda-causal-register" + std::string(out() == cuda::CausalOut::bf16 ? "-bf16" : "")
               : std::string();
  }
  // f32: a sum of k O(1) products and SiLU's exp err by a few 2^-24 relative; bf16's store
  // alone by up to 2^-9 per cell.
  double tolerance() const override { return out() == cuda::CausalOut::bf16 ? 5e-3 : 1e-5; }
  std::string floor_kind() const override { return "fp32_fma"; }
  // f32 arithmetic, separate multiply and add (the host emulation's order); bf16 arms store y as
  // bf16, which is what their results carry.
  ArmFacts facts() const override {
    return {out() == cuda::CausalOut::bf16 ? ArmPrecision::bf16 : ArmPrecision::f32, "simt",
            ArmRole::candidate};
  }
  // No CUDA call: available() runs before the lease.
  bool available(std::string *why_not) const override { return gpu_visible(why_not); }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (!p.causal) {
      *why_not = "computes the causal depthwise conv1d only";
      return false;
    }
    return cuda::causal_supported(*p.causal, why_not);
  }
  double device_bytes(const Problem &p, const std::string &) const override {
    return p.causal ? p.causal->min_bytes() : 0.0;
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &staging,
                                       const ArmContext &) const override {
    if (staging == "resident")
      return std::make_unique<CausalResidentPrepared>(p, kernel(), out());
    return std::make_unique<CausalPerCallPrepared>(p, kernel(), out());
  }
  nlohmann::json describe(const Problem &p) const override {
    return {{"name", cuda::causal_kernel_name(*p.causal, kernel(), out())}};
  }
  virtual cuda::CausalKernel kernel() const = 0;
  virtual cuda::CausalOut out() const { return cuda::CausalOut::f32; }
};

#endif // CONVBENCH_HAVE_CUDA

} // namespace convbench::bench
