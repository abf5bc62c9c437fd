// Keeps a lease renewed from a background thread every ttl/3 and records each renewal on the
// monotonic clock. A failed renewal, or a gap between renewals longer than the TTL of an expiring
// lease (the process was stopped, or starved), marks the hold lost: from then on no exclusion can
// be claimed, whatever the authority says later.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "convbench/lease/lease.hpp"

namespace convbench::lease {

class Keeper {
public:
  explicit Keeper(Lease &lease, double interval_s = 0);
  ~Keeper() { stop(); }
  Keeper(const Keeper &) = delete;
  Keeper &operator=(const Keeper &) = delete;

  void start();
  void stop(); // joins; runs one last renewal-gap check so a stop after a long pause still counts

  // Counts the time since the last renewal as a gap now (at a check, or before reporting), so a
  // process stopped past the TTL is caught even if the renewal thread has not run since.
  void poll();

  bool lost() const;
  std::vector<std::string> reasons() const;
  double max_gap_s() const;
  std::string last_renew_utc() const;
  int renewals() const;

private:
  void loop();
  void note_gap(std::chrono::steady_clock::time_point now);
  Lease &lease_;
  std::chrono::duration<double> interval_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false, lost_ = false;
  std::chrono::steady_clock::time_point last_ok_;
  double max_gap_s_ = 0;
  int renewals_ = 0;
  std::string last_renew_utc_;
  std::vector<std::string> reasons_;
};

} // namespace convbench::lease
