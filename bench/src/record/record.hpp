// The result record: the ONE place that turns the run's typed facts into record JSON (the spec is
// results/README.md, the schema results/result.schema.json). The console table reads the same
// typed facts (report.hpp), never this JSON.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stats.hpp"
#include "core/types.hpp"
#include "plan/case.hpp"
#include "probes/gpu_probe.hpp"

namespace convbench::bench {

struct Plan;

// What the run adds to its plan by the time the record is written.
struct RunOutcome {
  std::string run_id;
  int exit_status = 0;
  std::string status = "complete"; // complete | interrupted (recovered: recover_record)
  int signal = 0;                  // the signal that interrupted it
  std::vector<RoundOrder> order;
  GpuNvmlFacts gpu_nvml;            // empty in a run without a GPU
  nlohmann::json speed_calibration; // SpeedProbe's best rates, what delivered speed is relative to
  nlohmann::json lease;             // the lease module's own block
};

nlohmann::json build_record(const Plan &plan, const RunOutcome &out);
// The one writer of result files: a record, atomically (a reader never sees half of one).
void write_record(const std::string &path, const nlohmann::json &record);
std::string signal_name(int sig); // "SIGINT", "SIGTERM", "SIGHUP", ...; "signal N" otherwise

// The journal: line 1 holds the record as it stands before the first timed sample; each round's
// line holds its order, its samples, the stopping decision of each case in it and the lease block
// as it stands after the round (its start check, renewals and observation so far).
nlohmann::json journal_header_json(const Plan &plan, const RunOutcome &out);
nlohmann::json journal_round_json(const RoundOrder &order,
                                  const std::vector<std::pair<const Case *, const Sample *>> &taken,
                                  const nlohmann::json &lease);
// The record of a run that was killed, from its journal: status "recovered", every journaled
// round, and for each case its stopping decision or "interrupted". Throws JournalError.
nlohmann::json recover_record(const std::string &journal_path, int exit_status);

// The blocks, also used by --dump's problem.json and the tests.
nlohmann::json gate_json(const GateResult &g);
nlohmann::json stats_json(const Stats &s);
nlohmann::json host_snapshot_json(const HostSnapshot &h);
nlohmann::json gpu_snapshot_json(const GpuSnapshot &g);
nlohmann::json sample_json(const Sample &s);
// Google Benchmark's JSON view: per case and round an "iteration" entry, then the _mean,
// _median, _stddev and _cv aggregates; "repetitions" is the case's sample count.
struct BenchmarkRun { // one case's samples as the view needs them
  std::string id;
  std::vector<int> rounds;
  std::vector<int64_t> iterations;
  std::vector<double> seconds;
};
nlohmann::json benchmarks_view(const std::vector<BenchmarkRun> &runs);

} // namespace convbench::bench
