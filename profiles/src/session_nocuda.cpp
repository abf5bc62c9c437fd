// CounterSession::open() in a build without CUDA: nothing can be collected, and the block says so.
#include "sessions.hpp"

namespace convbench::profiles {

std::unique_ptr<CounterSession> CounterSession::open(const Profile &p, int, const DeviceRates &) {
  return detail::not_collected_session(p, "built without CUDA");
}

nlohmann::json probe_metrics(const std::vector<std::string> &, int) {
  return {{"status", "unavailable"}, {"call", "build"}, {"message", "built without CUDA"}};
}

} // namespace convbench::profiles
