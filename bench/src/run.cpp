#include "run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "arm.hpp"
#include "atomic_write.hpp"
#include "catalog.hpp"
#include "cli.hpp"
#include "convbench/cuda_conv.hpp"
#include "convbench/lease/run_lease.hpp"
#include "convbench/profiles/counters.hpp"
#include "convbench/thread_pool.hpp"
#include "gate.hpp"
#include "gpu_probe.hpp"
#include "host_probe.hpp"
#include "problem_dump.hpp"
#include "nvtx_range.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "shuffle.hpp"
#include "stats.hpp"
#include "sysinfo.hpp"

#if CONVBENCH_HAVE_CUDA
#include "device.hpp"
#endif

namespace fs = std::filesystem;
using nlohmann::json;

namespace convbench::bench {

namespace {

constexpr int kExitOk = 0, kExitError = 1, kExitUsage = 2, kExitRefused = 3, kExitGate = 4;

struct Case {
  std::string id;
  Problem *problem = nullptr;
  const Arm *arm = nullptr;
  std::string staging;
  std::unique_ptr<PreparedArm> prepared;
  json chosen; // prepared->chosen(), kept for the record after `prepared` is released
  GateResult gate;
  json samples = json::array();
  std::vector<double> seconds;
  json counters;
};

// The case's "kernel" block: what the arm says computes it, plus what it chose when prepared
// (two cuDNN instances of one shape may pick different algorithms: the A/A twins then differ).
json kernel_json(json described, const json &chosen) {
  if (!chosen.is_object())
    return described;
  if (!described.is_object())
    described = json::object();
  for (const auto &[k, v] : chosen.items())
    described[k] = v;
  return described;
}

std::string join(const std::vector<std::string> &v, const std::string &sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? sep : "") + v[i];
  return s;
}

std::string gib(double bytes) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
  return buf;
}

json opt_number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The run itself, after the plan was accepted. Separate so every exit path releases the lease.
class Run {
public:
  Options opt;
  std::vector<std::string> argv;
  const Model *model = nullptr;
  std::vector<std::string> stages;
  std::vector<const Arm *> arms;
  std::vector<std::string> device_stagings;
  std::vector<std::string> skipped;  // (arm, problem) pairs an arm does not run, and why
  std::vector<std::unique_ptr<Problem>> problems;
  std::vector<Case> cases;
  bool gpu = false;
  std::string gpu_why_not;
  json gpus = json::array();
  std::string gpu_name, gpu_uuid, gpu_pci;
  int sm_count = 0;
  std::optional<DeviceFloors> floors;
  std::optional<profiles::Profile> profile;
  std::string counters_off_reason;
  std::string out_path;
  std::string run_id;
  std::string started_utc;
  int threads = 1;
};

} // namespace

int run_bench_conv(int argc, const char *const *argv_in) {
  Run R;
  R.started_utc = utc_now_iso();
  for (int i = 0; i < argc; ++i)
    R.argv.push_back(argv_in[i]);
  auto usage = [](const std::string &msg) {
    std::cerr << "bench_conv: " << msg << "\n";
    return kExitUsage;
  };

  // ---- plan: everything that can be wrong with the request fails here, before anything runs ----
  ModelCatalog models;
  DeviceCatalog devices;
  try {
    R.opt = parse_cli(argc, argv_in);
    if (R.opt.help) {
      std::cout << help_text();
      return kExitOk;
    }
    std::string dir = data_dir();
    models = load_models(dir + "/models.json");
    devices = load_devices(dir + "/devices.json");
    std::string model_name = R.opt.model.empty() ? models.default_model : R.opt.model;
    R.model = models.find(model_name);
    if (!R.model)
      throw UsageError("--model: unknown model '" + model_name +
                       "' (known: " + join(models.names(), ", ") + ")");
    R.stages = expand_stages(R.opt.stages, *R.model);

    R.gpu = cuda::device_available(&R.gpu_why_not);
    R.opt.arms = expand_arm_patterns(R.opt.arms); // "cuda-f32@*": every block shape of an arm
    if (R.opt.arms.empty()) {
      for (const Arm *a : registered_arms()) {
        std::string why;
        if (a->available(&why))
          R.arms.push_back(a);
      }
    } else {
      std::vector<std::string> known;
      for (const Arm *a : registered_arms())
        known.push_back(a->name());
      for (const auto &name : R.opt.arms) {
        const Arm *a = find_arm(name);
        if (!a)
          throw UsageError("--arms: unknown arm '" + name +
                           "' (this build has: " + join(known, ", ") + ")");
        std::string why;
        if (!a->available(&why))
          throw UsageError("--arms: arm " + name + " is not available here: " + why);
        // An arm named again is an A/A twin (cuda-f32#2): the instrument's noise, measured.
        const int seen = int(std::count(R.opt.arms.begin(), R.opt.arms.begin() +
                                            (&name - R.opt.arms.data()), name));
        R.arms.push_back(seen == 0 ? a : twin_arm(*a, seen + 1));
      }
    }
    bool any_device =
        std::any_of(R.arms.begin(), R.arms.end(), [](const Arm *a) { return a->device(); });
    if (R.opt.staging == "both")
      R.device_stagings = {"per-call", "resident"};
    else
      R.device_stagings = {R.opt.staging};

    // Counter profile: loaded before anything runs, so a bad one costs nothing.
    if (R.opt.no_counters)
      R.counters_off_reason = "--no-counters";
    else if (!R.gpu && !R.opt.profile)
      R.counters_off_reason = "no GPU: " + R.gpu_why_not;
    if (!R.opt.no_counters && (R.gpu || R.opt.profile)) {
      try {
        R.profile = profiles::load_profile(R.opt.profile.value_or("fp-throughput"), profiles_dir());
      } catch (const profiles::ProfileError &e) {
        throw UsageError(std::string("--profile: ") + e.what());
      }
      if (!R.gpu)
        R.counters_off_reason = "no GPU: " + R.gpu_why_not;
    }

    R.threads = R.opt.threads > 0 ? R.opt.threads : online_cpus();

    // Problems (shapes only for now) and cases. A causal case has its own length: built once.
    for (const auto &stage : R.stages)
      for (int64_t frames : R.opt.frames) {
        R.problems.push_back(std::make_unique<Problem>(plan_stage(stage, frames, *R.model)));
        if (R.problems.back()->causal)
          break;
      }
    for (auto &p : R.problems)
      for (const Arm *a : R.arms)
        for (const auto &staging :
             a->device() ? R.device_stagings : std::vector<std::string>{"host"}) {
          const auto own = a->stagings();
          if (std::find(own.begin(), own.end(), staging) == own.end())
            continue;
          if (std::string why; !a->supports(*p, &why)) {
            // Said once the plan stands: a refused plan prints its one error line only.
            // Once per (arm, problem), not per staging.
            std::string note = a->name() + " does not run " + p->stage + "/" +
                               std::to_string(p->frames) + ": " + why;
            if (std::find(R.skipped.begin(), R.skipped.end(), note) == R.skipped.end())
              R.skipped.push_back(std::move(note));
            continue;
          }
          Case c;
          c.problem = p.get();
          c.arm = a;
          c.staging = staging;
          c.id = p->stage + "/" + std::to_string(p->frames) + "/" + a->name() + "/" + staging;
          R.cases.push_back(std::move(c));
        }

    // Memory: refuse what would not fit rather than die half-way (host: half of RAM; device: 90%
    // of what is free now). Counted in doubles, before any allocation.
    double host_need = 0, device_need = 0;
    for (auto &p : R.problems)
      host_need += p->host_bytes() + 2.0 * 4.0 * double(p->output_elems());
    for (auto &c : R.cases) {
      double outs = c.problem->causal ? 4.0 * double(c.problem->output_elems()) : 0.0;
      for (auto &s : c.problem->shapes)
        outs += 4.0 * double(s.output_elems());
      host_need += outs;
      device_need += c.arm->device_bytes(*c.problem, c.staging);
    }
    double ram = physical_memory_bytes();
    if (ram > 0 && host_need > 0.5 * ram)
      throw UsageError("the planned cases need " + gib(host_need) +
                       " of host memory, more than half of " + gib(ram) +
                       " RAM: fewer frames or stages");
    if (R.gpu) {
#if CONVBENCH_HAVE_CUDA
      auto f = device::facts(0);
      R.gpu_name = f.name;
      R.gpu_uuid = f.uuid;
      R.gpu_pci = f.pci_bus_id;
      R.sm_count = f.sm_count;
      if (any_device) {
        size_t free_b = 0, total_b = 0;
        device::free_memory(&free_b, &total_b);
        if (device_need > 0.9 * double(free_b))
          throw UsageError("the planned device cases need " + gib(device_need) +
                           " of device memory, more than 90% of the " + gib(double(free_b)) +
                           " free: fewer frames or stages, or --staging per-call");
      }
#endif
      R.floors = devices.find(R.gpu_name);
    }

    // Result path: checked writable now, not after minutes of measuring.
    if (R.opt.out.empty()) {
      std::string stages_tag = join(R.opt.stages, "+");
      R.out_path = "results/" + utc_now_compact() + "-" + host_name() + "-" + R.model->name + "-" +
                   stages_tag + ".json";
      std::error_code ec;
      fs::create_directories("results", ec);
    } else {
      R.out_path = R.opt.out;
    }
    try {
      check_writable(R.out_path);
    } catch (const WriteError &e) {
      throw UsageError(std::string("--out: ") + e.what());
    }
    if (!R.opt.dump.empty()) {
      std::error_code ec;
      fs::create_directories(R.opt.dump, ec);
      if (ec || !fs::is_directory(R.opt.dump))
        throw UsageError("--dump: cannot create directory " + R.opt.dump +
                         (ec ? ": " + ec.message() : ""));
      try {
        check_writable(R.opt.dump + "/probe");
      } catch (const WriteError &e) {
        throw UsageError(std::string("--dump: ") + e.what());
      }
    }
  } catch (const UsageError &e) {
    return usage(e.what());
  } catch (const DataError &e) {
    return usage(e.what());
  } catch (const std::exception &e) {
    std::cerr << "bench_conv: error: " << e.what() << "\n";
    return kExitError;
  }

  R.run_id = new_run_id();

  // ---- lease: before the problems are built and timed ----
  std::unique_ptr<lease::RunLease> lease;
  try {
    lease::RunLeaseOptions lo;
    lo.no_lease = R.opt.no_lease;
    bool any_device =
        std::any_of(R.arms.begin(), R.arms.end(), [](const Arm *a) { return a->device(); });
    lo.gpu_uuid = any_device ? R.gpu_uuid : "";
    lo.run_id = R.run_id;
    lo.wait_s = R.opt.lease_wait;
    lo.estimate_s = double(R.cases.size()) * R.opt.reps * R.opt.min_time; // the least it can take
    lease = lease::RunLease::open(lo);
  } catch (const lease::LeaseRefused &e) {
    std::cerr << "bench_conv: lease refused: " << e.what() << "\n";
    return kExitRefused;
  } catch (const std::exception &e) {
    std::cerr << "bench_conv: error: lease: " << e.what() << "\n";
    return kExitError;
  }
  struct Release {
    lease::RunLease *l;
    ~Release() {
      try {
        l->release();
      } catch (const std::exception &e) {
        std::cerr << "bench_conv: warning: lease release: " << e.what() << "\n";
      }
    }
  } release_at_exit{lease.get()};

  try {
    ThreadPool pool(R.threads);
    ArmContext ctx{&pool};
    std::unique_ptr<GpuProbe> gprobe;
    if (R.gpu) {
      gprobe = std::make_unique<GpuProbe>(R.gpu_pci);
#if CONVBENCH_HAVE_CUDA
      auto f = device::facts(0);
      json g = gprobe->facts();
      json un = g["unavailable"];
      json entry = {{"index", 0},
                    {"name", f.name},
                    {"uuid", f.uuid},
                    {"pci_bus_id", f.pci_bus_id},
                    {"driver", g["driver"]},
                    {"cuda_runtime", std::to_string(f.runtime_version / 1000) + "." +
                                         std::to_string((f.runtime_version % 1000) / 10)},
                    {"cuda_driver_api", std::to_string(f.driver_version / 1000) + "." +
                                            std::to_string((f.driver_version % 1000) / 10)},
                    {"sm_count", f.sm_count},
                    {"sm_clock_max_mhz", g["sm_clock_max_mhz"]},
                    {"mem_clock_max_mhz", g["mem_clock_max_mhz"]},
                    {"l2_bytes", f.l2_bytes}};
      un.erase("uuid");
      if (entry["sm_clock_max_mhz"].is_null() && f.sm_clock_max_khz > 0) {
        entry["sm_clock_max_mhz"] = f.sm_clock_max_khz / 1000;
        un.erase("sm_clock_max_mhz");
      }
      entry["unavailable"] = un;
      R.gpus.push_back(entry);
#endif
    }

    // ---- problems: seeded inputs ----
    for (const auto &note : R.skipped)
      std::cerr << "bench_conv: " << note << "\n";
    std::cerr << "bench_conv: " << R.cases.size() << " cases (" << R.problems.size()
              << " problems x arms x staging), " << R.opt.reps << " rounds, " << R.threads
              << " host threads\n";
    for (auto &p : R.problems)
      fill_problem(*p, R.opt.seed);

    // ---- correctness gate: every case against cpu-f64, before any timing ----
    bool gate_failed = false;
    const Arm &ref_arm = reference_arm();
    for (auto &p : R.problems) {
      std::vector<float> ref(size_t(p->output_elems()));
      {
        // The reference case's own prepared arm when it is planned, so it is not computed twice.
        Case *ref_case = nullptr;
        for (auto &c : R.cases)
          if (c.problem == p.get() && c.arm == &ref_arm)
            ref_case = &c;
        std::unique_ptr<PreparedArm> tmp;
        PreparedArm *pa;
        if (ref_case) {
          ref_case->prepared = ref_arm.prepare(*p, "host", ctx);
          pa = ref_case->prepared.get();
        } else {
          tmp = ref_arm.prepare(*p, "host", ctx);
          pa = tmp.get();
        }
        std::cerr << "bench_conv: gate " << p->stage << "/" << p->frames << ": reference "
                  << ref_arm.name() << "\n";
        pa->call();
        pa->output(ref.data());
      }
      std::string dump_dir;
      if (!R.opt.dump.empty()) {
        std::vector<DumpedCase> outputs;
        for (auto &c : R.cases)
          if (c.problem == p.get())
            outputs.push_back({c.arm->name() + "/" + c.staging, to_string(c.arm->gate()),
                               c.arm->tolerance()});
        dump_dir = dump_problem(R.opt.dump, *p, ref, outputs,
                                {{"model", R.model->name},
                                 {"run_seed", R.opt.seed},
                                 {"run_id", R.run_id}});
      }
      for (auto &c : R.cases) {
        if (c.problem != p.get())
          continue;
        if (!c.prepared) {
          c.prepared = c.arm->prepare(*p, c.staging, ctx);
          c.chosen = c.prepared->chosen();
        }
        std::vector<float> y(ref.size());
        if (c.arm == &ref_arm) {
          y = ref;
        } else {
          c.prepared->call();
          c.prepared->output(y.data());
        }
        c.gate = gate_output(c.arm->gate(), c.arm->tolerance(), y, ref);
        std::cerr << "bench_conv: gate " << c.id << ": " << (c.gate.pass ? "pass" : "FAIL") << " ("
                  << to_string(c.gate.kind) << ", " << c.gate.mismatches << " cells differ, rel L2 "
                  << c.gate.rel_l2_err << ")\n";
        if (!c.gate.pass) {
          gate_failed = true;
          c.prepared.reset(); // a wrong arm is never timed
        }
        if (!dump_dir.empty())
          dump_output(dump_dir, *p, c.arm->name() + "/" + c.staging, y);
      }
    }

    // ---- timed rounds, interleaved ----
    std::vector<Case *> timed;
    for (auto &c : R.cases)
      if (c.gate.pass)
        timed.push_back(&c);
    SampleRunner runner(R.opt.min_time, R.opt.device_timing == "queued");
#if CONVBENCH_HAVE_CUDA
    std::unique_ptr<device::SmClock> smclock;
    if (R.gpu)
      smclock = std::make_unique<device::SmClock>(R.sm_count);
#endif
    json order = json::array();
    lease->verify_start();
    auto t0 = std::chrono::steady_clock::now();
    size_t done = 0, total = timed.size() * size_t(R.opt.reps);
    for (int r = 0; r < R.opt.reps; ++r) {
      std::vector<int> idx = round_order(int(timed.size()), R.opt.seed, r);
      json ids = json::array();
      for (int i : idx)
        ids.push_back(timed[size_t(i)]->id);
      order.push_back({{"round", r}, {"seed", round_seed(R.opt.seed, r)}, {"cases", ids}});
      for (size_t pos = 0; pos < idx.size(); ++pos) {
        Case &c = *timed[size_t(idx[pos])];
        bool dev = c.arm->device();
        double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::string eta =
            done ? format_seconds(elapsed / double(done) * double(total - done)) : "?";
        fprintf(stderr, "bench_conv: round %d/%d  case %zu/%zu  %s  (ETA %s)\n", r + 1, R.opt.reps,
                pos + 1, idx.size(), c.id.c_str(), eta.c_str());
        json gbefore = dev && gprobe ? gprobe->snapshot(true) : json(nullptr);
        HostSnapshot hb = probe_host();
#if CONVBENCH_HAVE_CUDA
        if (dev)
          smclock->begin(c.prepared->stream_begin());
#endif
        SampleTiming t;
        {
          NvtxRange range(c.id + "/r" + std::to_string(r));
          t = runner.run(c.id + "/r" + std::to_string(r), *c.prepared, dev);
        }
        double sm_mhz = NAN;
#if CONVBENCH_HAVE_CUDA
        if (dev) {
          smclock->end(c.prepared->stream_end());
          sm_mhz = smclock->mhz();
        }
#endif
        HostSnapshot ha = probe_host();
        json gafter = dev && gprobe ? gprobe->snapshot(true) : json(nullptr);
        ForeignCpu fc = foreign_cpu(hb, ha);
        json s = {{"round", r},
                  {"position", pos},
                  {"seconds", t.seconds},
                  {"iterations", t.iterations},
                  {"total_seconds", t.total_seconds},
                  {"host_before", hb.to_json()},
                  {"host_after", ha.to_json()},
                  {"foreign_cpu_s", fc.seconds ? json(*fc.seconds) : json(nullptr)},
                  {"foreign_cpu_share", fc.share ? json(*fc.share) : json(nullptr)},
                  {"gpu_before", gbefore},
                  {"gpu_after", gafter},
                  {"measured_sm_clock_mhz", dev ? opt_number(sm_mhz) : json(nullptr)}};
        json un = json::object();
        if (!fc.seconds)
          un["foreign_cpu_s"] = un["foreign_cpu_share"] = fc.why_unavailable;
        if (dev && !std::isfinite(sm_mhz))
          un["measured_sm_clock_mhz"] = "no SM was seen by both clock probes";
        s["unavailable"] = un;
        c.samples.push_back(s);
        c.seconds.push_back(t.seconds);
        int foreign_gpu = -1;
        if (dev) {
          int a = foreign_processes_of(gbefore), b = foreign_processes_of(gafter);
          foreign_gpu = (a < 0 || b < 0) ? -1 : std::max(a, b);
        }
        lease->observe_sample(c.id, r, foreign_gpu, fc.share ? *fc.share : -1.0);
        ++done;
      }
    }
    lease->verify_end();

    // ---- counter pass: untimed, resident device cases ----
    std::unique_ptr<profiles::CounterSession> session;
    // Only when some resident device case passed its gate: opening CUPTI costs seconds.
    bool any_capture = std::any_of(R.cases.begin(), R.cases.end(), [](const Case &c) {
      return c.gate.pass && c.arm->device() && c.staging == "resident";
    });
    if (R.profile && R.gpu && R.counters_off_reason.empty() && any_capture)
      session = profiles::CounterSession::open(*R.profile, 0);
    for (auto &c : R.cases) {
      if (!c.gate.pass) {
        c.counters = {{"status", "not-collected"}, {"reason", "correctness gate failed"}};
      } else if (!c.arm->device()) {
        c.counters = {{"status", "not-collected"}, {"reason", "host arm"}};
      } else if (!session) {
        c.counters = {
            {"status", "not-collected"},
            {"reason", R.counters_off_reason.empty() ? "no session" : R.counters_off_reason}};
      } else if (c.staging != "resident") {
        c.counters = {{"status", "not-collected"},
                      {"reason", "counters are captured for resident staging only"}};
      } else {
        fprintf(stderr, "bench_conv: counters %s (profile %s)\n", c.id.c_str(),
                R.profile->name.c_str());
        PreparedArm *pa = c.prepared.get();
        NvtxRange range(c.id + "/counters");
        double best = *std::min_element(c.seconds.begin(), c.seconds.end());
        c.counters = session->capture(
            [pa] {
              pa->call();
              pa->sync();
            },
            best, c.problem->flops());
      }
    }

    // ---- result ----
    std::string lease_verdict = lease->verdict();
    int exit_status = gate_failed ? kExitGate : (lease_verdict == "void" ? kExitRefused : kExitOk);
    json cases = json::array();
    for (auto &c : R.cases) {
      const Problem &p = *c.problem;
      json floor = nullptr;
      if (R.floors && c.arm->device()) {
        double mem = p.min_bytes() / R.floors->memory;
        floor = {{"fp32_fma", p.flops() / R.floors->fp32_fma},
                 {"fp64_fma", p.flops() / R.floors->fp64_fma},
                 {"fp64_nofma", p.flops() / R.floors->fp64_nofma},
                 {"memory", mem}};
        // The arm's floor: its arithmetic floor or the memory floor, whichever is higher.
        floor["arm"] = std::max(floor[c.arm->floor_kind()].get<double>(), mem);
        floor["arm_kind"] = c.arm->floor_kind();
      }
      json cj = {{"id", c.id},
                 {"stage", p.stage},
                 {"frames", p.frames},
                 {"arm", c.arm->name()},
                 {"staging", c.staging},
                 {"device", c.arm->device()},
                 {"shape", problem_shape_json(p)},
                 {"flops", p.flops()},
                 {"min_bytes", p.min_bytes()},
                 {"floor_s", floor},
                 {"kernel", kernel_json(c.arm->describe(p), c.chosen)},
                 {"gate", c.gate.to_json()},
                 {"samples", c.samples},
                 {"stats", c.seconds.empty() ? json(nullptr) : compute_stats(c.seconds).to_json()},
                 {"counters", c.counters}};
      cases.push_back(cj);
    }
    json plan = {{"model", R.model->name},
                 {"stages", R.stages},
                 {"frames", R.opt.frames},
                 {"arms",
                  [&] {
                    std::vector<std::string> n;
                    for (auto *a : R.arms)
                      n.push_back(a->name());
                    return n;
                  }()},
                 {"staging",
                  [&] {
                    std::vector<std::string> used;
                    for (auto &c : R.cases)
                      if (std::find(used.begin(), used.end(), c.staging) == used.end())
                        used.push_back(c.staging);
                    return used;
                  }()},
                 {"reps", R.opt.reps},
                 {"seed", R.opt.seed},
                 {"threads", R.threads},
                 {"min_time_s", R.opt.min_time},
                 {"device_timing", R.opt.device_timing},
                 {"order", order}};
    json context = SampleRunner::context();
    context["date"] = R.started_utc;
    context["executable"] = R.argv.empty() ? "" : R.argv[0];
    json result = {{"schema_version", 1},
                   {"run_id", R.run_id},
                   {"tool", tool_block()},
                   {"argv", R.argv},
                   {"started_utc", R.started_utc},
                   {"ended_utc", utc_now_iso()},
                   {"exit_status", exit_status},
                   {"host", host_block()},
                   {"gpus", R.gpus},
                   {"plan", plan},
                   {"lease", lease->to_json()},
                   {"cases", cases},
                   {"benchmarks", benchmarks_view(cases, R.opt.reps)},
                   {"context", context}};
    if (!R.gpu)
      result["host"]["gpu_unavailable"] = R.gpu_why_not;
    if (!R.opt.dump.empty())
      result["dump_dir"] = R.opt.dump;
    write_atomically(R.out_path, result.dump(1) + "\n");

    std::cout << format_table(cases);
    std::cout << "result: " << R.out_path << "\n";
    if (gate_failed)
      std::cerr << "bench_conv: correctness gate failed (exit 4); see the FAIL lines above\n";
    if (lease_verdict == "void")
      std::cerr << "bench_conv: the lease is void (exit 3); the result says why\n";
    return exit_status;
  } catch (const std::exception &e) {
    std::cerr << "bench_conv: error: " << e.what() << "\n";
    return kExitError;
  }
}

} // namespace convbench::bench
