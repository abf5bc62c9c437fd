#include "run.hpp"

#include <iostream>

#include "atomic_write.hpp"
#include "convbench/lease/lease.hpp"
#include "convbench/thread_pool.hpp"
#include "counter_pass.hpp"
#include "gate_pass.hpp"
#include "leasing.hpp"
#include "plan.hpp"
#include "record.hpp"
#include "report.hpp"
#include "rounds.hpp"
#include "sample.hpp"
#include "sysinfo.hpp"

namespace convbench::bench {

namespace {

int fail(int status, const std::string &what) {
  std::cerr << "bench_conv: " << what << "\n";
  return status;
}

// Everything after the lease is held; the caller releases it whichever way this returns.
int measure(Plan &plan, lease::RunLease &lease, RunOutcome &out) {
  ThreadPool pool(plan.threads);
  ArmContext ctx{&pool};
  std::optional<GpuProbe> gpu;
  if (plan.gpu.present)
    out.gpu_nvml = gpu.emplace(plan.gpu.pci_bus_id).facts();
  for (const auto &note : plan.skipped)
    std::cerr << "bench_conv: " << note << "\n";
  std::cerr << "bench_conv: " << plan.cases.size() << " cases (" << plan.problems.size()
            << " problems x arms x staging), " << plan.opt.reps << " rounds, " << plan.threads
            << " host threads\n";
  for (auto &p : plan.problems)
    fill_problem(*p, plan.opt.seed);
  const bool gate_passed = run_gate(plan, ctx, out.run_id);
  SampleTaker taker(plan.opt.min_time, plan.opt.device_timing == "queued",
                    gpu ? &*gpu : nullptr, plan.gpu.sm_count);
  out.order = run_rounds(plan, taker, lease);
  run_counter_pass(plan);
  const bool lease_void = lease.verdict() == "void";
  out.exit_status = !gate_passed ? kExitGate : lease_void ? kExitLease : kExitOk;
  out.lease = lease.to_json();
  write_atomically(plan.out_path, build_record(plan, out).dump(1) + "\n");
  std::cout << format_table(plan.cases, plan.floors) << "result: " << plan.out_path << "\n";
  if (!gate_passed)
    std::cerr << "bench_conv: correctness gate failed (exit 4); see the FAIL lines above\n";
  if (lease_void)
    std::cerr << "bench_conv: the lease is void (exit 3); the result says why\n";
  return out.exit_status;
}

} // namespace

int run_bench_conv(int argc, const char *const *argv) {
  const std::string started = lease::utc_now();
  Plan plan;
  try {
    const Options opt = parse_cli(argc, argv);
    if (opt.help) {
      std::cout << help_text();
      return kExitOk;
    }
    plan = make_plan(opt, std::vector<std::string>(argv, argv + argc), started);
  } catch (const UsageError &e) {
    return fail(kExitUsage, e.what());
  } catch (const DataError &e) {
    return fail(kExitUsage, e.what());
  } catch (const std::exception &e) {
    return fail(kExitError, std::string("error: ") + e.what());
  }
  RunOutcome out;
  out.run_id = new_run_id();
  std::unique_ptr<lease::RunLease> lease;
  try {
    lease = open_lease(plan, out.run_id);
  } catch (const lease::LeaseRefused &e) {
    return fail(kExitLease, std::string("lease refused: ") + e.what());
  } catch (const std::exception &e) {
    return fail(kExitError, std::string("error: lease: ") + e.what());
  }
  LeaseRelease release_at_exit(lease.get());
  try {
    return measure(plan, *lease, out);
  } catch (const std::exception &e) {
    return fail(kExitError, std::string("error: ") + e.what());
  }
}

} // namespace convbench::bench
