// What every CUDA arm of the kernels module shares: the two staging modes over one or more
// stages. A CUDA arm's file only names itself, its accumulator, gate and floor.
#pragma once

#if CONVBENCH_HAVE_CUDA

#include <algorithm>
#include <cstring>
#include <vector>

#include "arm.hpp"
#include "convbench/cuda_conv.hpp"
#include "device.hpp"

namespace convbench::bench {

// resident: every stage's weights and buffers on the device; the chain passes device buffers
// from stage to stage, each stage's stream waiting on the previous one.
class CudaResidentPrepared final : public PreparedArm {
public:
  CudaResidentPrepared(const Problem &p, cuda::Accum acc, cuda::Kernel kernel) {
    for (size_t i = 0; i < p.shapes.size(); ++i) {
      convs_.push_back(std::make_unique<cuda::ResidentConv>(
          p.shapes[i], acc, p.weights[i].data(), p.shapes[i].bias ? p.biases[i].data() : nullptr,
          kernel));
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
  void sync() override {
    for (auto &c : convs_)
      device::sync_stream(c->stream());
  }
  void output(float *y) override {
    sync();
    convs_.back()->download_output(y);
  }

private:
  std::vector<std::unique_ptr<cuda::ResidentConv>> convs_;
  std::vector<std::unique_ptr<device::StreamLink>> links_;
};

// per-call: each stage is one naive provider call (allocate, upload, launch, download, free);
// the chain hands host buffers from call to call, as chained naive calls would.
class CudaPerCallPrepared final : public PreparedArm {
public:
  CudaPerCallPrepared(const Problem &p, cuda::Accum acc, cuda::Kernel kernel)
      : p_(p), acc_(acc), kernel_(kernel) {
    for (const auto &s : p.shapes)
      stage_out_.emplace_back(size_t(s.output_elems()));
  }
  void call() override {
    const float *x = p_.input.data();
    for (size_t i = 0; i < p_.shapes.size(); ++i) {
      cuda::per_call_conv(p_.shapes[i], acc_, x, p_.weights[i].data(),
                          p_.shapes[i].bias ? p_.biases[i].data() : nullptr, stage_out_[i].data(),
                          kernel_);
      x = stage_out_[i].data();
    }
  }
  void output(float *y) override {
    std::memcpy(y, stage_out_.back().data(), stage_out_.back().size() * sizeof(float));
  }

private:
  const Problem &p_;
  cuda::Accum acc_;
  cuda::Kernel kernel_;
  std::vector<std::vector<float>> stage_out_;
};

class CudaArm : public Arm {
public:
  bool device() const override { return true; }
  bool available(std::string *why_not) const override { return cuda::device_available(why_not); }
  double device_bytes(const Problem &p, const std::string &staging) const override {
    double sum = 0, most = 0;
    for (const auto &s : p.shapes) {
      double b = 4.0 * (double(s.input_elems()) + double(s.weight_elems()) + double(s.cout) +
                        double(s.output_elems()));
      sum += b;
      most = std::max(most, b);
    }
    return staging == "resident" ? sum : most;
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &staging,
                                       const ArmContext &) const override {
    if (staging == "resident")
      return std::make_unique<CudaResidentPrepared>(p, accum(), kernel());
    return std::make_unique<CudaPerCallPrepared>(p, accum(), kernel());
  }
  nlohmann::json describe(const Problem &p) const override {
    std::string name;
    int64_t macs = 0;
    for (const auto &s : p.shapes) {
      const std::string k = cuda::kernel_name(s, accum(), kernel());
      if (name.find(k) == std::string::npos)
        name += (name.empty() ? "" : " | ") + k;
      macs += cuda::issued_macs(s, accum(), kernel());
    }
    return {{"name", name}, {"issued_macs", macs}};
  }
  virtual cuda::Accum accum() const = 0;
  virtual cuda::Kernel kernel() const { return cuda::Kernel::best; }
};

} // namespace convbench::bench

#endif // CONVBENCH_HAVE_CUDA
