// What the cuDNN peer arms share: resident staging only (cuDNN's Find runs once per shape in the
// constructor, outside any timed region; a per-call Find is not what a user's framework does),
// single stages only (CudnnConv owns its buffers; chaining would add copies that are not cuDNN's).
#pragma once

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_CUDNN

#include <algorithm>
#include <iostream>
#include <limits>

#include "arms/causal_arm.hpp"
#include "convbench/cudnn_conv.hpp"
#include "core/device_gate.hpp"
#include "measurement/device.hpp"
#include "plan/arm.hpp"

namespace convbench::bench {

// --cudnn-algo checks names against the same counts (cudnn_algo.hpp, which has no cuDNN header).
static_assert(cudnn::kFwdAlgoCount == kCudnnFwdAlgos &&
              cudnn::kBwdDataAlgoCount == kCudnnBwdDataAlgos);

class CudnnPrepared final : public PreparedArm {
public:
  CudnnPrepared(const Problem &p, cudnn::Mode mode, const std::optional<cudnn::Pinned> &pin)
      : conv_(p.shapes[0], mode, p.weights[0].data(),
              p.shapes[0].bias ? p.biases[0].data() : nullptr, nullptr, pin) {
    conv_.upload_input(p.input.data());
  }
  void call() override { conv_.launch(); }
  void *stream_begin() const override { return conv_.stream(); }
  void *stream_end() const override { return conv_.stream(); }
  bool enqueue_only() const override { return true; }
  void sync() override { device::sync_stream(conv_.stream()); }
  void output(float *y) override { conv_.download_output(y); }
  nlohmann::json chosen() const override {
    return {{"algorithm", conv_.algorithm()},
            {"algorithm_source", conv_.pinned() ? "pinned" : "find"},
            {"workspace_bytes", conv_.workspace_bytes()}};
  }

private:
  cudnn::CudnnConv conv_;
};

// A pinned algorithm cuDNN does not run for the shape: NaN output, so the gate fails and the
// case is never timed; the kernel block says which algorithm and why.
class CudnnRefused final : public PreparedArm {
public:
  CudnnRefused(size_t n, std::string algorithm, std::string why)
      : n_(n), algorithm_(std::move(algorithm)), why_(std::move(why)) {}
  void call() override {}
  void output(float *y) override { std::fill(y, y + n_, std::numeric_limits<float>::quiet_NaN()); }
  nlohmann::json chosen() const override {
    return {{"algorithm", algorithm_}, {"algorithm_source", "pinned"}, {"refused", why_}};
  }

private:
  size_t n_;
  std::string algorithm_, why_;
};

class CudnnArm : public Arm {
public:
  std::string name() const override { return "cudnn-" + cudnn::to_string(mode()); }
  bool device() const override { return true; }
  GateKind gate() const override { return GateKind::tolerance; }
  // No CUDA call, no handle: available() runs before the lease (prepare creates the handle).
  bool available(std::string *why_not) const override {
    return gpu_visible(why_not) && cudnn::cudnn_library_available(why_not);
  }
  std::vector<std::string> stagings() const override { return {"resident"}; }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (refuse_causal(p, why_not))
      return false;
    if (p.shapes.size() != 1) {
      *why_not = "the cuDNN peer runs single stages, not a sequence (chain, generator)";
      return false;
    }
    if (!cudnn::cudnn_supported(p.shapes[0], mode())) {
      *why_not = "shape not supported by the cuDNN formulation";
      return false;
    }
    return true;
  }
  double device_bytes(const Problem &p, const std::string &) const override {
    const auto &s = p.shapes[0];
    const double elem = mode() == cudnn::Mode::f64 ? 8.0 : 4.0;
    return elem * (double(s.input_elems()) + double(s.weight_elems()) + double(s.cout) +
                   double(s.output_elems()));
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &,
                                       const ArmContext &ctx) const override {
    const CudnnAlgo *pin = nullptr;
    if (ctx.cudnn_algos)
      if (auto it = ctx.cudnn_algos->find(ctx.case_id); it != ctx.cudnn_algos->end())
        pin = &it->second;
    if (!pin)
      return std::make_unique<CudnnPrepared>(p, mode(), std::nullopt);
    try {
      return std::make_unique<CudnnPrepared>(p, mode(), cudnn::Pinned{pin->index, pin->math});
    } catch (const cudnn::AlgoRefused &e) {
      std::cerr << "bench_conv: " << ctx.case_id << ": --cudnn-algo " << pin->name()
                << " refused: " << e.what() << "\n";
      return std::make_unique<CudnnRefused>(size_t(p.output_elems()), pin->name(), e.what());
    }
  }
  nlohmann::json describe(const Problem &p) const override {
    // The algorithm cuDNN's Find picks is known only once prepared (a throwaway instance would
    // run Find twice): the library and mode here, the algorithm from CudnnPrepared::chosen().
    (void)p;
    return {{"name", "cuDNN " + cudnn::to_string(mode())}};
  }
  virtual cudnn::Mode mode() const = 0;
};

} // namespace convbench::bench

#endif
