// What the cuBLAS ceiling arms share: each computes its case's GEMM (kernels/cublas: the
// polyphase product of a ConvTranspose1d, the implicit GEMM of a Conv1d; the convolution's
// multiply-adds, no scatter, no bias), timed in the same rounds as every arm, resident staging,
// single stages, only when --arms names them. Role "ceiling": the gate checks their GEMM against
// the host's f64 product (GateKind::gemm) instead of comparing a convolution they do not compute.
#pragma once

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_CUBLAS

#include <algorithm>
#include <limits>

#include "arms/causal_arm.hpp"
#include "convbench/cublas_gemm.hpp"
#include "core/device_gate.hpp"
#include "plan/arm.hpp"

namespace convbench::bench {

class CublasPrepared final : public PreparedArm {
public:
  CublasPrepared(const Problem &p, cublas::Mode mode)
      : n_(size_t(p.output_elems())), gemm_(cublas::conv_gemm(p.shapes[0]), mode, p.seed | 1) {}
  void call() override { gemm_.launch(); }
  void *stream_begin() const override { return gemm_.stream(); }
  void *stream_end() const override { return gemm_.stream(); }
  bool enqueue_only() const override { return true; }
  void sync() override { gemm_.sync(); }
  // No convolution is computed: NaN, should anything ask.
  void output(float *y) override {
    gemm_.sync();
    std::fill(y, y + n_, std::numeric_limits<float>::quiet_NaN());
  }
  GateResult own_check() override {
    gemm_.poison_output(); // a product never written fails
    gemm_.launch();
    const cublas::GemmCheck k = gemm_.check();
    GateResult g;
    g.kind = GateKind::gemm;
    g.pass = k.pass();
    g.cells = k.cells;
    g.max_abs_err = k.finite ? k.max_abs_err : std::numeric_limits<double>::infinity();
    g.rel_l2_err = k.rel_l2_err;
    g.tolerance = k.tolerance;
    return g;
  }
  nlohmann::json chosen() const override { return {{"call", gemm_.math()}}; }

private:
  size_t n_;
  cublas::Gemm gemm_;
};

class CublasArm : public Arm {
public:
  std::string name() const override { return "cublas-" + cublas::to_string(mode()); }
  bool device() const override { return true; }
  GateKind gate() const override { return GateKind::gemm; }
  double tolerance() const override { return cublas::tolerance(mode()); }
  // No CUDA call, no handle: available() runs before the lease (prepare creates the handle).
  bool available(std::string *why_not) const override {
    return gpu_visible(why_not) && cublas::cublas_library_available(why_not);
  }
  std::vector<std::string> stagings() const override { return {"resident"}; }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (refuse_causal(p, why_not))
      return false;
    if (p.shapes.size() != 1) {
      *why_not = "a cuBLAS ceiling is one stage's GEMM, not a sequence (chain, generator)";
      return false;
    }
    return cublas::gemm_supported(p.shapes[0], why_not);
  }
  double device_bytes(const Problem &p, const std::string &) const override {
    return cublas::Gemm::device_bytes(cublas::conv_gemm(p.shapes[0]), mode());
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &,
                                       const ArmContext &) const override {
    return std::make_unique<CublasPrepared>(p, mode());
  }
  nlohmann::json describe(const Problem &p) const override {
    const cublas::GemmShape g = cublas::conv_gemm(p.shapes[0]);
    return {{"name", "cuBLAS " + cublas::to_string(mode()) + " GEMM"},
            {"gemm", {{"m", g.m}, {"n", g.n}, {"k", g.k}, {"layout", "column-major, A and B N"}}},
            {"issued_macs", g.macs()}};
  }
  // Run only when --arms names them (cublas-*): the default set, the main job, stays as it was.
  bool hidden() const override { return true; }
  virtual cublas::Mode mode() const = 0;
};

} // namespace convbench::bench

#endif
