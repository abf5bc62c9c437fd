// The block-shape sweep's arms: cuda-f32, cuda-f64 and cuda-f64-fma, each in every compiled block
// shape of the fast polyphase kernel (kernels/fast/src/configs.hpp), named "<arm>@<block>", e.g.
// cuda-f32@t128-c8-k16-u16-b5. Hidden: `--arms 'cuda-f64@*'` names them all. Each is its arm
// with the block fixed: the same gate (so a block that computes a wrong answer is refused, never
// timed), floor and stagings; it runs the cases its block can run and leaves the others out of the
// plan with the reason. kernels/fast/tools/fast_tuning.py turns a sweep's records into the tuning
// table.
#include <memory>
#include <string>

#include "arms/cuda_arm.hpp"
#include "convbench/fast_conv.hpp"

namespace convbench::bench {
namespace {

class CudaBlockArm final : public CudaArm {
public:
  CudaBlockArm(std::string base, const fast::FastConfig &block)
      : base_(std::move(base)), block_(block), name_(base_ + "@" + block.name()) {}
  std::string name() const override { return name_; }
  bool hidden() const override { return true; }
  GateKind gate() const override { return base().gate(); }
  double tolerance() const override { return base().tolerance(); }
  ArmFacts facts() const override { return base().facts(); }
  std::string floor_kind() const override { return base().floor_kind(); }
  cuda::Accum accum() const override { return base().accum(); }
  cuda::Kernel kernel() const override { return base().kernel(); }
  cuda::Block block() const override { return block_; }
  bool supports(const Problem &p, std::string *why_not) const override {
    if (!CudaArm::supports(p, why_not)) // what every CUDA arm refuses
      return false;
    if (p.shapes.size() != 1) { // a block is chosen per stage shape; the chain runs each stage's
      if (why_not)
        *why_not = "a block shape is timed per stage, not over the chain";
      return false;
    }
    for (const auto &s : p.shapes) {
      const std::string why =
          fast::fast_config_unsupported_reason(s, block_, accum() == cuda::Accum::f64);
      if (!why.empty()) {
        if (why_not)
          *why_not = "block " + block_.name() + ": " + why;
        return false;
      }
    }
    return true;
  }

private:
  // The arm this one is a block of (registered by its own file; looked up once every static
  // registration has run).
  const CudaArm &base() const {
    const auto *a = dynamic_cast<const CudaArm *>(find_arm(base_));
    if (!a)
      throw std::logic_error(name_ + ": its arm " + base_ + " is not registered");
    return *a;
  }
  std::string base_;
  fast::FastConfig block_;
  std::string name_;
};

bool register_block_arms() {
  for (const auto &c : fast::fast_f32_configs())
    register_arm(std::make_unique<CudaBlockArm>("cuda-f32", c));
  for (const auto &c : fast::fast_configs()) // the f64 kernels: no split, no cp.async staging
    if (!c.f32_only()) {
      register_arm(std::make_unique<CudaBlockArm>("cuda-f64", c));
      register_arm(std::make_unique<CudaBlockArm>("cuda-f64-fma", c));
    }
  return true;
}
[[maybe_unused]] const bool registered = register_block_arms();

} // namespace
} // namespace convbench::bench
