// The forward tile sweep's arms: cuda-f32 with its implicit-GEMM tile kernel's plan forced, every
// compiled tile shape with every split, named "cuda-f32@fwd-<bm>x<bn>-s<split>", e.g.
// cuda-f32@fwd-32x256-s3. Hidden: `--arms 'cuda-f32@fwd-*'` names them all (`cuda-f32@*` names
// them with the fast kernel's block shapes, `cuda-f32@t*` the block shapes only). Each is
// cuda-f32 with the plan forced: the same gate (a plan that computes a wrong answer is refused,
// never timed), tolerance, facts, floor and stagings; it runs the single Conv1d stages that
// take exactly its plan and leaves the others out of the plan with the reason, never running
// another plan in its name. What the sweep measures checks the plan's cost model
// (kernels/src/forward_tile_plan.cpp).
#include <memory>
#include <string>

#include "arms/cuda_arm.hpp"

namespace convbench::bench {
namespace {

class CudaForwardTileArm final : public CudaVariantArm {
public:
  explicit CudaForwardTileArm(const cuda::ForwardTile &t)
      : CudaVariantArm("cuda-f32", "fwd-" + std::to_string(t.bm) + "x" + std::to_string(t.bn) +
                                       "-s" + std::to_string(t.split)),
        tile_(t) {}
  cuda::Block block() const override { return tile_; }

protected:
  std::string per_stage_reason() const override {
    return "a forward tile plan is timed per stage, not over the chain";
  }
  std::string variant_unsupported(const ConvShape &s) const override {
    const std::string why = cuda::forward_tile_unsupported_reason(s, tile_);
    return why.empty() ? why : name().substr(name().find('@') + 1) + ": " + why;
  }

private:
  cuda::ForwardTile tile_;
};

bool register_forward_tile_arms() {
  for (const cuda::ForwardTile &t : cuda::forward_tile_variants())
    register_arm(std::make_unique<CudaForwardTileArm>(t));
  return true;
}
[[maybe_unused]] const bool registered = register_forward_tile_arms();

} // namespace
} // namespace convbench::bench
