#include "plugin_arm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>

#include "boundary.hpp"
#include "convbench/thread_pool.hpp"
#include "core/device_gate.hpp"
#include "plugin_case.hpp"

namespace convbench::bench::plugin {

std::string check_arm_entry(const convbench_arm &a) {
  if (!a.name || !*a.name)
    return "an arm has no name";
  const std::string name = a.name;
  if (name.size() > 63)
    return "arm name '" + name.substr(0, 63) + "...' is longer than 63 characters";
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
      return "arm name '" + one_line(a.name) +
             "' may hold only lower-case letters, digits, '-', '.' and '_'";
  if (a.device != 0 && a.device != 1)
    return "arm " + name + ": device must be 0 (host) or 1 (CUDA), not " + std::to_string(a.device);
  if (a.gate == CONVBENCH_GATE_TOLERANCE) {
    if (!(a.tolerance > 0 && a.tolerance < 1))
      return "arm " + name + ": a tolerance gate needs a tolerance in (0, 1), not " +
             std::to_string(a.tolerance);
  } else if (a.gate != CONVBENCH_GATE_BITWISE) {
    return "arm " + name + ": gate must be CONVBENCH_GATE_BITWISE or CONVBENCH_GATE_TOLERANCE";
  }
  if (a.device) {
    const std::string f = a.floor_kind ? a.floor_kind : "";
    if (f != "fp32_fma" && f != "fp64_fma" && f != "fp64_nofma")
      return "arm " + name + ": a device arm's floor_kind must be fp32_fma, fp64_fma or fp64_nofma";
  }
  if (!a.prepare || !a.call || !a.output || !a.release || !a.last_error)
    return "arm " + name + ": prepare, call, output, release and last_error are required";
  return "";
}

std::string case_words(const Problem &p, const std::string &staging) {
  return p.stage + "/" + std::to_string(p.frames) + " " + staging;
}

PluginArm::PluginArm(std::shared_ptr<const PluginInfo> info, const convbench_arm &arm)
    : info_(std::move(info)), arm_(&arm), name_(arm.name) {}

GateKind PluginArm::gate() const {
  return arm_->gate == CONVBENCH_GATE_BITWISE ? GateKind::bitwise : GateKind::tolerance;
}

std::string PluginArm::floor_kind() const {
  return arm_->device && arm_->floor_kind ? arm_->floor_kind : "";
}

// The plugin states no precision: its name's accumulator (<provider>-<accumulator>[-<variant>])
// where that is one the record knows, else its floor's arithmetic (a device arm), else unknown.
ArmFacts PluginArm::facts() const {
  ArmFacts f{std::nullopt, "plugin", ArmRole::candidate};
  const auto dash = name_.find('-');
  const std::string acc =
      dash == std::string::npos ? "" : name_.substr(dash + 1, name_.find('-', dash + 1) - dash - 1);
  for (ArmPrecision p : {ArmPrecision::f64, ArmPrecision::f32, ArmPrecision::f32x3,
                         ArmPrecision::tf32, ArmPrecision::bf16})
    if (acc == to_string(p))
      f.precision = p;
  const std::string floor = floor_kind();
  if (!f.precision && !floor.empty())
    f.precision = floor.rfind("fp64", 0) == 0 ? ArmPrecision::f64 : ArmPrecision::f32;
  return f;
}

bool PluginArm::available(std::string *why_not) const {
  if (!device())
    return true;
  return gpu_visible(why_not); // no CUDA call: this runs before the lease
}

double PluginArm::device_bytes(const Problem &p, const std::string &staging) const {
  if (!device())
    return 0.0;
  // Resident: convbench's buffers of every stage. Per-call: what the plugin is likely to hold at
  // once (the largest stage), which is all convbench can know.
  double sum = 0, most = 0;
  for (const auto &s : p.shapes) {
    const double b = 4.0 * (double(s.input_elems()) + double(s.weight_elems()) + double(s.cout) +
                            double(s.output_elems()));
    sum += b;
    most = std::max(most, b);
  }
  return staging == "resident" ? sum : most;
}

std::string PluginArm::label() const { return "plugin " + info_->path + ": arm " + name_; }

void PluginArm::refuse(const Problem &p, const std::string &staging, const std::string &why) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, fresh] = refusals_.emplace(std::make_pair(&p, staging), why);
  if (fresh)
    std::cerr << "bench_conv: " << label() << ": " << case_words(p, staging) << ": " << why
              << "; the case is not timed\n";
}

bool PluginArm::supports(const Problem &p, std::string *why_not) const {
  if (p.causal) {
    // Reserved in the ABI (CONVBENCH_OP_CAUSAL_DEPTHWISE), not yet passed through: its initial
    // and final state have no place in convbench_problem v1.
    *why_not = "the causal depthwise op does not pass through the plugin ABI v1 yet";
    return false;
  }
  for (const auto &s : p.shapes) {
    convbench_shape cs{};
    if (!to_abi_shape(s, &cs, why_not))
      return false;
    if (!arm_->supports)
      continue;
    char why[512] = {0};
    int32_t st = CONVBENCH_OK;
    const std::string notice = "bench_conv: " + label() + ": supports";
    const std::string failure = guarded(
        "supports", notice, [&] { return st = arm_->supports(arm_, &cs, why, sizeof why); },
        [&] { return arm_->last_error(arm_, nullptr); });
    if (st == CONVBENCH_UNSUPPORTED) {
      why[sizeof why - 1] = 0;
      *why_not = one_line(why, "the plugin gave no reason");
      return false;
    }
    if (!failure.empty()) {
      *why_not = failure;
      return false;
    }
  }
  return true;
}

std::unique_ptr<PreparedArm> PluginArm::prepare(const Problem &p, const std::string &staging,
                                                const ArmContext &ctx) const {
  return prepare_plugin_case(*this, p, staging, ctx.pool ? ctx.pool->size() : 1);
}

nlohmann::json PluginArm::describe(const Problem &p) const {
  nlohmann::json j = {{"plugin",
                       {{"name", info_->name},
                        {"path", info_->path},
                        {"sha256", info_->sha256},
                        {"version", info_->version},
                        {"abi_version", CONVBENCH_ARM_PLUGIN_ABI_VERSION}}}};
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto &[key, why] : refusals_)
    if (key.first == &p)
      j["plugin"]["refused"][key.second] = why;
  return j;
}

} // namespace convbench::bench::plugin
