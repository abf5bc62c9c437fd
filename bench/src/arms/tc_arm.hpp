// What the tensor-core arms (cuda-tf32, cuda-f64-dmma; kernels/tc) share: both staging modes over
// one or more stages, as CudaArm does for the SIMT kernels. Compiled only when the build links
// convbench_tc (which defines CONVBENCH_HAVE_TC), so this file is inert until bench_core links it.
#pragma once

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_TC

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "arm.hpp"
#include "convbench/cuda_conv.hpp"
#include "convbench/tc_conv.hpp"
#include "device.hpp"

namespace convbench::bench {

// resident: every stage's weights and buffers on the device; the chain hands device buffers from
// stage to stage, each stage's stream waiting on the previous one (as CudaResidentPrepared).
class TcResidentPrepared final : public PreparedArm {
public:
  TcResidentPrepared(const Problem &p, tc::Precision prec) {
    for (size_t i = 0; i < p.shapes.size(); ++i) {
      convs_.push_back(std::make_unique<tc::ResidentTc>(
          p.shapes[i], prec, p.weights[i].data(), p.shapes[i].bias ? p.biases[i].data() : nullptr));
      links_.push_back(std::make_unique<device::StreamLink>());
    }
    convs_[0]->upload_input(p.input.data());
  }
  void call() override {
    const size_t n = convs_.size();
    if (n > 1) // the next call's first stage overwrites what the last one's second stage reads
      links_[0]->link(convs_[n - 1]->stream(), convs_[0]->stream());
    convs_[0]->launch();
    for (size_t i = 1; i < n; ++i) {
      links_[i]->link(convs_[i - 1]->stream(), convs_[i]->stream());
      convs_[i]->launch(convs_[i - 1]->d_output(), convs_[i]->d_output());
    }
  }
  void *stream_begin() const override { return convs_.front()->stream(); }
  void *stream_end() const override { return convs_.back()->stream(); }
  void sync() override {
    for (auto &c : convs_)
      device::sync_stream(c->stream());
  }
  void output(float *y) override {
    sync();
    convs_.back()->download_output(y);
  }

private:
  std::vector<std::unique_ptr<tc::ResidentTc>> convs_;
  std::vector<std::unique_ptr<device::StreamLink>> links_;
};

// per-call: each stage one naive provider call; the chain hands host buffers from call to call.
class TcPerCallPrepared final : public PreparedArm {
public:
  TcPerCallPrepared(const Problem &p, tc::Precision prec) : p_(p), prec_(prec) {
    for (const auto &s : p.shapes)
      stage_out_.emplace_back(size_t(s.output_elems()));
  }
  void call() override {
    const float *x = p_.input.data();
    for (size_t i = 0; i < p_.shapes.size(); ++i) {
      tc::per_call_tc(p_.shapes[i], prec_, x, p_.weights[i].data(),
                      p_.shapes[i].bias ? p_.biases[i].data() : nullptr, stage_out_[i].data());
      x = stage_out_[i].data();
    }
  }
  void output(float *y) override {
    std::memcpy(y, stage_out_.back().data(), stage_out_.back().size() * sizeof(float));
  }

private:
  const Problem &p_;
  tc::Precision prec_;
  std::vector<std::vector<float>> stage_out_;
};

class TcArm : public Arm {
public:
  std::string name() const override { return "cuda-" + tc::to_string(precision()); }
  bool device() const override { return true; }
  GateKind gate() const override { return GateKind::tolerance; }
  bool available(std::string *why_not) const override { return cuda::device_available(why_not); }
  bool supports(const Problem &p, std::string *why_not) const override {
    for (const auto &s : p.shapes)
      if (!tc::tc_supported(s, why_not))
        return false;
    return true;
  }
  double device_bytes(const Problem &p, const std::string &staging) const override {
    double sum = 0, most = 0;
    for (const auto &s : p.shapes) {
      // The split-K workspace too (up0 at 96 frames: 3 partial outputs).
      const double b = 4.0 * (double(s.input_elems()) + double(s.weight_elems()) + double(s.cout) +
                              double(s.output_elems())) +
                       double(tc::tc_workspace_bytes(s, precision()));
      sum += b;
      most = std::max(most, b);
    }
    return staging == "resident" ? sum : most;
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &staging,
                                       const ArmContext &) const override {
    if (staging == "resident")
      return std::make_unique<TcResidentPrepared>(p, precision());
    return std::make_unique<TcPerCallPrepared>(p, precision());
  }
  // issued_macs counts tensor-core multiply-adds (HMMA / DMMA), not FFMA / DFMA: the fp32 and
  // fp64 instruction counters of profiles/ do not see them.
  nlohmann::json describe(const Problem &p) const override {
    std::string name;
    int64_t macs = 0;
    for (const auto &s : p.shapes) {
      const std::string k = tc::tc_kernel_name(s, precision());
      if (name.find(k) == std::string::npos)
        name += (name.empty() ? "" : " | ") + k;
      macs += tc::tc_issued_macs(s, precision());
    }
    return {{"name", name}, {"issued_macs", macs}};
  }
  virtual tc::Precision precision() const = 0;
};

} // namespace convbench::bench

#endif
