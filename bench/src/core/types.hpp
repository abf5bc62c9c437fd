// The run's data types, lowest in bench/src: what a sample measured, when a case stops, the
// correctness gate's verdict, a round's order. Plain structs, no behaviour beyond their names;
// the steps that fill them (measurement/, gate/) and the views that read them (record/) include
// this and nothing above it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convbench::bench {

// One timed sample (measurement/runner.hpp).
struct SampleTiming {
  double seconds = 0;       // per call
  int64_t iterations = 0;   // of the reported run (Google Benchmark's final calibration step)
  double total_seconds = 0; // seconds x iterations
};

// The median's interval and the stopping rule (measurement/stopping.hpp).
struct MedianInterval {
  double median = 0;
  std::optional<double> lo, hi; // null when n is too small for the confidence asked
  double coverage = 0;          // exact coverage of [lo, hi] (>= the confidence asked)
  int n = 0;
};

enum class StopReason { keep_going, target_met, time_budget, max_rounds, fixed_count };
const char *to_string(StopReason r); // "keep-going", "target-met", "time-budget", ...

struct StoppingRule {
  double target = 0.01; // relative half-width asked of the median's 95% interval; 0: fixed count
  int min_rounds = 3;   // always taken, whatever the budget (--reps)
  int max_rounds = 1000;
  double time_budget_s = std::numeric_limits<double>::infinity(); // for the whole run
};

struct StopDecision {
  StopReason reason = StopReason::keep_going;
  MedianInterval interval;
  std::optional<double> half_width; // max(median - lo, hi - median) / median; null: no interval
  bool stop() const { return reason != StopReason::keep_going; }
  nlohmann::json to_json() const; // {reason, n, median, lo, hi, coverage, half_width, target}
  double target = 0;
};

// The order of one round and how the rounds ended (measurement/rounds.hpp).
struct RoundOrder {
  int round = 0;
  uint64_t seed = 0;
  std::vector<std::string> cases; // ids, in the order they were sampled
};

struct RoundsOutcome {
  std::vector<RoundOrder> order;
  bool interrupted = false; // a signal ended the rounds early
};

// How a case is checked against the reference before it may be timed.
// gemm: a ceiling arm (cuBLAS) computes its case's GEMM, not the convolution; its product is
// checked at sampled cells against the host's f64 product instead of the reference.
// self: a ceiling that computes nothing (cuda-copy, cuda-launch) checks its own product: a
// poisoned destination it must overwrite exactly (the copy's bytes, the launch's word).
enum class GateKind { reference, bitwise, tolerance, gemm, self };
std::string to_string(GateKind g);
// The kinds whose arm checks itself (PreparedArm::own_check) instead of being compared with the
// reference: it writes no convolution output.
inline bool checks_itself(GateKind g) { return g == GateKind::gemm || g == GateKind::self; }

// The absolute floors A at which the gate records the least allclose rel R (every cell
// |y - ref| <= A + R |ref|): 0, then 1e-9 to 1e-3 by half-decades (1, 3 per decade).
inline constexpr double kAllcloseFloors[] = {0,    1e-9, 3e-9, 1e-8, 3e-8, 1e-7, 3e-7,
                                             1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3};

// The gate's verdict on one case (gate/gate.hpp).
struct GateResult {
  GateKind kind = GateKind::reference;
  bool pass = true;
  int64_t mismatches = 0;    // cells whose bytes differ from the reference
  double max_abs_err = 0;    // NaN/inf outputs make these non-finite and the gate fail
  double rel_l2_err = 0;     // ||y - ref|| / ||ref||
  double tolerance = 0;      // rel L2 bound (tolerance and gemm gates)
  int64_t cells = 0;         // checked: a gemm gate's product cells, a self gate's bytes
  uint32_t output_crc32 = 0; // zlib CRC-32 of the output's bytes: ties a --dump file to the run
  // The worst cell's |y - ref| / |ref| (inf when a cell whose reference is 0 differs).
  double max_rel_err = 0;
  // Per kAllcloseFloors[k]: the least R with every |y - ref| <= floor + R |ref|, i.e. the max over
  // cells of max(0, |y - ref| - floor) / |ref| (inf when a cell whose reference is 0 differs by
  // more than the floor). Empty when not computed (a non-finite output, a gemm or self gate).
  std::vector<double> allclose_rel_needed;
  // The bitwise comparison with the arm's sibling (Arm::bitwise_sibling), when it ran too.
  std::string sibling;            // "<arm>/<staging>" compared with; "" when none was
  int64_t sibling_mismatches = 0; // cells whose bytes differ from the sibling's
};

} // namespace convbench::bench
