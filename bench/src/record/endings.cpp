#include "record/endings.hpp"

#include "convbench/lease/lease.hpp"
#include "core/interrupt.hpp"
#include "plan/plan.hpp"

namespace convbench::bench {

namespace {

// What the record says of the fault that ended a run: the arm, its words, whether the CUDA
// context was lost (a device fault), and where the run was.
nlohmann::json fault_json(const plugin::PluginFault &f, const char *during,
                          const nlohmann::json &at_utc) {
  return {{"arm", f.arm},
          {"message", f.what()},
          {"context_lost", f.context_lost},
          {"during", during},
          {"at_utc", at_utc}};
}

} // namespace

PreRoundsRecord::PreRoundsRecord(const Plan &plan, const RunOutcome &out)
    : base_(build_record(plan, out)) {
  for (const auto &c : plan.cases) {
    const bool tol = c.arm->gate() == GateKind::tolerance || c.arm->gate() == GateKind::gemm;
    not_gated_[c.id] = {
        {"kind", to_string(c.arm->gate())},
        {"result", "not-run"},
        {"mismatches", nullptr},
        {"max_abs_err", nullptr},
        {"rel_l2_err", nullptr},
        {"tolerance", tol ? nlohmann::json(c.arm->tolerance()) : nlohmann::json(nullptr)},
        {"unavailable", {{"result", "the run was interrupted before this case's gate"}}}};
  }
}

void PreRoundsRecord::gated(const Case &c) { gated_[c.id] = {gate_json(c.gate), c.chosen}; }

nlohmann::json PreRoundsRecord::interrupted_record(const nlohmann::json &lease_block,
                                                   int exit_status) const {
  nlohmann::json r =
      as_far_as_gated(lease_block, exit_status, "the run was interrupted before its counter pass");
  r["status"] = "interrupted";
  r["interrupted"] = {{"signal", signal_name(interrupt_signal())},
                      {"rounds_started", 0},
                      {"at_utc", r["ended_utc"]}};
  return r;
}

nlohmann::json PreRoundsRecord::faulted_record(const nlohmann::json &lease_block, int exit_status,
                                               const plugin::PluginFault &f) const {
  nlohmann::json r = as_far_as_gated(lease_block, exit_status,
                                     "the run ended at a plugin arm's fault before its counter "
                                     "pass");
  for (auto &c : r["cases"])
    if (c["gate"]["result"] == "not-run")
      c["gate"]["unavailable"]["result"] =
          "the run ended at a fault of arm " + f.arm + " before this case's gate";
  r["status"] = "faulted";
  r["fault"] = fault_json(f, "gate", r["ended_utc"]);
  return r;
}

nlohmann::json PreRoundsRecord::as_far_as_gated(const nlohmann::json &lease_block, int exit_status,
                                                const std::string &no_counters) const {
  nlohmann::json r = base_;
  for (auto &c : r["cases"]) {
    const std::string id = c["id"];
    c["counters"] = {{"status", "not-collected"}, {"reason", no_counters}};
    auto it = gated_.find(id);
    if (it == gated_.end()) {
      c["gate"] = not_gated_.at(id);
      c["stop_reason"] = nullptr;
      c["interval"] = nullptr;
      continue;
    }
    c["gate"] = it->second.first;
    if (it->second.second.is_object())
      for (const auto &[k, v] : it->second.second.items())
        c["kernel"][k] = v;
    const bool pass = c["gate"]["result"] == "pass";
    c["stop_reason"] = pass ? nlohmann::json("interrupted") : nlohmann::json(nullptr);
    if (!pass)
      c["interval"] = nullptr;
  }
  r["exit_status"] = exit_status;
  r["ended_utc"] = lease::utc_now();
  r["lease"] = lease_block;
  return r;
}

nlohmann::json faulted_rounds_record(const std::string &journal_path,
                                     const nlohmann::json &lease_block, int exit_status,
                                     const plugin::PluginFault &f) {
  nlohmann::json r = recover_record(journal_path, exit_status);
  r.erase("recovered");
  r["status"] = "faulted";
  r["lease"] = lease_block;
  r["fault"] = fault_json(f, "rounds", r["ended_utc"]);
  for (auto &c : r["cases"])
    c["counters"] = {{"status", "not-collected"},
                     {"reason", "the run ended at a plugin arm's fault before its counter pass"}};
  return r;
}

} // namespace convbench::bench
