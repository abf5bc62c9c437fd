// What a person sees while the rounds run. On a terminal: one updating line (round, cases
// converging and done, elapsed, ETA). In a log (stderr not a terminal): a line when a case reaches
// its target or stops, a heartbeat at most every 5 s, one line when the rounds end. --verbose:
// every sample's and every round's line; --quiet: nothing. The ETA comes from the stopping rule
// (rounds_left, eta_seconds), never from a fixed count of rounds it does not have.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace convbench::bench {

struct Case;
struct Options;

class RoundsProgress {
public:
  RoundsProgress(const Options &opt, size_t cases, double heartbeat_s = 5);
  ~RoundsProgress(); // the status line is cleared whichever way the rounds end
  RoundsProgress(const RoundsProgress &) = delete;
  RoundsProgress &operator=(const RoundsProgress &) = delete;

  void before_sample(int round, size_t pos, size_t in_round, const Case &c, size_t converging,
                     double elapsed);
  void after_sample(const Case &c, double wall_s);
  // After round `round`'s decisions: the cases that stopped in it, those still running.
  void after_round(int round, const std::vector<Case *> &stopped, const std::vector<Case *> &still,
                   double elapsed);
  void finish(int rounds, double elapsed);

  // "ETA ~23s", "ETA ?" when the rule cannot tell yet.
  std::string eta_text(double elapsed) const;

private:
  const Options &opt_;
  size_t cases_, done_ = 0, converging_;
  int round_ = 0;
  double heartbeat_s_, last_heartbeat_ = 0;
  std::optional<double> eta_at_ = {}; // the ETA at eta_when_ (seconds into the rounds)
  double eta_when_ = 0;
  std::map<const Case *, std::pair<double, int>> wall_; // summed wall time and samples per case
  StoppingRule rule_;

  void estimate(const std::vector<Case *> &still, double elapsed);
};

} // namespace convbench::bench
