#include "record/record.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "convbench/lease/lease.hpp"
#include "core/atomic_write.hpp"
#include "plan/floors.hpp"
#include "plan/plan.hpp"
#include "plugin/plugin_loader.hpp"
#include "probes/sysinfo.hpp"
#include "record/journal.hpp"

namespace convbench::bench {

using nlohmann::json;

namespace {

constexpr int kSchemaVersion = 2; // 2: status, stopping, probes, journal

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

template <class T> json opt(const std::optional<T> &v) { return v ? json(*v) : json(nullptr); }

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

json floor_json(const std::optional<CaseFloor> &f) {
  if (!f)
    return nullptr;
  return {{"fp32_fma", f->fp32_fma},   {"fp64_fma", f->fp64_fma}, {"fp64_nofma", f->fp64_nofma},
          {"fp64_dmma", f->fp64_dmma}, {"memory", f->memory},     {"arm", f->arm},
          {"arm_kind", f->arm_kind}};
}

json stop_reason(const Case &c) {
  if (!c.gate.pass)
    return nullptr;
  if (c.cut_short)
    return "interrupted";
  return c.stop.stop() ? json(to_string(c.stop.reason)) : json(nullptr);
}

// The median's 95% interval the stopping rule saw last: {n, median, lo, hi, coverage,
// half_width, target}.
json interval_json(const StopDecision &d) {
  json j = d.to_json();
  j.erase("reason");
  return j;
}

json case_json(const Case &c, const std::optional<DeviceFloors> &floors) {
  const Problem &p = *c.problem;
  json samples = json::array();
  for (const auto &s : c.samples)
    samples.push_back(sample_json(s));
  const auto secs = c.seconds();
  const ArmFacts facts = c.arm->facts();
  return {{"id", c.id},
          {"stage", p.stage},
          {"frames", p.frames},
          {"arm", c.arm->name()},
          {"precision", facts.precision ? json(to_string(*facts.precision)) : json(nullptr)},
          {"math", facts.math},
          {"role", to_string(facts.role)},
          {"staging", c.staging},
          {"twin_of", c.twin_of.empty() ? json(nullptr) : json(c.twin_of)},
          {"device", c.arm->device()},
          {"shape", problem_shape_json(p)},
          {"flops", p.flops()},
          {"min_bytes", p.min_bytes()},
          {"floor_s", floor_json(case_floor(c, floors))},
          {"kernel", kernel_json(c.arm->describe(p), c.chosen)},
          {"gate", gate_json(c.gate)},
          {"samples", samples},
          {"stats", secs.empty() ? json(nullptr) : stats_json(compute_stats(secs))},
          {"target_ci", c.rule.target},
          {"stop_reason", stop_reason(c)},
          {"interval", c.gate.pass ? interval_json(c.stop) : json(nullptr)},
          {"counters", c.counters}};
}

std::string cuda_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

json gpus_json(const GpuFacts &f, const GpuNvmlFacts &n) {
  if (!f.present)
    return json::array();
  json un(n.unavailable);
  json entry = {{"index", 0},
                {"name", f.name},
                {"uuid", f.uuid},
                {"pci_bus_id", f.pci_bus_id},
                {"driver", opt(n.driver)},
                {"cuda_runtime", cuda_version(f.runtime_version)},
                {"cuda_driver_api", cuda_version(f.driver_version)},
                {"sm_count", f.sm_count},
                {"sm_clock_max_mhz", opt(n.sm_clock_max_mhz)},
                {"mem_clock_max_mhz", opt(n.mem_clock_max_mhz)},
                {"l2_bytes", f.l2_bytes}};
  if (entry["sm_clock_max_mhz"].is_null() && f.sm_clock_max_khz > 0) {
    entry["sm_clock_max_mhz"] = f.sm_clock_max_khz / 1000;
    un.erase("sm_clock_max_mhz");
  }
  entry["unavailable"] = un.is_null() ? json::object() : un;
  return json::array({entry});
}

json stopping_json(const Options &o) {
  json target = o.target_ci_percent ? json(*o.target_ci_percent)
                                    : json{{"resident_device", 0.5}, {"host_and_per_call", 1.0}};
  return {{"target_ci_percent", target},
          {"min_rounds", o.reps},
          {"max_rounds", o.target_ci_percent && *o.target_ci_percent == 0 ? o.reps : o.max_rounds},
          {"max_time_s", o.max_time},
          {"estimator", "median"},
          {"interval", "order-statistic 95% interval of the median"}};
}

json plan_json(const Plan &plan, const std::vector<RoundOrder> &order,
               const json &speed_calibration) {
  std::vector<std::string> arms, stagings;
  for (auto *a : plan.arms)
    arms.push_back(a->name());
  for (auto &c : plan.cases)
    if (std::find(stagings.begin(), stagings.end(), c.staging) == stagings.end())
      stagings.push_back(c.staging);
  json rounds = json::array();
  for (const auto &r : order)
    rounds.push_back({{"round", r.round}, {"seed", r.seed}, {"cases", r.cases}});
  return {{"model", plan.model.name},
          {"stages", plan.stages},
          {"frames", plan.opt.frames},
          {"arms", arms},
          {"staging", stagings},
          {"reps", plan.opt.reps},
          {"twins", plan.opt.twins},
          {"seed", plan.opt.seed},
          {"threads", plan.threads},
          {"min_time_s", plan.opt.min_time},
          {"device_timing", plan.opt.device_timing},
          {"stopping", stopping_json(plan.opt)},
          {"placement", {{"pinned", plan.placement.pinned}, {"cpus", plan.placement.cpus}}},
          {"speed_calibration", speed_calibration},
          {"order", rounds}};
}

} // namespace

namespace {

// The worst cell's relative error and the least allclose rel per absolute floor (keys "0",
// "1e-09", ..., "1e-03"); null where no rel suffices, with its reason under "unavailable".
void allclose_json(const GateResult &g, json &j) {
  j["max_rel_err"] = number_or_null(g.max_rel_err);
  if (!std::isfinite(g.max_rel_err))
    j["unavailable"]["max_rel_err"] = std::isfinite(g.max_abs_err)
                                          ? "a cell whose reference is 0 differs from it"
                                          : "the output holds NaN or infinity";
  if (g.allclose_rel_needed.empty())
    return;
  json need = json::object();
  bool unbounded = false;
  for (size_t k = 0; k < g.allclose_rel_needed.size(); ++k) {
    char floor[16];
    snprintf(floor, sizeof floor, kAllcloseFloors[k] == 0 ? "%.0f" : "%.0e", kAllcloseFloors[k]);
    need[floor] = number_or_null(g.allclose_rel_needed[k]);
    unbounded |= !std::isfinite(g.allclose_rel_needed[k]);
  }
  j["allclose_rel_needed"] = need;
  if (unbounded)
    j["unavailable"]["allclose_rel_needed"] =
        "null at a floor: a cell whose reference is 0 differs from it by more than the floor, "
        "so no rel meets allclose there";
}

} // namespace

json gate_json(const GateResult &g) {
  char crc[16];
  snprintf(crc, sizeof crc, "%08x", g.output_crc32);
  json j = {{"kind", to_string(g.kind)},
            {"result", g.pass ? "pass" : "fail"},
            {"mismatches", g.mismatches},
            {"max_abs_err", number_or_null(g.max_abs_err)},
            {"rel_l2_err", number_or_null(g.rel_l2_err)},
            {"tolerance", g.kind == GateKind::tolerance || g.kind == GateKind::gemm
                              ? json(g.tolerance)
                              : json(nullptr)},
            {"output_crc32", crc}};
  if (g.kind == GateKind::gemm) {
    j["cells"] = g.cells;
    j["checks"] = "the GEMM's sampled cells against the host's f64 product of the same operands "
                  "(the arm computes no convolution)";
  }
  if (g.kind == GateKind::self) {
    // Bytes (the copy) or words (the launch), equal or not: no value has an error.
    j["cells"] = g.cells;
    j["checks"] = "its own product, a poisoned destination the call must overwrite exactly: "
                  "`mismatches` of `cells` differ (the arm computes no convolution)";
    j["max_abs_err"] = j["rel_l2_err"] = nullptr;
    j["unavailable"] = {{"max_abs_err", "a self check compares bytes, not values"},
                        {"rel_l2_err", "a self check compares bytes, not values"}};
  } else if (!std::isfinite(g.max_abs_err) || !std::isfinite(g.rel_l2_err)) {
    j["unavailable"] = {{"max_abs_err", "the output holds NaN or infinity"}};
  }
  if (!checks_itself(g.kind))
    allclose_json(g, j);
  if (!g.sibling.empty())
    j["sibling"] = {{"arm", g.sibling},
                    {"mismatches", g.sibling_mismatches},
                    {"result", g.sibling_mismatches == 0 ? "pass" : "fail"}};
  return j;
}

json stats_json(const Stats &s) {
  return {{"best", s.best}, {"median", s.median}, {"min", s.min},       {"max", s.max},
          {"mean", s.mean}, {"cv", s.cv},         {"spread", s.spread}, {"n", s.n}};
}

json host_snapshot_json(const HostSnapshot &h) {
  return {{"loadavg_1m", opt(h.loadavg_1m)},
          {"runnable", opt(h.runnable)},
          {"governor", opt(h.governor)},
          {"cpu_mhz", opt(h.cpu_mhz)},
          {"unavailable", h.unavailable}};
}

json gpu_snapshot_json(const GpuSnapshot &g) {
  json j = {{"sm_clock_mhz", opt(g.sm_clock_mhz)},
            {"mem_clock_mhz", opt(g.mem_clock_mhz)},
            {"temperature_c", opt(g.temperature_c)},
            {"power_w", opt(g.power_w)},
            {"throttle_reasons", opt(g.throttle_reasons)},
            {"foreign_processes", opt(g.foreign_processes)},
            {"processes", opt(g.processes)},
            {"violation_ns", g.violation_ns.empty() ? json(nullptr) : json(g.violation_ns)},
            {"unavailable", json::object()}};
  for (const auto &[k, v] : g.unavailable)
    j["unavailable"][k] = v;
  return j;
}

namespace {

// Per worker: its CPU, its partitions' wall time, its own CPU time in the sample (getrusage
// RUSAGE_THREAD, read outside the timing), its preemptions, its delivered speed before and after.
json workers_json(const HostProbes &p) {
  json out = json::array();
  for (size_t w = 0; w < p.workers.size(); ++w) {
    const auto &st = p.workers[w];
    json e = {{"worker", st.worker},           {"cpu", st.first_cpu}, {"cpu_last", st.last_cpu},
              {"cpu_changes", st.cpu_changes}, {"tasks", st.tasks},   {"task_s", st.task_s}};
    const bool own = w < p.contention.threads.size();
    e["cpu_s"] = own ? json(p.contention.threads[w].cpu_s) : json(nullptr);
    e["involuntary_cs"] = own ? json(p.contention.threads[w].involuntary_cs) : json(nullptr);
    auto speed = [&](const std::vector<WorkerSpeed> &v) {
      return w < v.size() ? v[w].to_json() : json(nullptr);
    };
    e["speed_before"] = speed(p.speed_before);
    e["speed_after"] = speed(p.speed_after);
    out.push_back(e);
  }
  return out;
}

// Microseconds the clocks were held down under each policy during the sample, and that as a
// share of the sample's wall time ("power-capped 31% of its time").
void add_violation_json(json &j, const Sample &s) {
  j["violation_us"] = nullptr;
  j["violation_share"] = nullptr;
  if (!s.gpu_probed)
    return;
  const double wall_us = (s.host_after.wall_s - s.host_before.wall_s) * 1e6;
  json us = json::object(), share = json::object();
  for (const auto &[policy, after] : s.gpu_after.violation_ns) {
    auto it = s.gpu_before.violation_ns.find(policy);
    if (it == s.gpu_before.violation_ns.end() || after < it->second)
      continue; // a counter that went back (driver reset) says nothing about this sample
    const double d = double(after - it->second) / 1e3;
    us[policy] = d;
    share[policy] = wall_us > 0 ? std::min(1.0, d / wall_us) : 0.0;
  }
  if (us.empty()) {
    j["unavailable"]["violation_us"] = "NVML gave no violation counter at both ends of the sample";
    return;
  }
  j["violation_us"] = us;
  j["violation_share"] = share;
}

void add_probes_json(json &j, const Sample &s) {
  const HostProbes &p = s.probes;
  j["workers"] = s.device ? json(nullptr) : workers_json(p);
  j["imbalance"] = s.device || p.imbalance <= 0 ? json(nullptr) : json(p.imbalance);
  auto slowest = [](const std::vector<WorkerSpeed> &v) { return opt(slowest_relative(v)); };
  j["slowest_speed_before"] = s.device ? json(nullptr) : slowest(p.speed_before);
  j["slowest_speed_after"] = s.device ? json(nullptr) : slowest(p.speed_after);
  j["contention"] = p.contention.to_json();
  j["foreign_cpu_window"] = p.foreign.to_json();
  json top = json::array();
  for (const auto &f : p.top_foreign)
    top.push_back(f.to_json());
  j["top_foreign"] = top;
  j["probe_seconds"] = p.probe_seconds;
  add_violation_json(j, s);
}

} // namespace

json sample_json(const Sample &s) {
  const bool gpu = s.gpu_probed;
  json j = {{"round", s.round},
            {"position", s.position},
            {"seconds", s.timing.seconds},
            {"iterations", s.timing.iterations},
            {"total_seconds", s.timing.total_seconds},
            {"host_before", host_snapshot_json(s.host_before)},
            {"host_after", host_snapshot_json(s.host_after)},
            {"foreign_cpu_s", opt(s.foreign.seconds)},
            {"foreign_cpu_share", opt(s.foreign.share)},
            {"gpu_before", gpu ? gpu_snapshot_json(s.gpu_before) : json(nullptr)},
            {"gpu_after", gpu ? gpu_snapshot_json(s.gpu_after) : json(nullptr)},
            {"measured_sm_clock_mhz", s.device ? number_or_null(s.sm_clock_mhz) : json(nullptr)},
            {"unavailable", json::object()}};
  if (!s.foreign.seconds)
    j["unavailable"]["foreign_cpu_s"] = j["unavailable"]["foreign_cpu_share"] =
        s.foreign.why_unavailable;
  if (s.device && !std::isfinite(s.sm_clock_mhz))
    j["unavailable"]["measured_sm_clock_mhz"] = "no SM was seen by both clock probes";
  add_probes_json(j, s);
  if (s.neighbours)
    j["neighbours"] = neighbours_json(*s.neighbours);
  return j;
}

json benchmarks_view(const std::vector<BenchmarkRun> &runs) {
  json out = json::array();
  int family = 0;
  for (const auto &run : runs) {
    if (run.seconds.empty())
      continue;
    auto base = [&](const std::string &name) {
      return json{{"name", name},
                  {"family_index", family},
                  {"per_family_instance_index", 0},
                  {"run_name", run.id},
                  {"repetitions", run.seconds.size()},
                  {"threads", 1},
                  {"time_unit", "us"}};
    };
    std::vector<double> us;
    for (size_t i = 0; i < run.seconds.size(); ++i) {
      auto e = base(run.id);
      e["run_type"] = "iteration";
      e["repetition_index"] = run.rounds[i];
      e["iterations"] = run.iterations[i];
      e["real_time"] = e["cpu_time"] = run.seconds[i] * 1e6;
      us.push_back(run.seconds[i] * 1e6);
      out.push_back(e);
    }
    const Stats st = compute_stats(us);
    auto agg = [&](const char *name, double v, const char *unit) {
      auto e = base(run.id + "_" + name);
      e["run_type"] = "aggregate";
      e["aggregate_name"] = name;
      e["aggregate_unit"] = unit;
      e["iterations"] = us.size();
      e["real_time"] = e["cpu_time"] = v;
      out.push_back(e);
    };
    agg("mean", st.mean, "time");
    agg("median", st.median, "time");
    agg("stddev", st.stdev, "time");
    agg("cv", st.cv, "percentage");
    ++family;
  }
  return out;
}

namespace {

std::vector<BenchmarkRun> benchmark_runs(const std::vector<Case> &cases) {
  std::vector<BenchmarkRun> runs;
  for (const auto &c : cases) {
    BenchmarkRun b{c.id, {}, {}, {}};
    for (const auto &s : c.samples) {
      b.rounds.push_back(s.round);
      b.iterations.push_back(s.timing.iterations);
      b.seconds.push_back(s.timing.seconds);
    }
    runs.push_back(b);
  }
  return runs;
}

std::vector<BenchmarkRun> benchmark_runs(const json &cases) {
  std::vector<BenchmarkRun> runs;
  for (const auto &c : cases) {
    BenchmarkRun b{c.at("id").get<std::string>(), {}, {}, {}};
    for (const auto &s : c.at("samples")) {
      b.rounds.push_back(s.at("round").get<int>());
      b.iterations.push_back(s.at("iterations").get<int64_t>());
      b.seconds.push_back(s.at("seconds").get<double>());
    }
    runs.push_back(b);
  }
  return runs;
}

constexpr const char *kSignalNames[] = {"", "SIGHUP", "SIGINT", "SIGQUIT"};

} // namespace

std::string signal_name(int sig) {
  if (sig == 15)
    return "SIGTERM";
  return sig > 0 && sig < 4 ? kSignalNames[sig] : "signal " + std::to_string(sig);
}

void write_record(const std::string &path, const nlohmann::json &record) {
  write_atomically(path, record.dump(1) + "\n");
}

json build_record(const Plan &plan, const RunOutcome &out) {
  json cases = json::array();
  for (const auto &c : plan.cases)
    cases.push_back(case_json(c, plan.floors));
  json context = benchmark_context();
  context["date"] = plan.started_utc;
  context["executable"] = plan.argv.empty() ? "" : plan.argv[0];
  json r = {{"schema_version", kSchemaVersion},
            {"status", out.status},
            {"run_id", out.run_id},
            {"tool", tool_block()},
            {"argv", plan.argv},
            {"started_utc", plan.started_utc},
            {"ended_utc", lease::utc_now()},
            {"exit_status", out.exit_status},
            {"host", host_block()},
            {"gpus", gpus_json(plan.gpu, out.gpu_nvml)},
            {"plan", plan_json(plan, out.order, out.speed_calibration)},
            {"lease", out.lease},
            {"cases", cases},
            {"benchmarks", benchmarks_view(benchmark_runs(plan.cases))},
            {"context", context},
            {"journal", plan.journal_path},
            {"plugins", plugin::plugins_json()}};
  r["tool"]["binary_sha"] = binary_sha();
  if (out.status == "interrupted")
    r["interrupted"] = {{"signal", signal_name(out.signal)},
                        {"rounds_started", out.order.size()},
                        {"at_utc", r["ended_utc"]}};
  if (!plan.gpu.present)
    r["host"]["gpu_unavailable"] = plan.gpu.why_not;
  if (!plan.opt.dump.empty())
    r["dump_dir"] = plan.opt.dump;
  return r;
}

json journal_header_json(const Plan &plan, const RunOutcome &out) {
  return {{"record", build_record(plan, out)}};
}

json journal_round_json(const RoundOrder &order,
                        const std::vector<std::pair<const Case *, const Sample *>> &taken,
                        const json &lease) {
  json samples = json::array(), stops = json::object();
  for (const auto &[c, s] : taken) {
    samples.push_back({{"case", c->id}, {"sample", sample_json(*s)}});
    stops[c->id] = {
        {"stop_reason", c->stop.stop() ? json(to_string(c->stop.reason)) : json(nullptr)},
        {"interval", interval_json(c->stop)}};
  }
  return {{"round", order.round}, {"seed", order.seed}, {"cases", order.cases},
          {"samples", samples},   {"stops", stops},     {"lease", lease}};
}

json recover_record(const std::string &journal_path, int exit_status) {
  const Journal j = read_journal(journal_path);
  json r = j.header.at("record");
  std::map<std::string, json *> by_id;
  for (auto &c : r.at("cases"))
    by_id[c.at("id").get<std::string>()] = &c;
  json &order = r["plan"]["order"];
  order = json::array();
  for (const auto &round : j.rounds) {
    order.push_back(
        {{"round", round.at("round")}, {"seed", round.at("seed")}, {"cases", round.at("cases")}});
    for (const auto &e : round.at("samples")) {
      auto it = by_id.find(e.at("case").get<std::string>());
      if (it == by_id.end())
        throw JournalError("journal " + journal_path + ": round " + round.at("round").dump() +
                           " names a case the header does not plan: " + e.at("case").dump());
      (*it->second)["samples"].push_back(e.at("sample"));
    }
    for (const auto &[id, stop] : round.at("stops").items()) {
      json &c = *by_id.at(id);
      c["stop_reason"] = stop.at("stop_reason");
      c["interval"] = stop.at("interval");
    }
  }
  for (auto &c : r["cases"]) {
    std::vector<double> secs;
    for (const auto &s : c["samples"])
      secs.push_back(s.at("seconds").get<double>());
    c["stats"] = secs.empty() ? json(nullptr) : stats_json(compute_stats(secs));
    if (c["gate"]["result"] == "pass" && c["stop_reason"].is_null())
      c["stop_reason"] = "interrupted";
    c["counters"] = {{"status", "not-collected"},
                     {"reason", "the run was killed before its counter pass"}};
  }
  r["benchmarks"] = benchmarks_view(benchmark_runs(r["cases"]));
  // The lease as the last journaled round left it (its start check, renewals, observation); the
  // header's is from before the start check.
  if (!j.rounds.empty() && j.rounds.back().contains("lease") &&
      j.rounds.back()["lease"].is_object())
    r["lease"] = j.rounds.back()["lease"];
  // The lease was never verified after the last sample, nor observed past the journal.
  if (r["lease"].value("verdict", "") == "valid") {
    r["lease"]["verdict"] = "void";
    r["lease"]["reasons"].push_back("the run was killed: the lease was not verified after its "
                                    "last sample (the record is recovered from its journal)");
  }
  r["status"] = "recovered";
  r["exit_status"] = exit_status;
  r["recovered"] = {{"journal", journal_path},
                    {"rounds", j.rounds.size()},
                    {"torn_bytes", j.torn_bytes},
                    {"at_utc", lease::utc_now()}};
  r["ended_utc"] = r["recovered"]["at_utc"];
  return r;
}

} // namespace convbench::bench
