#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace convbench::bench {

Stats compute_stats(std::vector<double> x) {
  if (x.empty())
    throw std::logic_error("compute_stats: no samples");
  std::sort(x.begin(), x.end());
  Stats s;
  s.n = int(x.size());
  s.min = s.best = x.front();
  s.max = x.back();
  size_t m = x.size() / 2;
  s.median = x.size() % 2 ? x[m] : 0.5 * (x[m - 1] + x[m]);
  double sum = 0;
  for (double v : x)
    sum += v;
  s.mean = sum / s.n;
  double ss = 0;
  for (double v : x)
    ss += (v - s.mean) * (v - s.mean);
  s.stdev = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  s.cv = s.mean > 0 ? s.stdev / s.mean : 0.0;
  s.spread = s.min > 0 ? s.max / s.min : 1.0;
  return s;
}

double median(std::vector<double> x) { return compute_stats(std::move(x)).median; }

} // namespace convbench::bench
