#include "leasing/leasing.hpp"

#include <iostream>

#include "plan/plan.hpp"

namespace convbench::bench {

std::unique_ptr<lease::RunLease> open_lease(const Plan &plan, const std::string &run_id) {
  lease::RunLeaseOptions lo;
  lo.no_lease = plan.opt.no_lease;
  lo.gpu_uuid = plan.any_device ? plan.gpu.uuid : ""; // a host-only run leases the CPUs
  lo.run_id = run_id;
  lo.wait_s = plan.opt.lease_wait;
  // The least the plan can take (the lease warns when less time is left, e.g. in a Slurm job).
  lo.estimate_s = double(plan.cases.size()) * plan.opt.reps * plan.opt.min_time;
  return lease::RunLease::open(lo);
}

LeaseRelease::~LeaseRelease() {
  try {
    lease_->release();
  } catch (const std::exception &e) {
    std::cerr << "bench_conv: warning: lease release: " << e.what() << "\n";
  }
}

} // namespace convbench::bench
