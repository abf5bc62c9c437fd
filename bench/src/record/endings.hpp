// The endings of a run other than "complete", built here, beside the record they vary: a signal
// before the first timed round ("interrupted": the plan and the gates done, no samples), a plugin
// arm's fault in the gate or in the rounds ("faulted": as far as the gate got, or the journal's
// finished rounds, with the fault named). "recovered" (a killed run's journal) is
// recover_record in record.hpp.
#pragma once

#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "plugin/plugin_arm.hpp"
#include "record/record.hpp"

namespace convbench::bench {

struct Plan;

// The record as it would be written if a signal or a fault ended the run before its first timed
// round: the plan, no samples, each case's gate as far as the gate got. A case the gate has not
// reached has the gate result "not-run" (it is not timed) with `unavailable` saying why. Built
// once the cases' stopping rules are set (their targets go into the record).
class PreRoundsRecord {
public:
  PreRoundsRecord(const Plan &plan, const RunOutcome &out);
  void gated(const Case &c); // the gate has passed or failed this case
  // Status "interrupted", with the lease block and exit status.
  nlohmann::json interrupted_record(const nlohmann::json &lease_block, int exit_status) const;
  // Status "faulted": a plugin arm's fault ended the run in its gate.
  nlohmann::json faulted_record(const nlohmann::json &lease_block, int exit_status,
                                const plugin::PluginFault &f) const;

private:
  nlohmann::json as_far_as_gated(const nlohmann::json &lease_block, int exit_status,
                                 const std::string &no_counters) const;

  nlohmann::json base_;
  std::map<std::string, nlohmann::json> not_gated_;
  std::map<std::string, std::pair<nlohmann::json, nlohmann::json>> gated_; // gate, chosen
};

// Status "faulted" in the rounds: the journal's finished rounds, the lease, the fault.
nlohmann::json faulted_rounds_record(const std::string &journal_path,
                                     const nlohmann::json &lease_block, int exit_status,
                                     const plugin::PluginFault &f);

} // namespace convbench::bench
