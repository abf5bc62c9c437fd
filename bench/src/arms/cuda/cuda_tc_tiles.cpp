// The wgmma kernels' tile sweep: cuda-tf32 and cuda-f32x3 with the orientation and tile fixed:
// rows on M with wgmma N and the cluster split, "<arm>@rows-n<N>-s<split>"
// (cuda-tf32@rows-n128-s2), positions on M with N and the groups per block,
// "<arm>@pos-n<N>-g<groups>" (cuda-tf32@pos-n24-g2); the plan's own tile with positions on M in
// persistent blocks, or one tile per block, "<arm>@persistent" and "<arm>@one-tile"; the plan's own
// tile with positions on M and at most S pipeline buffers, "<arm>@stages<S>"; and
// cuda-f64-dmma's DMMA tiles, rows x columns and the split, "cuda-f64-dmma@t128x64-s2". Hidden:
// `--arms 'cuda-tf32@*'` names them all.
// Each is its arm with the plan forced: the same gate (a variant that computes a wrong answer is
// refused, never timed), floor and stagings; it runs the cases whose shape takes exactly that
// variant on this device and leaves the others out of the plan with the reason. What the sweep
// measures checks the plans' cost models (wg_plan.cpp, dm_plan.cpp).
#include <memory>
#include <string>

#include "arms/tc_arm.hpp"

#if CONVBENCH_HAVE_CUDA && CONVBENCH_HAVE_TC
namespace convbench::bench {
namespace {

class TcTileArm final : public TcArm {
public:
  TcTileArm(tc::Precision p, const tc::TcOptions &o, double tolerance)
      : p_(p), tolerance_(tolerance), name_("cuda-" + tc::to_string(p) + "@" + variant(o)), o_(o) {}
  static std::string variant(const tc::TcOptions &o) {
    if (o.bm)
      return "t" + std::to_string(o.bm) + "x" + std::to_string(o.n) + "-s" +
             std::to_string(o.split);
    if (o.stages)
      return "stages" + std::to_string(o.stages);
    if (o.persist && !o.along)
      return o.persist == 2 ? "persistent" : "one-tile";
    return o.along == 1 ? "rows-n" + std::to_string(o.n) + "-s" + std::to_string(o.split)
                        : "pos-n" + std::to_string(o.n) + "-g" + std::to_string(o.gpb);
  }
  std::string name() const override { return name_; }
  bool hidden() const override { return true; }
  double tolerance() const override { return tolerance_; }
  // The forced variants are the Hopper kernels only (wgmma, or mma.sync DMMA for f64).
  ArmFacts facts() const override {
    if (p_ == tc::Precision::f64)
      return {ArmPrecision::f64, "dmma", ArmRole::candidate};
    return {p_ == tc::Precision::f32x3 ? ArmPrecision::f32x3 : ArmPrecision::tf32, "wgmma-tf32",
            ArmRole::candidate};
  }
  std::string floor_kind() const override { // cuda-f64-dmma's, for its DMMA tiles
    return p_ == tc::Precision::f64 ? "fp64_dmma" : "fp32_fma";
  }
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
  // The variants of kernels/tc/src/wg_plan.hpp (kTileNs, kRowNs, kMaxAccumulators), with the
  // tolerances of cuda-tf32 and cuda-f32x3 (their arm files).
  for (tc::Precision p : {tc::Precision::tf32, tc::Precision::f32x3}) {
    const bool x3 = p == tc::Precision::f32x3;
    const double tol = x3 ? 1e-4 : 5e-3;
    for (int n : {64, 96, 128, 192, 256})
      for (int split = 1; split <= 8; ++split)
        if (!x3 || n <= 128) {
          tc::TcOptions o;
          o.along = 1;
          o.n = n;
          o.split = split;
          register_arm(std::make_unique<TcTileArm>(p, o, tol));
        }
    for (int n : {8, 16, 24, 32, 48, 64, 96, 128, 192})
      for (int gpb : {1, 2})
        if (gpb * n / 2 * (x3 ? 2 : 1) <= 96) {
          tc::TcOptions o;
          o.along = 2;
          o.n = n;
          o.gpb = gpb;
          register_arm(std::make_unique<TcTileArm>(p, o, tol));
        }
    // The plan's own tile, positions on M, one tile per block and in persistent blocks.
    for (int persist : {1, 2}) {
      tc::TcOptions o;
      o.persist = persist;
      register_arm(std::make_unique<TcTileArm>(p, o, tol));
    }
    // The plan's own tile with positions on M and fewer pipeline buffers than it takes.
    for (int stages : {2, 3, 4}) {
      tc::TcOptions o;
      o.stages = stages;
      register_arm(std::make_unique<TcTileArm>(p, o, tol));
    }
  }
  // The DMMA plan's tiles and splits, cuda-f64-dmma's tolerance.
  for (const tc::DmmaTile &t : tc::dmma_tiles())
    for (int split = 1; split <= tc::dmma_max_split(); ++split) {
      tc::TcOptions o;
      o.bm = t.bm;
      o.n = t.bn;
      o.split = split;
      register_arm(std::make_unique<TcTileArm>(tc::Precision::f64, o, 1e-9));
    }
  return true;
}
[[maybe_unused]] const bool registered = register_tile_arms();

} // namespace
} // namespace convbench::bench
#endif
