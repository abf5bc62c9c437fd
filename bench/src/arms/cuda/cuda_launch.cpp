// cuda-launch: the launch ceiling of a case. One block of one thread stores the launch's sequence
// number to one device word, on its own stream: a decode step (L = 1) is held to "within 2x an
// empty launch", its time over the step's in the same rounds.
#include "arms/ceiling_arm.hpp"

namespace convbench::bench {
class CudaLaunch final : public CeilingArm {
public:
  std::string name() const override { return "cuda-launch"; }
  ArmFacts facts() const override { return {std::nullopt, "launch", ArmRole::ceiling}; }
  double device_bytes(const Problem &, const std::string &) const override {
    return ceilings::EmptyLaunch::device_bytes();
  }
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &,
                                       const ArmContext &) const override {
    return std::make_unique<LaunchPrepared>(p);
  }
  nlohmann::json describe(const Problem &) const override {
    return {{"name", "empty launch: 1 block x 1 thread storing its sequence number"}};
  }
};
} // namespace convbench::bench

CONVBENCH_REGISTER_ARM(convbench::bench::CudaLaunch)
