// Sessions that collect nothing: the build has no CUDA, or CUPTI/the device refused when the
// session opened. Shared by both builds' CounterSession::open().
#pragma once

#include <string>

#include "convbench/profiles/counters.hpp"

namespace convbench::profiles::detail {

// The block every capture of a refused session returns: the call that refused and its message.
nlohmann::json unavailable_block(const std::string &profile, const std::string &call,
                                 const std::string &message);

// Every capture answers `block` and runs nothing: the timing pass already ran the work, and
// running it again here would only cost time.
class FixedSession final : public CounterSession {
public:
  FixedSession(nlohmann::json block, nlohmann::json description)
      : block_(std::move(block)), description_(std::move(description)) {}
  nlohmann::json capture(const std::function<void()> &, double, double) override { return block_; }
  nlohmann::json describe() const override { return description_; }

private:
  nlohmann::json block_;
  nlohmann::json description_;
};

std::unique_ptr<CounterSession> not_collected_session(const Profile &p, const std::string &reason);
std::unique_ptr<CounterSession> unavailable_session(const Profile &p, const std::string &call,
                                                    const std::string &message,
                                                    const std::string &rejected_metric = "");

} // namespace convbench::profiles::detail
