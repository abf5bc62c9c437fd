// What bench_conv needs of the lease module: one object per run. The lease module implements it
// over its backends (file, etcd, slurm); bench never touches a backend directly.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace convbench::lease {

// A busy resource, a forged/stale inherited token, or a policy that forbids this backend.
// bench_conv exits 3 with what() on one line.
class LeaseRefused : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The resource is held by someone else and stayed so for the whole wait (none: refused at once).
// what() names the holder; the caller adds its own way to wait (bench_conv --lease-wait S,
// convlease run --wait S).
class LeaseBusy : public LeaseRefused {
public:
  using LeaseRefused::LeaseRefused;
};

struct RunLeaseOptions {
  bool no_lease = false; // --no-lease: run, but record verdict "outside-lease"
  std::string gpu_uuid;  // empty: host-only run, resource "cpu"
  std::string run_id;    // the result's run_id, recorded as part of the holder
  double wait_s = 0;     // block up to this long for a busy resource; 0 = refuse at once
  double ttl_s = 0;      // 0 = the policy's TTL
  double estimate_s = 0; // the plan's expected duration (0 = unknown), for time-left warnings
};

class RunLease {
public:
  virtual ~RunLease() = default;
  // Adopts the lease inherited from `convlease run` (environment) or acquires one through the
  // site policy's backend (no policy: the file backend). Throws LeaseRefused.
  static std::unique_ptr<RunLease> open(const RunLeaseOptions &opt);

  // Before anything touches the leased device (bench_conv: before its first CUDA call): true when
  // the authority confirms the hold; a failure is recorded and the caller must not use the device.
  virtual bool verify_start() = 0;
  // Independent observation during one timed sample: processes other than us holding a context
  // on the GPU (-1 = unknown), and the foreign CPU share measured by the host probe.
  virtual void observe_sample(const std::string &case_id, int round, int foreign_gpu_processes,
                              double foreign_cpu_share) = 0;
  virtual void verify_end() = 0; // after the last timed sample
  virtual void release() = 0;
  // The result's lease block: backend, resource, holder, token, ttl, times, renewal gap, checks,
  // observation, verdict ("valid" | "void" | "outside-lease") and reasons.
  virtual nlohmann::json to_json() const = 0;
  virtual std::string verdict() const = 0;
};

} // namespace convbench::lease
