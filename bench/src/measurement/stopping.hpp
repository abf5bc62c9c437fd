// When a case has enough rounds. The estimator is the median of the case's samples: robust to the
// occasional preempted sample, and it has a distribution-free 95% interval at small n (the
// record's "best", the minimum, has none). The interval is the order-statistic one: with the
// samples sorted, [x_(k), x_(n+1-k)] covers the true median with probability
// 1 - 2 P(Binomial(n, 1/2) <= k - 1), exactly for any continuous distribution; k is the largest
// that keeps that >= 95%. It exists from n = 6 on ([x_1, x_6], 96.9%); below that no interval
// reaches 95%, so a target cannot be met before 6 rounds.
#pragma once

#include "core/types.hpp"

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convbench::bench {

MedianInterval median_interval(std::vector<double> samples, double confidence = 0.95);

// Whether a case with these samples (seconds, one per round) should stop, given the run's elapsed
// time. In order: fewer than min_rounds: keep going; target 0: fixed-count; interval within the
// target: target-met; max_rounds reached: max-rounds; budget spent: time-budget.
StopDecision decide_stop(const std::vector<double> &samples, const StoppingRule &rule,
                         double elapsed_s);

} // namespace convbench::bench

namespace convbench::bench {

// How many more rounds the rule will give a case that has n samples and the interval half-width
// `half_width` now, read from the rule itself: a fixed count's remainder; with a target, the rounds
// until the interval should be within it (an order-statistic interval narrows as 1/sqrt(n), so
// n (half_width / target)^2 in all), capped by max_rounds. Unset when the rule cannot tell yet
// (no interval before 6 rounds): then only the time budget bounds it.
std::optional<int> rounds_left(int n, const std::optional<double> &half_width,
                               const StoppingRule &rule);

// One case still being scheduled, for the run's ETA: its rounds left and the wall time one of its
// samples takes (probes included).
struct RunningCase {
  std::optional<int> rounds_left;
  double sample_wall_s = 0;
};

// Seconds until the rounds end: the running cases' rounds left times their sample time, bounded
// with a target by what is left of the budget plus the round under way (it finishes). Unset when
// nothing bounds it (a fixed count before any sample took time).
std::optional<double> eta_seconds(const std::vector<RunningCase> &running, const StoppingRule &rule,
                                  double elapsed_s);

} // namespace convbench::bench
