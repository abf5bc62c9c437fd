// What the cuDNN peer arms share: resident staging only (cuDNN's Find runs once per shape in the
// constructor, outside any timed region; a per-call Find is not what a user's framework does),
// single stages only (CudnnConv owns its buffers; chaining would add copies that are not cuDNN's).
#pragma once

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_CUDNN

#include "arm.hpp"
#include "arms/causal_arm.hpp"
#include "convbench/cudnn_conv.hpp"
#include "device.hpp"

namespace convbench::bench {

class CudnnPrepared final : public PreparedArm {
public:
  CudnnPrepared(const Problem &p, cudnn::Mode mode)
      : conv_(p.shapes[0], mode, p.weights[0].data(),
              p.shapes[0].bias ? p.biases[0].data() : nullptr) {
    conv_.upload_input(p.input.data());
  }
  void call() override { conv_.launch(); }
  void *stream_begin() const override { return conv_.stream(); }
  void *stream_end() const override { return conv_.stream(); }
  bool enqueue_only() const override { return true; }
  void sync() override { device::sync_stream(conv_.stream()); }
  void output(float *y) override { conv_.download_output(y); }
  nlohmann::json chosen() const override {
    return {{"algorithm", conv_.algorithm()}, {"workspace_bytes", conv_.workspace_bytes()}};
  }

private:
  cudnn::CudnnConv conv_;
};

class CudnnArm : public Arm {
public:
  std::string name() const override { return "cudnn-" + cudnn::to_string(mode()); }
  bool device() const override { return true; }
  GateKind gate() const override { return GateKind::tolerance; }
  bool available(std::string *why_not) const override { return cudnn::cudnn_available(why_not); }
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
                                       const ArmContext &) const override {
    return std::make_unique<CudnnPrepared>(p, mode());
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
