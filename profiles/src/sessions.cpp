#include "sessions.hpp"

namespace convbench::profiles::detail {

nlohmann::json unavailable_block(const std::string &profile, const std::string &call,
                                 const std::string &message) {
  // "reason" is results/README.md's generic field for an unavailable block; "call" and "message"
  // are the counters block's own.
  return {{"status", "unavailable"},
          {"profile", profile},
          {"call", call},
          {"message", message},
          {"reason", call + ": " + message}};
}

std::unique_ptr<CounterSession> not_collected_session(const Profile &p, const std::string &reason) {
  nlohmann::json block = {{"status", "not-collected"}, {"profile", p.name}, {"reason", reason}};
  return std::make_unique<FixedSession>(block, block);
}

std::unique_ptr<CounterSession> unavailable_session(const Profile &p, const std::string &call,
                                                    const std::string &message,
                                                    const std::string &rejected_metric) {
  nlohmann::json block = unavailable_block(p.name, call, message);
  if (!rejected_metric.empty())
    block["rejected_metric"] = rejected_metric;
  return std::make_unique<FixedSession>(block, block);
}

} // namespace convbench::profiles::detail
