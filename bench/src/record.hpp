// The result record: the ONE place that turns the run's typed facts into record JSON (the spec is
// results/README.md, the schema results/result.schema.json). The console table reads the same
// typed facts (report.hpp), never this JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case.hpp"
#include "gpu_probe.hpp"
#include "rounds.hpp"
#include "stats.hpp"

namespace convbench::bench {

struct Plan;

// What the run adds to its plan by the time the record is written.
struct RunOutcome {
  std::string run_id;
  int exit_status = 0;
  std::vector<RoundOrder> order;
  GpuNvmlFacts gpu_nvml;       // empty in a run without a GPU
  nlohmann::json lease;        // the lease module's own block
};

nlohmann::json build_record(const Plan &plan, const RunOutcome &out);

// The blocks, also used by --dump's problem.json and the tests.
nlohmann::json problem_shape_json(const Problem &p);
nlohmann::json gate_json(const GateResult &g);
nlohmann::json stats_json(const Stats &s);
nlohmann::json host_snapshot_json(const HostSnapshot &h);
nlohmann::json gpu_snapshot_json(const GpuSnapshot &g);
nlohmann::json sample_json(const Sample &s);
// Google Benchmark's JSON view: per case and round an "iteration" entry, then the _mean,
// _median, _stddev and _cv aggregates.
nlohmann::json benchmarks_view(const std::vector<Case> &cases, int reps);

} // namespace convbench::bench
