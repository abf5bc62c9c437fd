// INTERIM (replaced by the lease issue): no lease is taken; the block says so.
#include "convbench/lease/run_lease.hpp"

namespace convbench::lease {
namespace {
class NotCollected final : public RunLease {
 public:
  void verify_start() override {}
  void observe_sample(const std::string&, int, int, double) override {}
  void verify_end() override {}
  void release() override {}
  nlohmann::json to_json() const override { return {{"status", "not-collected"}}; }
  std::string verdict() const override { return "outside-lease"; }
};
}  // namespace
std::unique_ptr<RunLease> RunLease::open(const RunLeaseOptions&) {
  return std::make_unique<NotCollected>();
}
}  // namespace convbench::lease
