#include "driver/run.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>

#include <unistd.h>

#include "convbench/lease/lease.hpp"
#include "convbench/thread_pool.hpp"
#include "core/console.hpp"
#include "core/device_gate.hpp"
#include "core/interrupt.hpp"
#include "core/version.hpp"
#include "driver/multi_gpu.hpp"
#include "gate/gate_pass.hpp"
#include "leasing/device_open.hpp"
#include "leasing/leasing.hpp"
#include "measurement/counter_pass.hpp"
#include "measurement/rounds.hpp"
#include "measurement/sample.hpp"
#include "plan/completion.hpp"
#include "plan/dry_run.hpp"
#include "plan/listing.hpp"
#include "plan/plan.hpp"
#include "plugin/plugin_arm.hpp"
#include "probes/neighbours.hpp"
#include "probes/sysinfo.hpp"
#include "record/endings.hpp"
#include "record/journal.hpp"
#include "record/record.hpp"
#include "record/report.hpp"
#include "record/resume.hpp"

#if CONVBENCH_HAVE_CUDA
#include "measurement/device.hpp"
#endif

namespace convbench::bench {

namespace {

int fail(int status, const std::string &what) {
  say(what, Verbosity::quiet);
  return status;
}

// What the run will do and how long it should take, in one line.
std::string plan_line(const Plan &plan) {
  const TimeEstimate t = estimate_time(plan);
  char eta[64], budget[32];
  snprintf(eta, sizeof eta, "; ETA ~%.0fs", t.rounds_s + t.gate_s);
  snprintf(budget, sizeof budget, "%g s", plan.opt.max_time);
  const size_t problems = plan.problems.size();
  const bool fixed = plan.opt.target_ci_percent && *plan.opt.target_ci_percent == 0;
  return std::to_string(plan.cases.size()) + " cases (" + std::to_string(problems) +
         (problems == 1 ? " problem" : " problems") + " x arms x staging), " +
         std::to_string(plan.opt.reps) +
         (fixed ? " rounds"
                : " rounds at least, then each case to its target or the " + std::string(budget) +
                      " budget") +
         ", " + std::to_string(plan.threads) + (plan.placement.pinned ? " pinned" : "") +
         " host threads" + eta;
}

// A signal before the first timed round, while the run is in a call that does not return soon:
// the record as it stands, the lease released, one line, the exit status. Runs on the
// watchdog's thread, which holds its lock; the main thread may still be computing.
[[noreturn]] void end_before_rounds(const Plan &plan, lease::RunLease &lease,
                                    const PreRoundsRecord &pre) {
  const int code = interrupt_exit_code();
  std::string error;
  try {
    const nlohmann::json r = pre.interrupted_record(lease.to_json(), code);
    write_record(plan.out_path, r);
  } catch (const std::exception &e) {
    error = std::string("; error: ") + e.what();
  }
  try {
    lease.release(); // _exit runs no destructor: LeaseRelease will not
  } catch (const std::exception &e) {
    error += std::string("; error: lease release: ") + e.what();
  }
  if (error.empty()) {
    std::cout << "result: " << plan.out_path << std::endl;
    std::cerr << "bench_conv: interrupted by " << signal_name(interrupt_signal())
              << " before the first timed round: the plan and the gates done are in "
              << plan.out_path << " (status interrupted, no samples), the lease is released"
              << std::endl;
  } else {
    std::cerr << "bench_conv: interrupted by " << signal_name(interrupt_signal())
              << " before the first timed round" << error << std::endl;
  }
  _exit(code);
}

// A plugin arm's fault (a call failing after its gate, or a device fault that loses the CUDA
// context): the rounds cannot go on, but every finished round is kept. In the gate: the record
// as far as the gate got; in the rounds: the journal's finished rounds. Status "faulted", the
// fault named, exit 1; the caller releases the lease.
int end_at_fault(const Plan &plan, const nlohmann::json &record, const plugin::PluginFault &f) {
  write_record(plan.out_path, record);
  std::filesystem::remove(plan.journal_path);
  std::cout << "result: " << plan.out_path << "\n";
  std::cerr << "bench_conv: error: " << f.what() << "\n"
            << "bench_conv: the run ended at arm " << f.arm << "'s fault"
            << (f.context_lost ? " (the CUDA context is lost)" : "") << "; "
            << (record["fault"]["during"] == "gate" ? "the gates done" : "the finished rounds")
            << " are in " << plan.out_path << " (status faulted)\n";
  return kExitError;
}

// Off the GPU, then the lease: every prepared case freed and the CUDA context destroyed before
// the lease goes to the next run, so a run queued behind this one never sees it on the GPU.
void leave_gpu_then_lease(Plan &plan, lease::RunLease &lease) {
  for (auto &c : plan.cases)
    c.prepared.reset();
#if CONVBENCH_HAVE_CUDA
  if (plan.any_device && plan.gpu.present && device_gate::is_open()) {
    try {
      device::reset();
    } catch (const std::exception &e) {
      std::cerr << "bench_conv: warning: leaving the GPU: " << e.what() << "\n";
    }
  }
#endif
  try {
    lease.release();
  } catch (const std::exception &e) {
    std::cerr << "bench_conv: warning: lease release: " << e.what() << "\n";
  }
}

// The record (atomically; then the journal, which it supersedes, goes), the table, the verdict.
// The lease is released first, so the record holds its released time.
int finish(Plan &plan, lease::RunLease &lease, RunOutcome &out, bool gate_passed) {
  leave_gpu_then_lease(plan, lease);
  const bool lease_void = lease.verdict() == "void";
  out.signal = interrupt_signal();
  out.status = out.signal ? "interrupted" : "complete";
  out.exit_status = out.signal     ? interrupt_exit_code()
                    : !gate_passed ? kExitGate
                    : lease_void   ? kExitLease
                                   : kExitOk;
  out.lease = lease.to_json();
  write_record(plan.out_path, build_record(plan, out));
  std::filesystem::remove(plan.journal_path);
  std::cout << format_table(plan.cases, plan.floors) << twin_lines(plan.cases)
            << "result: " << plan.out_path << "\n"
            << "verdicts (each case and ratio with its interval, or refused with the cause): "
               "convbench-analyze report "
            << plan.out_path << "\n";
  if (out.signal)
    std::cerr << "bench_conv: interrupted by " << signal_name(out.signal) << " in round "
              << out.order.size() << ": the samples taken are in " << plan.out_path
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
  // Until the rounds look at interrupted() themselves, a signal is the watchdog's.
  for (auto &c : plan.cases)
    c.rule = stopping_rule(c, plan.opt); // the targets, as the rounds will set them
  PreRoundsRecord pre(plan, out);
  InterruptWatchdog watchdog([&] { end_before_rounds(plan, lease, pre); });
  for (const auto &note : plan.skipped)
    say(note);
  say(plan_line(plan));
  for (auto &p : plan.problems)
    fill_problem(*p, plan.opt.seed);
  bool gate_passed = false;
  try {
    gate_passed = run_gate(plan, ctx, out.run_id, [&](const Case &c) {
      auto held = watchdog.hold();
      pre.gated(c);
    });
  } catch (const plugin::PluginFault &f) {
    auto held = watchdog.hold();
    return end_at_fault(plan, pre.faulted_record(lease.to_json(), kExitError, f), f);
  }
  wait_at_node_barrier(); // a node's runs (--gpus) start their rounds together
  const std::unique_ptr<NeighbourProbe> neighbours = node_neighbour_probe();
  SpeedProbe speed;
  speed.calibrate(pool);
  watchdog.disarm(); // from here a signal ends the rounds (none if it came already)
  out.speed_calibration = speed.to_json();
  out.lease = lease.to_json();
  JournalWriter journal = JournalWriter::create(plan.journal_path, journal_header_json(plan, out));
  { // the taker's device state (events, the SM clock probe) is freed before the GPU is left
    SampleTaker taker(plan.opt.min_time, plan.opt.device_timing == "queued", gpu ? &*gpu : nullptr,
                      plan.gpu.sm_count, pool, speed);
    taker.observe_neighbours(neighbours.get());
    try {
      out.order = run_rounds(plan, taker, lease, journal).order;
    } catch (const plugin::PluginFault &f) {
      return end_at_fault(
          plan, faulted_rounds_record(plan.journal_path, lease.to_json(), kExitError, f), f);
    }
  }
  run_counter_pass(plan);
  return finish(plan, lease, out, gate_passed);
}

} // namespace

int run_bench_conv(int argc, const char *const *argv) {
  const std::string started = lease::utc_now();
  device_gate::guard(); // a device call before the lease is verified is a bug from here on
  ignore_sigpipe();     // a closed pipe on stderr or stdout is silence, never the run's end
  Plan plan;
  try {
    const Options opt = parse_cli(argc, argv);
    set_verbosity(opt.quiet     ? Verbosity::quiet
                  : opt.verbose ? Verbosity::verbose
                                : Verbosity::normal);
    if (opt.help) {
      std::cout << help_text();
      return kExitOk;
    }
    if (opt.version) {
      std::cout << version_text("bench_conv") << "\n";
      return kExitOk;
    }
    if (!opt.completion.empty()) {
      std::cout << bash_completion();
      return kExitOk;
    }
    if (!opt.list.empty()) {
      write_listing(opt, std::cout);
      return kExitOk;
    }
    if (!opt.resume.empty())
      return resume_run(opt);
    if (!opt.gpus.empty())
      return run_node(opt, argc, argv); // one child run per GPU, each back through here
    plan = make_plan(opt, std::vector<std::string>(argv, argv + argc), started);
    if (opt.dry_run)
      return write_dry_run(plan, std::cout);
  } catch (const UsageError &e) {
    return fail(kExitUsage, e.what());
  } catch (const DataError &e) {
    return fail(kExitUsage, e.what());
  } catch (const std::exception &e) {
    return fail(kExitError, std::string("error: ") + e.what());
  }
  RunOutcome out;
  out.run_id = new_run_id();
  // Waiting for the lease, or refused it, this run is invisible on the GPU: no device call yet.
  std::unique_ptr<lease::RunLease> lease;
  try {
    lease = open_lease(plan, out.run_id);
  } catch (const lease::LeaseBusy &e) {
    return fail(kExitLease,
                std::string("lease refused: ") + e.what() +
                    (plan.opt.lease_wait > 0 ? "" : "; wait for it with --lease-wait S"));
  } catch (const lease::LeaseRefused &e) {
    return fail(kExitLease, std::string("lease refused: ") + e.what());
  } catch (const std::exception &e) {
    return fail(kExitError, std::string("error: lease: ") + e.what());
  }
  device_gate::lease_step("lease-acquired");
  LeaseRelease release_at_exit(lease.get());
  if (!lease->verify_start()) {
    const nlohmann::json check = lease->to_json().value("start_check", nlohmann::json());
    return fail(kExitLease, "lease refused: the start check failed (" +
                                (check.is_object() ? check.value("detail", std::string()) : "") +
                                "); nothing was run on the device, no result written");
  }
  device_gate::lease_step("lease-verified");
  device_gate::open();
  try {
    open_device(plan);
  } catch (const lease::LeaseRefused &e) {
    return fail(kExitLease, std::string("lease refused: ") + e.what());
  } catch (const UsageError &e) {
    return fail(kExitUsage, e.what());
  } catch (const std::exception &e) {
    return fail(kExitError, std::string("error: ") + e.what());
  }
  clear_interrupt();
  InterruptGuard on_signal; // SIGINT/SIGTERM/SIGHUP: the rounds stop, the record says "interrupted"
  try {
    return measure(plan, *lease, out);
  } catch (const std::exception &e) {
    // The result or the journal could not be written (a full disk, a permission): the rounds
    // journaled so far are the samples; say where they are and how to make the record of them.
    std::error_code ec;
    if (std::filesystem::exists(plan.journal_path, ec))
      return fail(kExitError, std::string("error: ") + e.what() + "; the samples taken are in " +
                                  plan.journal_path + ": once the cause is fixed, bench_conv " +
                                  "--resume " + plan.journal_path + " writes their record");
    return fail(kExitError, std::string("error: ") + e.what());
  }
}

} // namespace convbench::bench
