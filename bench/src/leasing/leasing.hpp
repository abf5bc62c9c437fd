// The run's lease: acquired (or adopted from `convlease run`) once the plan stands and before
// anything touches the GPU; its start verified before the first device call (run.cpp), its end
// after the last timed sample (the rounds step); released once this run is off the GPU, or on any
// other exit path.
#pragma once

#include <memory>
#include <string>

#include "convbench/lease/run_lease.hpp"

namespace convbench::bench {

struct Plan;

// Throws lease::LeaseRefused (exit 3) or another std::exception (exit 1).
std::unique_ptr<lease::RunLease> open_lease(const Plan &plan, const std::string &run_id);

// Releases the lease when the run leaves scope, whichever way it leaves.
class LeaseRelease {
public:
  explicit LeaseRelease(lease::RunLease *l) : lease_(l) {}
  ~LeaseRelease();
  LeaseRelease(const LeaseRelease &) = delete;
  LeaseRelease &operator=(const LeaseRelease &) = delete;

private:
  lease::RunLease *lease_;
};

} // namespace convbench::bench
