// The wgmma kernels' tile sweep: cuda-tf32 and cuda-f32x3 with the column tile and the cluster
// split fixed, named "<arm>@n<tile>-s<split>", e.g. cuda-tf32@n128-s2. Hidden: `--arms
// 'cuda-tf32@*'` names them all. Each is its arm with the plan forced: the same gate (a variant
// that computes a wrong answer is refused, never timed), floor and stagings; it runs the cases
// whose shape takes exactly that tile and split on this device and leaves the others out of the
// plan with the reason. What the sweep measures checks the plan's cost model (wg_plan.cpp).
#include <memory>
#include <string>

#include "arms/tc_arm.hpp"

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_TC
namespace convbench::bench {
namespace {

class TcTileArm final : public TcArm {
public:
  TcTileArm(tc::Precision p, int bn, int split, double tolerance)
      : p_(p), tolerance_(tolerance), name_("cuda-" + tc::to_string(p) + "@n" + std::to_string(bn) +
                                            "-s" + std::to_string(split)) {
    o_.bn = bn;
    o_.split = split;
  }
  std::string name() const override { return name_; }
  bool hidden() const override { return true; }
  double tolerance() const override { return tolerance_; }
  std::string floor_kind() const override { return "fp32_fma"; }
  tc::Precision precision() const override { return p_; }
  tc::TcOptions options() const override { return o_; }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (p.shapes.size() != 1) { // a tile is chosen per stage shape, not over the chain
      if (why_not)
        *why_not = "a tile is timed per stage, not over the chain";
      return false;
    }
    return TcArm::supports(p, why_not);
  }

private:
  tc::Precision p_;
  double tolerance_;
  std::string name_;
  tc::TcOptions o_;
};

bool register_tile_arms() {
  // The tolerances of cuda-tf32 and cuda-f32x3 (their arm files).
  for (int bn : {64, 96, 128, 192, 256})
    for (int split = 1; split <= 8; ++split) {
      register_arm(std::make_unique<TcTileArm>(tc::Precision::tf32, bn, split, 5e-3));
      if (bn <= 128)
        register_arm(std::make_unique<TcTileArm>(tc::Precision::f32x3, bn, split, 1e-4));
    }
  return true;
}
[[maybe_unused]] const bool registered = register_tile_arms();

} // namespace
} // namespace convbench::bench
#endif
