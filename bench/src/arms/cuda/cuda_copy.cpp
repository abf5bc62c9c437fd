// cuda-copy: the memory ceiling of a case. A device-to-device cudaMemcpyAsync on its own stream
// that reads half of the case's least bytes and writes the other half (Problem::min_bytes, each
// half rounded up to 16 bytes): "the causal pair at >= 90% of the copy's bandwidth" is its time
// over the pair's, in the same rounds.
#include "arms/ceiling_arm.hpp"

namespace convbench::bench {
class CudaCopy final : public CeilingArm {
public:
  std::string name() const override { return "cuda-copy"; }
  ArmFacts facts() const override { return {std::nullopt, "memcpy", ArmRole::ceiling}; }
  double device_bytes(const Problem &p, const std::string &) const override {
    return ceilings::DeviceCopy::device_bytes(ceilings::copy_bytes(p.min_bytes()));
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &,
                                       const ArmContext &) const override {
    return std::make_unique<CopyPrepared>(p, ceilings::copy_bytes(p.min_bytes()), p.seed | 1);
  }
  nlohmann::json describe(const Problem &p) const override {
    const double n = double(ceilings::copy_bytes(p.min_bytes()));
    return {{"name", "cudaMemcpyAsync device to device"}, {"read_bytes", n}, {"written_bytes", n}};
  }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaCopy)
