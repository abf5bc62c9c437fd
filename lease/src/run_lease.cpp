// RunLease: the lease of one bench_conv run. Adopts the lease inherited from `convlease run`
// (checked with the authority) or acquires one through the site policy's backend, keeps it
// renewed, records the start/end checks and the independent observation, and gives the verdict.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>

#include "convbench/lease/keeper.hpp"
#include "convbench/lease/lease.hpp"
#include "convbench/lease/nvml_gpu.hpp"
#include "convbench/lease/run_lease.hpp"

namespace convbench::lease {
namespace {

using nlohmann::json;

class OutsideLease final : public RunLease {
public:
  explicit OutsideLease(const RunLeaseOptions &o) : opt_(o) {}
  bool verify_start() override { return true; }
  void observe_sample(const std::string &case_id, int, int foreign_gpu, double cpu) override {
    foreign_gpu_max_ = std::max(foreign_gpu_max_, foreign_gpu);
    if (foreign_gpu > 0 && std::find(samples_.begin(), samples_.end(), case_id) == samples_.end())
      samples_.push_back(case_id);
    cpu_max_ = std::max(cpu_max_, cpu);
  }
  void verify_end() override {}
  void release() override {}
  std::string verdict() const override { return "outside-lease"; }
  json to_json() const override {
    return {{"status", "collected"},
            {"backend", nullptr},
            {"resource",
             {{"host", Resource::this_host(opt_.gpu_uuid).host},
              {"gpu_uuid", opt_.gpu_uuid.empty() ? json() : json(opt_.gpu_uuid)}}},
            {"holder", nullptr},
            {"token", nullptr},
            {"observation",
             {{"foreign_gpu_processes_max", foreign_gpu_max_},
              {"foreign_gpu_samples", samples_},
              {"foreign_cpu_share_max", cpu_max_}}},
            {"verdict", "outside-lease"},
            {"reasons", {"run with --no-lease: no lease was taken, nothing excluded others"}}};
  }

private:
  RunLeaseOptions opt_;
  int foreign_gpu_max_ = 0;
  double cpu_max_ = 0;
  std::vector<std::string> samples_;
};

class LeasedRun final : public RunLease {
public:
  LeasedRun(std::unique_ptr<Lease> lease, Policy policy, Holder adopter, json warnings)
      : lease_(std::move(lease)), policy_(std::move(policy)), adopter_(std::move(adopter)),
        warnings_(std::move(warnings)), keeper_(*lease_) {
    keeper_.start();
  }
  ~LeasedRun() override { release(); }

  bool verify_start() override { return check(start_, "start"); }
  void verify_end() override { check(end_, "end"); }

  void observe_sample(const std::string &case_id, int round, int foreign_gpu,
                      double foreign_cpu) override {
    std::lock_guard<std::mutex> g(mu_);
    cpu_max_ = std::max(cpu_max_, foreign_cpu);
    if (foreign_gpu < 0) {
      ++gpu_unknown_;
      return;
    }
    foreign_gpu_max_ = std::max(foreign_gpu_max_, foreign_gpu);
    if (foreign_gpu == 0)
      return;
    if (std::find(samples_.begin(), samples_.end(), case_id) != samples_.end())
      return;
    samples_.push_back(case_id);
    // The lease could not see this: someone on the GPU without taking the lease. Name them.
    std::string who = name_gpu_processes();
    reasons_.push_back("foreign GPU process during timed sample " + case_id + " round " +
                       std::to_string(round) + ": " + std::to_string(foreign_gpu) +
                       " other process(es) with a context on " + lease_->resource().name() +
                       (who.empty() ? "" : " [" + who + "]"));
  }

  void release() override {
    std::lock_guard<std::mutex> g(mu_);
    if (released_)
      return;
    released_ = true;
    keeper_.stop();
    released_utc_ = utc_now();
    lease_->release();
  }

  std::string verdict() const override { return all_reasons().empty() ? "valid" : "void"; }

  json to_json() const override {
    keeper_.poll();
    std::lock_guard<std::mutex> g(mu_);
    json d = lease_->describe();
    const Holder &h = lease_->holder();
    json j = {
        {"status", "collected"},
        {"backend", lease_->backend()},
        {"resource",
         {{"host", lease_->resource().host},
          {"machine_id", lease_->resource().machine_id},
          {"gpu_uuid",
           lease_->resource().gpu_uuid.empty() ? json() : json(lease_->resource().gpu_uuid)},
          {"name", lease_->resource().name()}}},
        {"holder", {{"user", h.user}, {"host", h.host}, {"pid", h.pid}, {"run_id", h.run_id}}},
        {"adopted", d.value("adopted", false)},
        {"token", lease_->token()},
        {"fencing", d.value("fencing", json())},
        {"ttl_s", lease_->ttl_s()},
        {"acquired_utc", h.acquired_utc.empty() ? json() : json(h.acquired_utc)},
        {"last_renew_utc",
         keeper_.last_renew_utc().empty() ? json() : json(keeper_.last_renew_utc())},
        {"renewals", keeper_.renewals()},
        {"verify_utc", verify_utc_},
        {"max_renew_gap_s", keeper_.max_gap_s()},
        {"start_check", start_.at_utc.empty() ? json() : start_.to_json()},
        {"end_check", end_.at_utc.empty() ? json() : end_.to_json()},
        {"observation",
         {{"foreign_gpu_processes_max", foreign_gpu_max_},
          {"foreign_gpu_samples", samples_},
          {"foreign_gpu_unknown_samples", gpu_unknown_},
          {"foreign_cpu_share_max", cpu_max_}}},
        {"released_utc", released_utc_.empty() ? json() : json(released_utc_)},
        {"policy", policy_.to_json()}};
    if (d.value("adopted", false))
      j["adopter"] = {{"pid", adopter_.pid}, {"run_id", adopter_.run_id}};
    for (const char *extra : {"slurm", "warnings"}) // backend facts the record keeps as given
      if (d.contains(extra))
        j[extra] = d[extra];
    for (const auto &w : warnings_)
      j["warnings"].push_back(w);
    auto reasons = all_reasons_locked();
    j["verdict"] = reasons.empty() ? "valid" : "void";
    j["reasons"] = reasons;
    return j;
  }

private:
  bool check(Check &slot, const char *which) {
    keeper_.poll();
    Check c = lease_->verify();
    std::lock_guard<std::mutex> g(mu_);
    slot = c;
    verify_utc_.push_back(c.at_utc);
    if (!c.ok)
      reasons_.push_back(std::string(which) + " check failed: " + c.detail);
    return c.ok;
  }

  std::string name_gpu_processes() const {
    if (lease_->resource().gpu_uuid.empty())
      return "";
    std::string why;
    auto procs = nvml_gpu_processes(lease_->resource().gpu_uuid, &why);
    if (procs.empty())
      return why.empty() ? "" : "cannot name them: " + why;
    std::string s;
    for (auto &p : procs) {
      if (!s.empty())
        s += ", ";
      s += "pid " + std::to_string(p.pid) + (p.name.empty() ? "" : " (" + p.name + ")") + " " +
           std::to_string(p.used_bytes >> 20) + " MiB";
      if (p.pid == static_cast<unsigned>(::getpid()))
        s += " [this run]";
    }
    return s;
  }

  std::vector<std::string> all_reasons() const {
    keeper_.poll();
    std::lock_guard<std::mutex> g(mu_);
    return all_reasons_locked();
  }
  std::vector<std::string> all_reasons_locked() const {
    std::vector<std::string> r = reasons_;
    for (auto &k : keeper_.reasons())
      r.push_back(k);
    if (start_.at_utc.empty())
      r.push_back("no start check: the lease was not verified before "
                  "the first timed sample");
    if (end_.at_utc.empty())
      r.push_back("no end check: the lease was not verified after the "
                  "last timed sample");
    return r;
  }

  std::unique_ptr<Lease> lease_;
  Policy policy_;
  Holder adopter_;
  json warnings_;         // the run's own (the lock directory), beside the backend's
  mutable Keeper keeper_; // poll() from const reporters
  mutable std::mutex mu_;
  Check start_, end_;
  std::vector<std::string> verify_utc_, reasons_, samples_;
  int foreign_gpu_max_ = 0, gpu_unknown_ = 0;
  double cpu_max_ = 0;
  bool released_ = false;
  std::string released_utc_;
};

} // namespace

std::unique_ptr<Lease> adopt_inherited(const Policy &policy, const Resource &used) {
  const char *env = std::getenv(kLeaseEnv);
  if (!env || !*env)
    return nullptr;
  json j;
  try {
    j = json::parse(env);
  } catch (...) {
    throw LeaseRefused(std::string(kLeaseEnv) + " is not a lease exported by convlease");
  }
  if (!j.is_object() || !j.contains("backend") || !j["backend"].is_string())
    throw LeaseRefused(std::string(kLeaseEnv) + " names no backend");
  std::string backend = j["backend"];
  if (backend != policy.backend)
    throw LeaseRefused("inherited lease is from the '" + backend +
                       "' backend but this site's "
                       "policy (" +
                       policy.source + ") names '" + policy.backend + "'");
  std::unique_ptr<Lease> lease = make_backend(backend, policy)->adopt(j);
  if (lease->resource().name() != used.name() || lease->resource().machine_id != used.machine_id)
    throw LeaseRefused("inherited lease covers " + lease->resource().name() + " on machine " +
                       lease->resource().machine_id + ", but this run uses " + used.name() +
                       " on machine " + used.machine_id);
  return lease;
}

std::unique_ptr<RunLease> RunLease::open(const RunLeaseOptions &opt) {
  if (opt.no_lease)
    return std::make_unique<OutsideLease>(opt);
  Policy policy = Policy::load();
  Resource resource = Resource::this_host(opt.gpu_uuid);
  Holder me = Holder::this_process(opt.run_id);
  std::unique_ptr<Lease> lease = adopt_inherited(policy, resource);
  if (!lease) {
    AcquireRequest req{resource, me, opt.ttl_s, opt.wait_s, opt.estimate_s};
    lease = make_backend(policy.backend, policy)->acquire(req);
  }
  json own = json::array();
  if (json w = lock_dir_warning(policy); !w.is_null())
    own.push_back(w);
  json all = lease->describe().value("warnings", json::array());
  for (const auto &w : own)
    all.push_back(w);
  for (auto &w : all)
    std::cerr << "lease warning [" << w.value("code", "") << "]: " << w.value("message", "") << "; "
              << w.value("remedy", "") << "\n";
  return std::make_unique<LeasedRun>(std::move(lease), std::move(policy), std::move(me),
                                     std::move(own));
}

} // namespace convbench::lease
