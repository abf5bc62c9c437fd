#include "plan/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "convbench/cuda_conv.hpp"
#include "core/atomic_write.hpp"
#include "core/crash_notice.hpp"
#include "core/output_paths.hpp"
#include "plan/problem_dump.hpp"
#include "probes/host_probe.hpp"
#include "probes/sysinfo.hpp"

#include "core/device_gate.hpp"

namespace fs = std::filesystem;

namespace convbench::bench {

namespace {

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

// Every available arm, or the ones named (an arm named again is its A/A twin, cuda-f32#2: the
// instrument's noise, measured).
std::vector<const Arm *> choose_arms(const std::vector<std::string> &names) {
  std::vector<const Arm *> arms;
  if (names.empty()) {
    for (const Arm *a : registered_arms())
      if (std::string why; a->available(&why))
        arms.push_back(a);
    return arms;
  }
  std::vector<std::string> known;
  for (const Arm *a : registered_arms())
    known.push_back(a->name());
  for (size_t i = 0; i < names.size(); ++i) {
    const Arm *a = find_arm(names[i]);
    if (!a)
      throw UsageError("--arms: unknown arm '" + names[i] +
                       "' (this build has: " + join(known, ", ") + ")");
    if (std::string why; !a->available(&why))
      throw UsageError("--arms: arm " + names[i] + " is not available here: " + why);
    const int seen = int(std::count(names.begin(), names.begin() + long(i), names[i]));
    arms.push_back(seen == 0 ? a : twin_arm(*a, seen + 1));
  }
  return arms;
}

// The counter profile is loaded before anything runs, so a bad one costs nothing.
void plan_counters(Plan &p) {
  if (p.opt.no_counters) {
    p.counters_off_reason = "--no-counters";
    return;
  }
  if (!p.gpu.present)
    p.counters_off_reason = "no GPU: " + p.gpu.why_not;
  if (!p.gpu.present && !p.opt.profile)
    return;
  try {
    p.profile = profiles::load_profile(p.opt.profile.value_or("fp-throughput"), profiles_dir());
  } catch (const profiles::ProfileError &e) {
    throw UsageError(std::string("--profile: ") + e.what());
  }
}

std::string case_id(const Problem &pr, const std::string &arm, const std::string &staging) {
  return pr.stage + "/" + std::to_string(pr.frames) + "/" + arm + "/" + staging;
}

// Problems (shapes only: no data yet), then one case per (problem, arm, staging) it supports.
void plan_cases(Plan &p) {
  for (const auto &stage : p.stages)
    for (int64_t frames : p.opt.frames) {
      p.problems.push_back(std::make_unique<Problem>(plan_stage(stage, frames, p.model)));
      if (p.problems.back()->causal) // a causal case has its own length: built once
        break;
    }
  const std::vector<std::string> device_stagings =
      p.opt.staging == "both" ? std::vector<std::string>{"per-call", "resident"}
                              : std::vector<std::string>{p.opt.staging};
  for (auto &pr : p.problems)
    for (const Arm *a : p.arms)
      for (const auto &staging : a->device() ? device_stagings : std::vector<std::string>{"host"}) {
        const auto own = a->stagings();
        if (std::find(own.begin(), own.end(), staging) == own.end())
          continue;
        if (std::string why; !a->supports(*pr, &why)) {
          // Said once the plan stands (a refused plan prints its one error line only), once per
          // (arm, problem), not per staging.
          std::string note = a->name() + " does not run " + pr->stage + "/" +
                             std::to_string(pr->frames) + ": " + why;
          if (std::find(p.skipped.begin(), p.skipped.end(), note) == p.skipped.end())
            p.skipped.push_back(std::move(note));
          continue;
        }
        Case c;
        c.problem = pr.get();
        c.arm = a;
        c.staging = staging;
        c.id = case_id(*pr, a->name(), staging);
        if (const auto hash = a->name().find('#'); hash != std::string::npos)
          c.twin_of = case_id(*pr, a->name().substr(0, hash), staging);
        p.cases.push_back(std::move(c));
      }
}

// What one more sample of a case roughly costs, to choose the cheapest case of a kind as its
// twin: the FLOPs at the arm's precision (f64 at half the rate); the run's own arms before a
// peer or a plugin (cuDNN's Find may pick another algorithm for a second instance, which then
// measures cuDNN's choice, not the instrument); a ceiling last (the arms it judges are what
// the run is for).
std::tuple<int, double, std::string> twin_cost(const Case &c) {
  const std::string n = c.arm->name();
  const bool own = n.rfind("cpu-", 0) == 0 || n.rfind("cuda-", 0) == 0;
  const bool f64 = n.find("f64") != std::string::npos;
  const int rank = c.arm->facts().role == ArmRole::ceiling ? 2 : own ? 0 : 1;
  return {rank, c.problem->flops() * (f64 ? 2.0 : 1.0), c.id};
}

// --twins: the run's own A/A twins. "kinds": one for each kind of case timed (host, per-call,
// resident) that has none yet, on its cheapest case; "all": every case that has none.
void plan_twins(Plan &p) {
  if (p.opt.twins == "none")
    return;
  std::set<std::string> twinned, kinds_twinned, taken;
  for (const auto &c : p.cases) {
    taken.insert(c.id);
    if (!c.twin_of.empty()) {
      twinned.insert(c.twin_of);
      kinds_twinned.insert(c.staging);
    }
  }
  std::vector<const Case *> chosen;
  if (p.opt.twins == "all") {
    for (const auto &c : p.cases)
      if (c.twin_of.empty() && !twinned.count(c.id))
        chosen.push_back(&c);
  } else {
    std::map<std::string, const Case *> cheapest; // by staging: host, per-call, resident
    for (const auto &c : p.cases) {
      if (!c.twin_of.empty() || kinds_twinned.count(c.staging))
        continue;
      const Case *&best = cheapest[c.staging];
      if (!best || twin_cost(c) < twin_cost(*best))
        best = &c;
    }
    for (const auto &[staging, c] : cheapest)
      chosen.push_back(c);
  }
  std::vector<Case> added;
  for (const Case *c : chosen) {
    int n = 2;
    while (taken.count(case_id(*c->problem, c->arm->name() + "#" + std::to_string(n), c->staging)))
      ++n;
    Case t;
    t.problem = c->problem;
    t.arm = twin_arm(*c->arm, n);
    t.staging = c->staging;
    t.id = case_id(*c->problem, t.arm->name(), c->staging);
    t.twin_of = c->id;
    taken.insert(t.id);
    added.push_back(std::move(t));
  }
  for (auto &t : added)
    p.cases.push_back(std::move(t));
}

// --cudnn-algo against the planned cuDNN cases: every pin that cannot apply refuses the plan.
void plan_cudnn_algos(Plan &p) {
  if (p.opt.cudnn_algo.empty())
    return;
  const CudnnAlgoSpec spec = parse_cudnn_algo_spec(p.opt.cudnn_algo);
  std::vector<CudnnTarget> targets;
  for (const auto &c : p.cases)
    if (c.arm->name().rfind("cudnn-", 0) == 0)
      targets.push_back({c.id, c.arm->name(), c.problem->shapes[0].op == ConvOp::forward});
  p.cudnn_algos = pin_cudnn_cases(spec, targets);
}

// The host arms' workers: one per CPU of --cpus (default: every CPU this process may use),
// pinned unless --no-pin.
void plan_threads(Plan &p) {
  try {
    const size_t listed =
        p.opt.cpus.empty() ? allowed_cpus().size() : parse_cpu_list(p.opt.cpus).size();
    p.threads = p.opt.threads > 0 ? p.opt.threads : int(std::max<size_t>(listed, 1));
    p.placement = make_placement(p.threads, p.opt.cpus, !p.opt.no_pin);
  } catch (const std::invalid_argument &e) {
    throw UsageError(std::string(p.opt.cpus.empty() ? "--threads: " : "--cpus: ") + e.what() +
                     " (--no-pin runs more threads than CPUs)");
  }
}

// The GPU as NVML names it: its facts from CUDA come once the lease is held (open_device).
GpuFacts gpu_identity() {
  const VisibleGpu &v = visible_gpu();
  GpuFacts g;
  g.present = v.present;
  g.why_not = v.why_not;
  g.uuid = v.uuid;
  g.name = v.name;
  return g;
}

// What would not fit is refused rather than let die half-way (check_memory, before anything is
// allocated; memory_refusal says why and what would fit).
void check_memory(const Plan &p) {
  if (const std::string why = memory_refusal(p); !why.empty())
    throw UsageError(why);
}

// The result path and the dump directory: checked writable now, not after minutes of measuring.
void check_outputs(Plan &p) {
  if (p.opt.out.empty()) {
    p.out_path = "results/" + utc_now_compact() + "-" + host_name() + "-" + p.model.name + "-" +
                 join(p.opt.stages, "+") + ".json";
    std::error_code ec;
    fs::create_directories("results", ec);
  } else {
    p.out_path = p.opt.out;
  }
  try {
    check_writable(p.out_path);
  } catch (const WriteError &e) {
    throw UsageError(std::string("--out: ") + e.what());
  }
  // A journal left there is the only copy of a cut-short run's rounds: never replaced.
  p.journal_path = bench::journal_path(p.out_path);
  if (fs::exists(p.journal_path))
    throw UsageError("--out: " + p.journal_path + " holds the rounds of a run that did not " +
                     "finish: bench_conv --resume " + p.journal_path + ", or move it away");
  if (p.opt.dump.empty())
    return;
  std::error_code ec;
  fs::create_directories(p.opt.dump, ec);
  if (ec || !fs::is_directory(p.opt.dump))
    throw UsageError("--dump: cannot create directory " + p.opt.dump +
                     (ec ? ": " + ec.message() : ""));
  try {
    check_writable(p.opt.dump + "/probe", "dump file");
    for (const auto &pr : p.problems)
      check_dump_target(p.opt.dump, *pr);
  } catch (const WriteError &e) {
    throw UsageError(std::string("--dump: ") + e.what());
  }
}

} // namespace

double device_bytes_needed(const Plan &p) {
  double need = 0;
  for (auto &c : p.cases)
    need += c.arm->device_bytes(*c.problem, c.staging);
  return need;
}

double problem_host_bytes(const Problem &pr) {
  return pr.host_bytes() + 2.0 * 4.0 * double(pr.output_elems()); // the reference and a spare
}

double case_host_bytes(const Case &c) {
  double need = c.problem->causal ? 4.0 * double(c.problem->output_elems()) : 0; // y, final state
  for (auto &s : c.problem->shapes)
    need += 4.0 * double(s.output_elems());
  return need;
}

double host_bytes_needed(const Plan &p) {
  double need = 0;
  for (auto &pr : p.problems)
    need += problem_host_bytes(*pr);
  for (auto &c : p.cases)
    need += case_host_bytes(c);
  return need;
}

namespace {
// A plan of causal cases that needs too much: what does fit. --frames does not apply to them (each
// has its own length), so the remedy names cases: as many as fit together (smallest first), and
// the largest alone, with the plan's arms and with one host arm.
std::string causal_remedy(const Plan &p, double limit) {
  std::vector<std::tuple<double, double, std::string>> need; // all its cases, one case, the name
  for (auto &pr : p.problems) {
    if (!pr->causal)
      continue;
    double all = problem_host_bytes(*pr), one = 0;
    for (auto &c : p.cases)
      if (c.problem == pr.get()) {
        all += case_host_bytes(c);
        one = case_host_bytes(c);
      }
    need.emplace_back(all, problem_host_bytes(*pr) + one, pr->stage);
  }
  if (need.empty())
    return "";
  std::sort(need.begin(), need.end());
  double sum = 0;
  size_t fit = 0;
  while (fit < need.size() && sum + std::get<0>(need[fit]) <= limit)
    sum += std::get<0>(need[fit++]);
  const auto &[largest, largest_one, name] = need.back();
  std::string s = " (each has its own length: --frames does not apply): the " +
                  std::to_string(fit) + " smallest of the " + std::to_string(need.size()) +
                  " fit together" + (fit ? " (up to " + std::get<2>(need[fit - 1]) + ")" : "") +
                  "; the largest, " + name + ", needs " + gib(largest) + " with these arms";
  if (largest_one < largest)
    s += ", " + gib(largest_one) + " with one arm";
  s += largest <= limit ? ": run it alone (--stage " + name + ")"
       : largest_one <= limit
           ? ": run it alone with one arm (--stage " + name + " --arms cpu-f32 --twins none)"
           : ": more than fits here, a smaller C, L or batch does";
  return s + "; bench_conv --dry-run --stage causal lists each case's need";
}
} // namespace

std::string host_memory_refusal(const Plan &p, double limit) {
  const double need = host_bytes_needed(p);
  if (limit <= 0 || need <= limit)
    return "";
  const bool causal_only = std::all_of(p.problems.begin(), p.problems.end(),
                                       [](const auto &pr) { return bool(pr->causal); });
  return "the planned cases need " + gib(need) + " of host memory, more than " + gib(limit) +
         " (half of RAM): " +
         (causal_only ? "fewer causal cases" + causal_remedy(p, limit)
                      : std::string("fewer frames or stages"));
}

std::string memory_refusal(const Plan &p) {
  if (std::string why = host_memory_refusal(p, 0.5 * physical_memory_bytes()); !why.empty())
    return why;
  const double device_need = device_bytes_needed(p);
  const bool causal_only = std::all_of(p.problems.begin(), p.problems.end(),
                                       [](const auto &pr) { return bool(pr->causal); });
  const std::string fewer = causal_only ? "fewer causal cases (bench_conv --dry-run lists each "
                                          "case's need)"
                                        : "fewer frames or stages";
  // Against the GPU's total: what another run holds now is gone by the time this one holds the
  // lease (open_device checks what is free then).
  const double total = visible_gpu().total_bytes;
  if (p.gpu.present && p.any_device && total > 0 && device_need > 0.9 * total)
    return "the planned device cases need " + gib(device_need) +
           " of device memory, more than 90% of the GPU's " + gib(total) + ": " + fewer +
           ", or --staging per-call";
  return "";
}

Plan make_plan(const Options &opt, std::vector<std::string> argv, std::string started_utc) {
  plugin::set_plugin_timeout(opt.plugin_timeout);
  Plan p;
  p.opt = opt;
  p.argv = std::move(argv);
  p.started_utc = std::move(started_utc);
  const std::string dir = data_dir();
  ModelCatalog models = load_models(dir + "/models.json");
  DeviceCatalog devices = load_devices(dir + "/devices.json");
  const std::string model_name = opt.model.empty() ? models.default_model : opt.model;
  const Model *model = models.find(model_name);
  if (!model)
    throw UsageError("--model: unknown model '" + model_name +
                     "' (known: " + join(models.names(), ", ") + ")");
  p.model = *model;
  p.stages = expand_stages(opt.stages, p.model);
  p.gpu = gpu_identity(); // NVML only: nothing touches the GPU before the lease
  p.arms = choose_arms(expand_arm_patterns(opt.arms)); // "cuda-f32@*": every block shape
  p.any_device =
      std::any_of(p.arms.begin(), p.arms.end(), [](const Arm *a) { return a->device(); });
  plan_counters(p);
  plan_threads(p);
  plan_cases(p);
  plan_twins(p);
  plan_cudnn_algos(p);
  if (!opt.dry_run) // a dry run prints what would not fit beside the plan
    check_memory(p);
  p.devices = std::move(devices);
  if (!opt.dry_run) // a dry run writes nothing, not even the results folder
    check_outputs(p);
  return p;
}

} // namespace convbench::bench
