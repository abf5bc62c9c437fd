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

class CudaBlockArm final : public CudaVariantArm {
public:
  CudaBlockArm(std::string base, const fast::FastConfig &block)
      : CudaVariantArm(std::move(base), block.name()), block_(block) {}
  cuda::Block block() const override { return block_; }

protected:
  std::string per_stage_reason() const override {
    return "a block shape is timed per stage, not over the chain";
  }
  std::string variant_unsupported(const ConvShape &s) const override {
    const std::string why =
        fast::fast_config_unsupported_reason(s, block_, accum() == cuda::Accum::f64);
    return why.empty() ? why : "block " + block_.name() + ": " + why;
  }

private:
  fast::FastConfig block_;
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
