#include "measurement/stopping.hpp"

#include <algorithm>
#include <cmath>

namespace convbench::bench {

namespace {
// P(Binomial(n, 1/2) <= k), summed in log space so that large n does not underflow.
double binomial_half_cdf(int n, int k) {
  double sum = 0;
  for (int i = 0; i <= k; ++i)
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                    n * std::log(2.0));
  return sum;
}
} // namespace

MedianInterval median_interval(std::vector<double> x, double confidence) {
  MedianInterval m;
  m.n = int(x.size());
  if (x.empty())
    return m;
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  m.median = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
  // The largest k (1-based) with coverage 1 - 2 P(B <= k - 1) >= confidence.
  int best_k = 0;
  double best_cov = 0;
  for (int k = 1; 2 * k <= int(n); ++k) {
    const double cov = 1 - 2 * binomial_half_cdf(int(n), k - 1);
    if (cov < confidence)
      break;
    best_k = k;
    best_cov = cov;
  }
  if (best_k > 0) {
    m.lo = x[size_t(best_k - 1)];
    m.hi = x[n - size_t(best_k)];
    m.coverage = best_cov;
  }
  return m;
}

const char *to_string(StopReason r) {
  switch (r) {
  case StopReason::keep_going:
    return "keep-going";
  case StopReason::target_met:
    return "target-met";
  case StopReason::time_budget:
    return "time-budget";
  case StopReason::max_rounds:
    return "max-rounds";
  case StopReason::fixed_count:
    return "fixed-count";
  }
  return "keep-going";
}

nlohmann::json StopDecision::to_json() const {
  using nlohmann::json;
  auto opt = [](const std::optional<double> &v) { return v ? json(*v) : json(nullptr); };
  return {{"reason", to_string(reason)},
          {"n", interval.n},
          {"median", interval.n ? json(interval.median) : json(nullptr)},
          {"lo", opt(interval.lo)},
          {"hi", opt(interval.hi)},
          {"coverage", interval.lo ? json(interval.coverage) : json(nullptr)},
          {"half_width", opt(half_width)},
          {"target", target}};
}

StopDecision decide_stop(const std::vector<double> &samples, const StoppingRule &rule,
                         double elapsed_s) {
  StopDecision d;
  d.target = rule.target;
  d.interval = median_interval(samples);
  if (d.interval.lo && d.interval.median > 0)
    d.half_width =
        std::max(d.interval.median - *d.interval.lo, *d.interval.hi - d.interval.median) /
        d.interval.median;
  const int n = int(samples.size());
  if (n < rule.min_rounds)
    d.reason = StopReason::keep_going;
  else if (rule.target <= 0)
    d.reason = StopReason::fixed_count;
  else if (d.half_width && *d.half_width <= rule.target)
    d.reason = StopReason::target_met;
  else if (n >= rule.max_rounds)
    d.reason = StopReason::max_rounds;
  else if (elapsed_s >= rule.time_budget_s)
    d.reason = StopReason::time_budget;
  return d;
}

} // namespace convbench::bench

namespace convbench::bench {

std::optional<int> rounds_left(int n, const std::optional<double> &half_width,
                               const StoppingRule &rule) {
  const int to_min = std::max(0, rule.min_rounds - n);
  if (rule.target <= 0)
    return to_min;
  const int to_max = std::max(0, rule.max_rounds - n);
  if (!half_width) // an interval needs 6 rounds; beyond them the rule cannot tell yet
    return n + to_min >= rule.max_rounds ? std::optional<int>(to_max) : std::nullopt;
  int more = 0;
  if (*half_width > rule.target)
    more = std::max(
        1, int(std::ceil(n * (*half_width / rule.target) * (*half_width / rule.target)) - n));
  return std::min(to_max, std::max(to_min, more));
}

std::optional<double> eta_seconds(const std::vector<RunningCase> &running, const StoppingRule &rule,
                                  double elapsed_s) {
  double sum = 0, one_round = 0;
  bool bounded = true;
  for (const auto &c : running) {
    one_round += c.sample_wall_s;
    if (c.rounds_left)
      sum += *c.rounds_left * c.sample_wall_s;
    else
      bounded = false;
  }
  if (rule.target <= 0)
    return bounded && one_round > 0 ? std::optional<double>(sum) : std::nullopt;
  const double budget = std::max(0.0, rule.time_budget_s - elapsed_s) + one_round;
  return std::isfinite(budget) ? std::min(bounded ? sum : budget, budget)
                               : (bounded ? std::optional<double>(sum) : std::nullopt);
}

} // namespace convbench::bench
