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
#include <stdexcept>
#include <string>

#include "arms/cuda_arm.hpp"

namespace convbench::bench {
namespace {

class CudaForwardTileArm final : public CudaArm {
public:
  explicit CudaForwardTileArm(const cuda::ForwardTile &t)
      : tile_(t), name_("cuda-f32@fwd-" + std::to_string(t.bm) + "x" + std::to_string(t.bn) + "-s" +
                        std::to_string(t.split)) {}
  std::string name() const override { return name_; }
  bool hidden() const override { return true; }
  GateKind gate() const override { return base().gate(); }
  double tolerance() const override { return base().tolerance(); }
  ArmFacts facts() const override { return base().facts(); }
  std::string floor_kind() const override { return base().floor_kind(); }
  cuda::Accum accum() const override { return base().accum(); }
  cuda::Kernel kernel() const override { return base().kernel(); }
  cuda::Block block() const override { return tile_; }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (!CudaArm::supports(p, why_not)) // what every CUDA arm refuses
      return false;
    if (p.shapes.size() != 1) { // a plan is chosen per stage shape, not over the chain
      if (why_not)
        *why_not = "a forward tile plan is timed per stage, not over the chain";
      return false;
    }
    const std::string why = cuda::forward_tile_unsupported_reason(p.shapes[0], tile_);
    if (!why.empty()) {
      if (why_not)
        *why_not = name_.substr(name_.find('@') + 1) + ": " + why;
      return false;
    }
    return true;
  }

private:
  // cuda-f32, registered by its own file; looked up once every static registration has run.
  const CudaArm &base() const {
    const auto *a = dynamic_cast<const CudaArm *>(find_arm("cuda-f32"));
    if (!a)
      throw std::logic_error(name_ + ": its arm cuda-f32 is not registered");
    return *a;
  }
  cuda::ForwardTile tile_;
  std::string name_;
};

bool register_forward_tile_arms() {
  for (const cuda::ForwardTile &t : cuda::forward_tile_variants())
    register_arm(std::make_unique<CudaForwardTileArm>(t));
  return true;
}
[[maybe_unused]] const bool registered = register_forward_tile_arms();

} // namespace
} // namespace convbench::bench
