#include "convbench/lease/keeper.hpp"

#include <algorithm>
#include <cstdio>

namespace convbench::lease {

using clk = std::chrono::steady_clock;

Keeper::Keeper(Lease &lease, double interval_s)
    : lease_(lease),
      interval_(interval_s > 0 ? interval_s : std::max(0.05, lease.renew_interval_s())),
      last_ok_(clk::now()) {}

void Keeper::start() {
  std::lock_guard<std::mutex> g(mu_);
  last_ok_ = clk::now();
  thread_ = std::thread([this] { loop(); });
}

void Keeper::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stopping_ || !thread_.joinable())
      return;
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> g(mu_);
  note_gap(clk::now());
}

// Called with mu_ held.
void Keeper::note_gap(clk::time_point now) {
  double gap = std::chrono::duration<double>(now - last_ok_).count();
  max_gap_s_ = std::max(max_gap_s_, gap);
  if (lease_.expires() && gap > lease_.ttl_s() && !lost_) {
    lost_ = true;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "renewal gap %.2f s exceeded the TTL %.1f s: the lease may "
                  "have lapsed (process stopped or starved)",
                  gap, lease_.ttl_s());
    reasons_.push_back(buf);
  }
}

void Keeper::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stopping_) {
    cv_.wait_for(lk, interval_, [this] { return stopping_; });
    if (stopping_)
      break;
    if (lost_)
      continue; // nothing to keep; the verdict is already void
    lk.unlock();
    Check c = lease_.renew();
    auto now = clk::now();
    lk.lock();
    note_gap(now);
    if (!c.ok) {
      if (!lost_)
        reasons_.push_back("renewal failed at " + c.at_utc + ": " + c.detail);
      lost_ = true;
      continue;
    }
    last_ok_ = now;
    ++renewals_;
    last_renew_utc_ = c.at_utc;
  }
}

void Keeper::poll() {
  std::lock_guard<std::mutex> g(mu_);
  if (!stopping_)
    note_gap(clk::now());
}

bool Keeper::lost() const {
  std::lock_guard<std::mutex> g(mu_);
  return lost_;
}
std::vector<std::string> Keeper::reasons() const {
  std::lock_guard<std::mutex> g(mu_);
  return reasons_;
}
double Keeper::max_gap_s() const {
  std::lock_guard<std::mutex> g(mu_);
  return max_gap_s_;
}
std::string Keeper::last_renew_utc() const {
  std::lock_guard<std::mutex> g(mu_);
  return last_renew_utc_;
}
int Keeper::renewals() const {
  std::lock_guard<std::mutex> g(mu_);
  return renewals_;
}

} // namespace convbench::lease
