#include "record.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "convbench/lease/lease.hpp"
#include "floors.hpp"
#include "plan.hpp"
#include "runner.hpp"
#include "sysinfo.hpp"

namespace convbench::bench {

using nlohmann::json;

namespace {

constexpr int kSchemaVersion = 1;

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

template <class T> json opt(const std::optional<T> &v) { return v ? json(*v) : json(nullptr); }

json shape_json(const ConvShape &s, const std::string &stage) {
  return {{"stage", stage},       {"op", s.op == ConvOp::transposed ? "transposed" : "forward"},
          {"batch", s.batch},     {"cin", s.cin},
          {"cout", s.cout},       {"k", s.k},
          {"stride", s.stride},   {"dilation", s.dilation},
          {"padding", s.padding}, {"output_padding", s.output_padding},
          {"l_in", s.l_in},       {"l_out", s.l_out()},
          {"bias", s.bias}};
}

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
  return {{"fp32_fma", f->fp32_fma}, {"fp64_fma", f->fp64_fma}, {"fp64_nofma", f->fp64_nofma},
          {"memory", f->memory},     {"arm", f->arm},           {"arm_kind", f->arm_kind}};
}

json case_json(const Case &c, const std::optional<DeviceFloors> &floors) {
  const Problem &p = *c.problem;
  json samples = json::array();
  for (const auto &s : c.samples)
    samples.push_back(sample_json(s));
  const auto secs = c.seconds();
  return {{"id", c.id},
          {"stage", p.stage},
          {"frames", p.frames},
          {"arm", c.arm->name()},
          {"staging", c.staging},
          {"device", c.arm->device()},
          {"shape", problem_shape_json(p)},
          {"flops", p.flops()},
          {"min_bytes", p.min_bytes()},
          {"floor_s", floor_json(case_floor(c, floors))},
          {"kernel", kernel_json(c.arm->describe(p), c.chosen)},
          {"gate", gate_json(c.gate)},
          {"samples", samples},
          {"stats", secs.empty() ? json(nullptr) : stats_json(compute_stats(secs))},
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

json plan_json(const Plan &plan, const std::vector<RoundOrder> &order) {
  std::vector<std::string> arms, stagings;
  for (auto *a : plan.arms)
    arms.push_back(a->name());
  for (auto &c : plan.cases)
    if (std::find(stagings.begin(), stagings.end(), c.staging) == stagings.end())
      stagings.push_back(c.staging);
  json rounds = json::array();
  for (const auto &r : order)
    rounds.push_back({{"round", r.round}, {"seed", r.seed}, {"cases", r.cases}});
  return {{"model", plan.model.name},       {"stages", plan.stages},
          {"frames", plan.opt.frames},      {"arms", arms},
          {"staging", stagings},            {"reps", plan.opt.reps},
          {"seed", plan.opt.seed},          {"threads", plan.threads},
          {"min_time_s", plan.opt.min_time}, {"device_timing", plan.opt.device_timing},
          {"order", rounds}};
}

} // namespace

json problem_shape_json(const Problem &p) {
  if (p.stage != "chain")
    return shape_json(p.shapes[0], p.stage_names[0]);
  json stages = json::array();
  for (size_t i = 0; i < p.shapes.size(); ++i)
    stages.push_back(shape_json(p.shapes[i], p.stage_names[i]));
  return {{"batch", p.shapes[0].batch}, {"stages", stages}};
}

json gate_json(const GateResult &g) {
  char crc[16];
  snprintf(crc, sizeof crc, "%08x", g.output_crc32);
  json j = {{"kind", to_string(g.kind)},
            {"result", g.pass ? "pass" : "fail"},
            {"mismatches", g.mismatches},
            {"max_abs_err", number_or_null(g.max_abs_err)},
            {"rel_l2_err", number_or_null(g.rel_l2_err)},
            {"tolerance", g.kind == GateKind::tolerance ? json(g.tolerance) : json(nullptr)},
            {"output_crc32", crc}};
  if (!std::isfinite(g.max_abs_err) || !std::isfinite(g.rel_l2_err))
    j["unavailable"] = {{"max_abs_err", "the output holds NaN or infinity"}};
  return j;
}

json stats_json(const Stats &s) {
  return {{"best", s.best}, {"median", s.median}, {"min", s.min},       {"max", s.max},
          {"mean", s.mean}, {"cv", s.cv},         {"spread", s.spread}, {"n", s.n}};
}

json host_snapshot_json(const HostSnapshot &h) {
  return {{"loadavg_1m", opt(h.loadavg_1m)}, {"runnable", opt(h.runnable)},
          {"governor", opt(h.governor)},     {"cpu_mhz", opt(h.cpu_mhz)},
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
  return j;
}

json benchmarks_view(const std::vector<Case> &cases, int reps) {
  json out = json::array();
  int family = 0;
  for (const auto &c : cases) {
    if (c.samples.empty())
      continue;
    auto base = [&](const std::string &name) {
      return json{{"name", name},       {"family_index", family}, {"per_family_instance_index", 0},
                  {"run_name", c.id},   {"repetitions", reps},    {"threads", 1},
                  {"time_unit", "us"}};
    };
    std::vector<double> us;
    for (const auto &s : c.samples) {
      auto e = base(c.id);
      e["run_type"] = "iteration";
      e["repetition_index"] = s.round;
      e["iterations"] = s.timing.iterations;
      e["real_time"] = e["cpu_time"] = s.timing.seconds * 1e6;
      us.push_back(s.timing.seconds * 1e6);
      out.push_back(e);
    }
    const Stats st = compute_stats(us);
    auto agg = [&](const char *name, double v, const char *unit) {
      auto e = base(c.id + "_" + name);
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

json build_record(const Plan &plan, const RunOutcome &out) {
  json cases = json::array();
  for (const auto &c : plan.cases)
    cases.push_back(case_json(c, plan.floors));
  json context = SampleRunner::context();
  context["date"] = plan.started_utc;
  context["executable"] = plan.argv.empty() ? "" : plan.argv[0];
  json r = {{"schema_version", kSchemaVersion},
            {"run_id", out.run_id},
            {"tool", tool_block()},
            {"argv", plan.argv},
            {"started_utc", plan.started_utc},
            {"ended_utc", lease::utc_now()},
            {"exit_status", out.exit_status},
            {"host", host_block()},
            {"gpus", gpus_json(plan.gpu, out.gpu_nvml)},
            {"plan", plan_json(plan, out.order)},
            {"lease", out.lease},
            {"cases", cases},
            {"benchmarks", benchmarks_view(plan.cases, plan.opt.reps)},
            {"context", context}};
  if (!plan.gpu.present)
    r["host"]["gpu_unavailable"] = plan.gpu.why_not;
  if (!plan.opt.dump.empty())
    r["dump_dir"] = plan.opt.dump;
  return r;
}

} // namespace convbench::bench
