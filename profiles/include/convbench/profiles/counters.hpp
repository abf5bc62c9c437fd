// What bench_conv needs of the counter instrument: load a named profile (before anything runs)
// and capture one (stage, frames, device arm) case in an untimed CUPTI range-profiler pass.
#pragma once

#include <functional>
#include <map>
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
  // Where the arithmetic ran: one entry per (pipe, precision) path, {name, pipe ("simt" or
  // "tensor"), precision, flop, peak_tflops[, util_pct]}, the last three naming derived figures.
  nlohmann::json paths = nlohmann::json::array();
  std::string path; // where it was loaded from
};

// The device's rates by their bench/data/devices.json key (FLOP/s, bytes/s): what a derived
// figure's {"device": key} term reads, e.g. the measured tensor-core peaks.
using DeviceRates = std::map<std::string, double>;

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
// returned object's "unavailable" map says why (results/README.md's convention). `rates`: the
// {"device": key} inputs; `rejected`: {metric: why} for metrics the profiler refused (their
// figures are null and say so).
nlohmann::json derive(const Profile &p, const nlohmann::json &metrics, double best_seconds,
                      double flops_hint, const DeviceRates &rates = {},
                      const nlohmann::json &rejected = nlohmann::json::object());
// The profile's paths evaluated over one capture's derived figures: [{name, pipe, precision,
// flop, tflops (flop over best_seconds), peak_tflops, pct_of_peak, util_pct, share_pct (of the
// FLOP all paths counted)}], a value null where its figure is, with "unavailable" saying why.
nlohmann::json evaluate_paths(const Profile &p, const nlohmann::json &derived, double best_seconds);
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
// A tensor-core kernel of `precision` (a tensor path's precision in p.paths: "fp64", "tf32",
// "bf16", ...): the FLOP its path counted equals 2 x expected_macs exactly (the multiply-adds the
// kernel's plan issues, tile padding included), and every other tensor path counted none.
// `derived`: derive()'s figures of one capture with p.
CountCheck check_tensor_work(const Profile &p, const nlohmann::json &derived,
                             const std::string &precision, double expected_macs);

class CounterSession {
public:
  virtual ~CounterSession() = default;
  // Never throws for CUPTI refusals: an unusable session answers every capture with an
  // {"status":"unavailable","call":...,"message":...} block.
  // A metric the profiler refuses is left out, not fatal: describe() and every capture name it
  // under "rejected_metrics" {metric: CUPTI's error} and its value is null; only a profile whose
  // every metric is refused (or whose accepted metrics are refused together) is unavailable.
  // `rates`: the device's devices.json rates, for derived figures that read them.
  static std::unique_ptr<CounterSession> open(const Profile &p, int device,
                                              const DeviceRates &rates = {});
  // Runs `work` (idempotent: it is replayed once per pass) inside one user range and returns the
  // counters block: status, profile, passes, metrics{name: value}, derived{name: value}.
  // `best_seconds` is the arm's event-timed best, the denominator of the derived rates.
  virtual nlohmann::json capture(const std::function<void()> &work, double best_seconds,
                                 double flops_hint) = 0;
  // What the session found when it opened, before any capture: {"status": "ready" |
  // "unavailable" | "not-collected", "profile", and when ready "chip", "passes" (planned per
  // capture), "rejected_metrics" when CUPTI refused some of the profile's metric names; when
  // unavailable "call", "message", "reason"}.
  virtual nlohmann::json describe() const = 0;
};

// The on-device layer of metric validation, for probing a chip: each of `metrics` offered to the
// profiler alone (accepted or CUPTI's error, and its pass count), then the accepted ones together.
// {"status": "probed" | "unavailable", "chip", "metrics": [{"name", "accepted", "passes",
// "message"}], "accepted_passes"}; "call" and "message" when unavailable. Runs nothing.
nlohmann::json probe_metrics(const std::vector<std::string> &metrics, int device);

} // namespace convbench::profiles
