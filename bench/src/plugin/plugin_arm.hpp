// A plugin's arm as an `Arm`: from here on the run treats it as it treats a built-in arm (gate
// against cpu-f64, interleaved rounds in the one engine, probes, CUPTI, NVTX, the record).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "convbench/arm_plugin.h"
#include "plan/arm.hpp"

namespace convbench::bench::plugin {

// What the record says of the library an arm came from.
struct PluginInfo {
  std::string path;    // as loaded (absolute)
  std::string sha256;  // of the file's bytes
  std::string name;    // the plugin's own name
  std::string version; // the plugin's own version
};

// A failure inside a plugin that the run cannot step around: a call that failed after the arm
// passed its gate, or a device fault (the CUDA context is lost for every arm). The message names
// the plugin, the arm and the case.
class PluginFault : public std::runtime_error {
public:
  PluginFault(const std::string &what, std::string arm, bool context_lost)
      : std::runtime_error(what), arm(std::move(arm)), context_lost(context_lost) {}
  std::string arm;
  bool context_lost;
};

// Why bench_conv refuses a table entry (bad name, gate, tolerance, floor, missing callback);
// "" when it is acceptable. Shadowing a built-in arm is checked by the loader.
std::string check_arm_entry(const convbench_arm &a);

class PluginArm final : public Arm {
public:
  PluginArm(std::shared_ptr<const PluginInfo> info, const convbench_arm &arm);
  std::string name() const override { return name_; }
  bool device() const override { return arm_->device != 0; }
  GateKind gate() const override;
  double tolerance() const override { return arm_->tolerance; }
  std::string floor_kind() const override;
  bool available(std::string *why_not) const override;
  ArmFacts facts() const override;
  double device_bytes(const Problem &p, const std::string &staging) const override;
  std::unique_ptr<PreparedArm> prepare(const Problem &p, const std::string &staging,
                                       const ArmContext &ctx) const override;
  nlohmann::json describe(const Problem &p) const override;
  bool supports(const Problem &p, std::string *why_not) const override;

  // The plugin's own table entry (callbacks get this pointer, so `user` and identity hold).
  const convbench_arm &entry() const { return *arm_; }
  const PluginInfo &info() const { return *info_; }
  // "plugin <path>: arm <name>", the start of every line about this arm.
  std::string label() const;
  // Says `why` on stderr, once, as "<label>: <case>: <why>", and keeps it for the record.
  void refuse(const Problem &p, const std::string &staging, const std::string &why) const;

private:
  std::shared_ptr<const PluginInfo> info_;
  const convbench_arm *arm_;
  std::string name_;
  mutable std::mutex mutex_;
  mutable std::map<std::pair<const Problem *, std::string>, std::string> refusals_;
};

// The case id the lines name: "up3/4 host".
std::string case_words(const Problem &p, const std::string &staging);

} // namespace convbench::bench::plugin
