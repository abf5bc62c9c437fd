#include "run.hpp"

#include <csignal>
#include <filesystem>
#include <iostream>

#include "atomic_write.hpp"
#include "convbench/lease/lease.hpp"
#include "convbench/thread_pool.hpp"
#include "counter_pass.hpp"
#include "gate_pass.hpp"
#include "leasing.hpp"
#include "multi_gpu.hpp"
#include "plan.hpp"
#include "probes/interrupt.hpp"
#include "probes/journal.hpp"
#include "probes/neighbours.hpp"
#include "record.hpp"
#include "report.hpp"
#include "resume.hpp"
#include "rounds.hpp"
#include "sample.hpp"
#include "sysinfo.hpp"

namespace convbench::bench {

namespace {

int fail(int status, const std::string &what) {
  std::cerr << "bench_conv: " << what << "\n";
  return status;
}

// The record (atomically; then the journal, which it supersedes, goes), the table, the verdict.
int finish(Plan &plan, lease::RunLease &lease, RunOutcome &out, bool gate_passed) {
  const bool lease_void = lease.verdict() == "void";
  out.signal = interrupt_signal();
  out.status = out.signal ? "interrupted" : "complete";
  out.exit_status = out.signal     ? interrupt_exit_code()
                    : !gate_passed ? kExitGate
                    : lease_void   ? kExitLease
                                   : kExitOk;
  out.lease = lease.to_json();
  write_atomically(plan.out_path, build_record(plan, out).dump(1) + "\n");
  std::filesystem::remove(plan.journal_path);
  std::cout << format_table(plan.cases, plan.floors) << "result: " << plan.out_path << "\n";
  if (out.signal)
    std::cerr << "bench_conv: interrupted by "
              << (out.signal == SIGINT    ? "SIGINT"
                  : out.signal == SIGTERM ? "SIGTERM"
                                          : "a signal")
              << " in round " << out.order.size() << ": the samples taken are in " << plan.out_path
              << " (status interrupted), the lease is released\n";
  else if (!gate_passed)
    std::cerr << "bench_conv: correctness gate failed (exit 4); see the FAIL lines above\n";
  else if (lease_void)
    std::cerr << "bench_conv: the lease is void (exit 3); the result says why\n";
  return out.exit_status;
}

// Everything after the lease is held; the caller releases it whichever way this returns.
int measure(Plan &plan, lease::RunLease &lease, RunOutcome &out) {
  ThreadPool pool(plan.threads, plan.placement);
  ArmContext ctx{&pool, &plan.cudnn_algos, ""};
  std::optional<GpuProbe> gpu;
  if (plan.gpu.present)
    out.gpu_nvml = gpu.emplace(plan.gpu.pci_bus_id).facts();
  for (const auto &note : plan.skipped)
    std::cerr << "bench_conv: " << note << "\n";
  std::cerr << "bench_conv: " << plan.cases.size() << " cases (" << plan.problems.size()
            << " problems x arms x staging), " << plan.opt.reps << " rounds at least, "
            << plan.threads << (plan.placement.pinned ? " pinned" : "") << " host threads\n";
  for (auto &p : plan.problems)
    fill_problem(*p, plan.opt.seed);
  const bool gate_passed = run_gate(plan, ctx, out.run_id);
  wait_at_node_barrier(); // a node's runs (--gpus) start their rounds together
  const std::unique_ptr<NeighbourProbe> neighbours = node_neighbour_probe();
  SpeedProbe speed;
  speed.calibrate(pool);
  out.speed_calibration = speed.to_json();
  out.lease = lease.to_json();
  JournalWriter journal = JournalWriter::create(plan.journal_path, journal_header_json(plan, out));
  SampleTaker taker(plan.opt.min_time, plan.opt.device_timing == "queued", gpu ? &*gpu : nullptr,
                    plan.gpu.sm_count, pool, speed);
  taker.observe_neighbours(neighbours.get());
  out.order = run_rounds(plan, taker, lease, journal).order;
  run_counter_pass(plan);
  return finish(plan, lease, out, gate_passed);
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
    if (!opt.resume.empty())
      return resume_run(opt);
    if (!opt.gpus.empty())
      return run_node(opt, argc, argv); // one child run per GPU, each back through here
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
  clear_interrupt();
  InterruptGuard on_signal; // SIGINT/SIGTERM: the rounds stop, the record says "interrupted"
  try {
    return measure(plan, *lease, out);
  } catch (const std::exception &e) {
    return fail(kExitError, std::string("error: ") + e.what());
  }
}

} // namespace convbench::bench
