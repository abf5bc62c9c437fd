// What every CUDA arm shares: the two staging modes over one or more stages, the device bytes
// and the kernel description. A CUDA arm's file only names itself, its accumulator, gate and
// floor; the tensor-core arms (tc_arm.hpp) reuse the stagings with their own resident class and
// per-call function.
#pragma once

#if CONVBENCH_HAVE_CUDA

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "arms/causal_arm.hpp"
#include "convbench/cuda_conv.hpp"
#include "core/device_gate.hpp"
#include "measurement/device.hpp"
#include "plan/arm.hpp"

namespace convbench::bench {

// resident: every stage's weights and buffers on the device; the chain passes device buffers
// from stage to stage, each stage's stream waiting on the previous one. Conv is a resident
// convolution (cuda::ResidentConv, tc::ResidentTc): upload_input, launch(), launch(d_x, d_y),
// download_output, stream, d_output; `make(shape, w, bias)` builds one per stage.
template <class Conv> class ResidentPrepared final : public PreparedArm {
public:
  template <class Make> ResidentPrepared(const Problem &p, Make make) {
    for (size_t i = 0; i < p.shapes.size(); ++i) {
      convs_.push_back(
          make(p.shapes[i], p.weights[i].data(), p.shapes[i].bias ? p.biases[i].data() : nullptr));
      links_.push_back(std::make_unique<device::StreamLink>());
    }
    convs_[0]->upload_input(p.input.data());
  }
  void call() override {
    size_t n = convs_.size();
    // The next call's first stage overwrites what the last one's second stage reads.
    if (n > 1)
      links_[0]->link(convs_[n - 1]->stream(), convs_[0]->stream());
    convs_[0]->launch();
    for (size_t i = 1; i < n; ++i) {
      links_[i]->link(convs_[i - 1]->stream(), convs_[i]->stream());
      convs_[i]->launch(convs_[i - 1]->d_output(), convs_[i]->d_output());
    }
  }
  void *stream_begin() const override { return convs_.front()->stream(); }
  void *stream_end() const override { return convs_.back()->stream(); }
  bool enqueue_only() const override { return true; }
  void sync() override {
    for (auto &c : convs_)
      device::sync_stream(c->stream());
  }
  void output(float *y) override {
    sync();
    convs_.back()->download_output(y);
  }

private:
  std::vector<std::unique_ptr<Conv>> convs_;
  std::vector<std::unique_ptr<device::StreamLink>> links_;
};

// per-call: each stage is one naive provider call (allocate, upload, launch, download, free);
// the chain hands host buffers from call to call, as chained naive calls would.
// `conv(shape, x, w, bias, y)` is the synchronous provider call.
template <class Call> class PerCallPrepared final : public PreparedArm {
public:
  PerCallPrepared(const Problem &p, Call conv) : p_(p), conv_(std::move(conv)) {
    for (const auto &s : p.shapes)
      stage_out_.emplace_back(size_t(s.output_elems()));
  }
  void call() override {
    const float *x = p_.input.data();
    for (size_t i = 0; i < p_.shapes.size(); ++i) {
      conv_(p_.shapes[i], x, p_.weights[i].data(),
            p_.shapes[i].bias ? p_.biases[i].data() : nullptr, stage_out_[i].data());
      x = stage_out_[i].data();
    }
  }
  void output(float *y) override {
    std::memcpy(y, stage_out_.back().data(), stage_out_.back().size() * sizeof(float));
  }

private:
  const Problem &p_;
  Call conv_;
  std::vector<std::vector<float>> stage_out_;
};

template <class Conv, class Make, class Call>
std::unique_ptr<PreparedArm> prepare_staging(const Problem &p, const std::string &staging,
                                             Make make, Call call) {
  if (staging == "resident")
    return std::make_unique<ResidentPrepared<Conv>>(p, std::move(make));
  return std::make_unique<PerCallPrepared<Call>>(p, std::move(call));
}

// Device bytes of a run: the stages' tensors (+ extra(shape), e.g. a workspace) -- all of them
// resident, the largest stage per-call.
template <class Extra>
double staged_device_bytes(const Problem &p, const std::string &staging, Extra extra) {
  double sum = 0, most = 0;
  for (const auto &s : p.shapes) {
    const double b = 4.0 * (double(s.input_elems()) + double(s.weight_elems()) + double(s.cout) +
                            double(s.output_elems())) +
                     extra(s);
    sum += b;
    most = std::max(most, b);
  }
  return staging == "resident" ? sum : most;
}

// The record's "kernel": the distinct kernel names over the stages and their issued MACs.
template <class Name, class Macs>
nlohmann::json describe_kernels(const Problem &p, Name name_of, Macs macs_of) {
  std::string name;
  int64_t macs = 0;
  for (const auto &s : p.shapes) {
    const std::string k = name_of(s);
    if (name.find(k) == std::string::npos)
      name += (name.empty() ? "" : " | ") + k;
    macs += macs_of(s);
  }
  return {{"name", name}, {"issued_macs", macs}};
}

class CudaArm : public Arm {
public:
  bool device() const override { return true; }
  // No CUDA call: available() runs before the lease.
  bool available(std::string *why_not) const override { return gpu_visible(why_not); }
  bool supports(const Problem &p, std::string *why_not) const override {
    return !refuse_causal(p, why_not);
  }
  double device_bytes(const Problem &p, const std::string &staging) const override {
    return staged_device_bytes(p, staging, [](const ConvShape &) { return 0.0; });
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &staging,
                                       const ArmContext &) const override {
    const cuda::Accum acc = accum();
    const cuda::Kernel k = kernel();
    const cuda::Block blk = block();
    return prepare_staging<cuda::ResidentConv>(
        p, staging,
        [acc, k, blk](const ConvShape &s, const float *w, const float *b) {
          return std::make_unique<cuda::ResidentConv>(s, acc, w, b, k, blk);
        },
        [acc, k, blk](const ConvShape &s, const float *x, const float *w, const float *b,
                      float *y) { cuda::per_call_conv(s, acc, x, w, b, y, k, blk); });
  }
  nlohmann::json describe(const Problem &p) const override {
    const cuda::Accum acc = accum();
    const cuda::Kernel k = kernel();
    const cuda::Block blk = block();
    return describe_kernels(
        p, [&](const ConvShape &s) { return cuda::kernel_name(s, acc, k, blk); },
        [&](const ConvShape &s) { return cuda::issued_macs(s, acc, k, blk); });
  }
  virtual cuda::Accum accum() const = 0;
  virtual cuda::Kernel kernel() const { return cuda::Kernel::best; }
  // The fast kernel's block shape; nullopt: its tuned choice per shape.
  virtual cuda::Block block() const { return std::nullopt; }
};

// A hidden variant of a registered CUDA arm, "<base>@<variant>", its kernel choice forced by
// block(): the base arm's gate (a variant that computes a wrong answer is refused, never timed),
// tolerance, facts, floor, accumulator and kernel; single stages only (a kernel choice is made
// per stage shape), and what variant_unsupported() names refused with the reason, never another
// choice run in the variant's name.
class CudaVariantArm : public CudaArm {
public:
  CudaVariantArm(std::string base, const std::string &variant)
      : base_(std::move(base)), name_(base_ + "@" + variant) {}
  std::string name() const override { return name_; }
  bool hidden() const override { return true; }
  GateKind gate() const override { return base().gate(); }
  double tolerance() const override { return base().tolerance(); }
  ArmFacts facts() const override { return base().facts(); }
  std::string floor_kind() const override { return base().floor_kind(); }
  cuda::Accum accum() const override { return base().accum(); }
  cuda::Kernel kernel() const override { return base().kernel(); }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (!CudaArm::supports(p, why_not)) // what every CUDA arm refuses
      return false;
    if (p.shapes.size() != 1) {
      if (why_not)
        *why_not = per_stage_reason();
      return false;
    }
    const std::string why = variant_unsupported(p.shapes[0]);
    if (!why.empty() && why_not)
      *why_not = why;
    return why.empty();
  }

protected:
  // Why the forced choice cannot run `s` ("" where it can), and why a chain is refused.
  virtual std::string variant_unsupported(const ConvShape &s) const = 0;
  virtual std::string per_stage_reason() const = 0;

private:
  // The arm this one is a variant of (registered by its own file; looked up once every static
  // registration has run).
  const CudaArm &base() const {
    const auto *a = dynamic_cast<const CudaArm *>(find_arm(base_));
    if (!a)
      throw std::logic_error(name_ + ": its arm " + base_ + " is not registered");
    return *a;
  }
  std::string base_;
  std::string name_;
};

} // namespace convbench::bench

#endif // CONVBENCH_HAVE_CUDA
