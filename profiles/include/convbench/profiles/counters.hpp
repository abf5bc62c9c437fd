// What bench_conv needs of the counter instrument: load a named profile (before anything runs)
// and capture one (stage, frames, device arm) case in an untimed CUPTI range-profiler pass.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
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
  std::vector<std::string> metrics;  // CUPTI metric names
  nlohmann::json derived;            // the derived figures' definitions, as in the file
  std::string path;                  // where it was loaded from
};

// `name_or_path`: a profile name looked up in `dir` (profiles/*.json) or a path to a JSON file.
Profile load_profile(const std::string& name_or_path, const std::string& dir);

class CounterSession {
 public:
  virtual ~CounterSession() = default;
  // Never throws for CUPTI refusals: an unusable session answers every capture with an
  // {"status":"unavailable","call":...,"message":...} block.
  static std::unique_ptr<CounterSession> open(const Profile& p, int device);
  // Runs `work` (idempotent: it is replayed once per pass) inside one user range and returns the
  // counters block: status, profile, passes, metrics{name: value}, derived{name: value}.
  // `best_seconds` is the arm's event-timed best, the denominator of the derived rates.
  virtual nlohmann::json capture(const std::function<void()>& work, double best_seconds,
                                 double flops_hint) = 0;
};

}  // namespace convbench::profiles
