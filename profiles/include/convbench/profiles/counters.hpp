// What bench_conv needs of the counter instrument: load a named profile (before anything runs)
// and capture one (stage, frames, device arm) case in an untimed CUPTI range-profiler pass.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace convbench::profiles {

// A malformed profile or an unknown metric; what() names the profile, the field and the metric.
class ProfileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct Profile {
  std::string name;
  std::string description;
  std::vector<std::string> metrics; // CUPTI metric names
  nlohmann::json derived;           // the derived figures' definitions, as in the file
  std::string path;                 // where it was loaded from
};

// `name_or_path`: a profile name looked up in `dir` (profiles/*.json) or a path to a JSON file
// (it contains a '/' or ends in ".json"). Metric names are checked against `dir`/known_metrics.txt.
// An empty `dir` means default_profiles_dir().
Profile load_profile(const std::string &name_or_path, const std::string &dir);

// The source tree's profiles/ folder, where the shipped profiles and known_metrics.txt live.
std::string default_profiles_dir();

// The offline list of metric base names and their CUPTI type (counter, ratio, throughput).
class KnownMetrics {
public:
  static KnownMetrics load(const std::string &path); // throws ProfileError naming the path
  static KnownMetrics parse(const std::string &text, const std::string &source);
  // Empty when `metric` (base name + suffix) fits the list; otherwise why not, in one line.
  std::string problem(const std::string &metric) const;
  bool contains_base(const std::string &base) const;

private:
  std::vector<std::pair<std::string, std::string>> bases_; // (base name, type)
};

// Parses and validates one profile's JSON text; `path` is only used in messages and Profile::path.
// When `expected_name` is not empty the file's "name" must equal it (a profile found by name).
Profile parse_profile(const std::string &text, const std::string &path, const KnownMetrics &known,
                      const std::string &expected_name = "");

// The derived figures of `p` from one capture's raw values. Pure arithmetic, no CUPTI.
// `metrics`: {metric name: number}. Inputs named in the definitions: "best_seconds" (the arm's
// event-timed best, seconds per call) and "flops_hint" (the case's nominal FLOPs of one call).
// A figure whose inputs are missing, not numbers, or that divides by zero is null, and the
// returned object's "unavailable" map says why (results/README.md's convention).
nlohmann::json derive(const Profile &p, const nlohmann::json &metrics, double best_seconds,
                      double flops_hint);
// {derived name: unit} of `p`, for printers.
nlohmann::json derived_units(const Profile &p);

// The metric names the checks below read (all in the fp-throughput profile).
namespace metric {
inline constexpr const char *dadd = "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum";
inline constexpr const char *dmul = "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum";
inline constexpr const char *dfma = "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum";
inline constexpr const char *fadd = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr const char *fmul = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr const char *ffma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
} // namespace metric

// The outcome of an analytic count check: ok, or every way it failed, one line each.
struct CountCheck {
  bool ok = true;
  std::vector<std::string> failures;
  std::string summary() const; // "ok" or the failures joined with "; "
};

// An f64 kernel without FMA (cuda-f64: __dmul_rn + __dadd_rn): DFMA must be exactly 0, DMUL and
// DADD must equal the expectations within `tolerance_cells` instructions each (e.g. one per output
// cell when the bias add's count is uncertain). `metrics`: a counters block's "metrics" object.
CountCheck check_fp64_nofma(const nlohmann::json &metrics, double expected_dmul,
                            double expected_dadd, double tolerance_cells);
// An f32 arm (cuda-f32): no fp64 instruction at all, and some fp32 work.
CountCheck check_no_fp64(const nlohmann::json &metrics);
// An f32 FMA kernel: FFMA equals the expectation exactly, no fp64 work, no FADD/FMUL.
CountCheck check_f32_fma_only(const nlohmann::json &metrics, double expected_ffma);

class CounterSession {
public:
  virtual ~CounterSession() = default;
  // Never throws for CUPTI refusals: an unusable session answers every capture with an
  // {"status":"unavailable","call":...,"message":...} block.
  static std::unique_ptr<CounterSession> open(const Profile &p, int device);
  // Runs `work` (idempotent: it is replayed once per pass) inside one user range and returns the
  // counters block: status, profile, passes, metrics{name: value}, derived{name: value}.
  // `best_seconds` is the arm's event-timed best, the denominator of the derived rates.
  virtual nlohmann::json capture(const std::function<void()> &work, double best_seconds,
                                 double flops_hint) = 0;
  // What the session found when it opened, before any capture: {"status": "ready" |
  // "unavailable" | "not-collected", "profile", and when ready "chip", "passes" (planned per
  // capture); when unavailable "call", "message", "reason", and "rejected_metric" when CUPTI
  // refused one of the profile's metric names (a profile error the offline list did not catch;
  // a caller may treat it like a ProfileError and exit 2 before timing anything)}.
  virtual nlohmann::json describe() const = 0;
};

} // namespace convbench::profiles
