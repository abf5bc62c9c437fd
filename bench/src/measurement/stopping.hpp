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
