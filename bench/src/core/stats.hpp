// Statistics over a case's per-round samples (seconds per call).
#pragma once

#include <vector>

namespace convbench::bench {

struct Stats {
  double best = 0, median = 0, min = 0, max = 0, mean = 0;
  double stdev = 0;  // sample standard deviation (n - 1); 0 when n == 1
  double cv = 0;     // stdev / mean
  double spread = 1; // max / min
  int n = 0;
};

// The one median (and mean, stdev, ...) of the C++ code. `x` non-empty.
Stats compute_stats(std::vector<double> x);
double median(std::vector<double> x);

} // namespace convbench::bench
