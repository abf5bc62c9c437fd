// The lease interface under RunLease and convlease: one authority (a backend) grants an
// exclusive, expiring hold on one resource (host + GPU, or host "cpu") with a fencing token that
// changes on every grant. Backends register by name (see registry below): one file each under
// src/backends/ (file, etcd, slurm).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convbench/lease/run_lease.hpp" // LeaseRefused

namespace convbench::lease {

// Environment variable through which `convlease run` hands its lease to the command it runs.
inline constexpr const char *kLeaseEnv = "CONVBENCH_LEASE";

// What is being leased: one GPU of one machine, or the host alone ("cpu").
struct Resource {
  std::string host;       // hostname
  std::string machine_id; // /etc/machine-id
  std::string gpu_uuid;   // empty: host-only
  std::string name() const { return gpu_uuid.empty() ? "cpu" : gpu_uuid; }
  nlohmann::json to_json() const;
  static Resource from_json(const nlohmann::json &j);
  static Resource this_host(const std::string &gpu_uuid);
  // The machine's identity for the lock path: the first non-empty of /etc/machine-id and
  // /var/lib/dbus/machine-id, else "host-<host name>" (spelled so it never looks like a hex id);
  // empty when all three are empty.
  static std::string machine_identity(const std::string &etc_machine_id,
                                      const std::string &dbus_machine_id, const std::string &host);
};

// Who holds a lease; written into the authority so that a refusal can name the holder.
struct Holder {
  std::string user, host;
  long pid = 0;
  std::string run_id;
  std::string acquired_utc;
  nlohmann::json to_json() const;
  static Holder from_json(const nlohmann::json &j);
  static Holder this_process(const std::string &run_id);
  std::string describe() const; // "user@host pid N run R since T"
};

struct Check {
  bool ok = false;
  std::string at_utc;
  std::string detail;
  nlohmann::json to_json() const { return {{"ok", ok}, {"at_utc", at_utc}, {"detail", detail}}; }
};

// Site policy: which authority this site uses. Read from /etc/convbench/lease.json (or the file
// named by CONVBENCH_LEASE_POLICY; "none" = no file) and the CONVBENCH_LEASE_* variables.
struct Policy {
  std::string backend = "file"; // effective backend (inside a Slurm job, no policy: slurm)
  std::string site_backend;     // what the policy FILE names ("" = no file or no backend key)
  std::string endpoint;         // etcd: http://host:port; file: the lock directory (optional)
  std::string site_endpoint;    // what the policy FILE names ("" = no file or no endpoint key)
  std::string prefix = "/convbench/leases";
  double ttl_s = 15;
  std::string source;   // where it came from, for messages
  static Policy load(); // throws LeaseRefused on an unreadable or malformed policy
  nlohmann::json to_json() const;
};

// The file backend's lock directory when nothing names one.
inline constexpr const char *kDefaultLockDir = "/var/lock/convbench";

// Where the file backend locks: CONVBENCH_LEASE_DIR, else the policy's endpoint, else
// kDefaultLockDir. `site_dir` is what the site policy alone gives (its endpoint, else the
// default); a `dir` that differs is a second mutex beside the site's.
struct LockDir {
  std::string dir, site_dir;
  bool from_env = false; // the environment chose `dir` (CONVBENCH_LEASE_DIR or _ENDPOINT)
  bool differs() const;  // dir and site_dir are not one directory (symlinks resolved)
};
LockDir file_lock_dir(const Policy &policy);
// For the file backend locking outside the site's directory: a warning {code "lock-dir-not-site",
// message, remedy} to say at run time and keep in the record; null otherwise.
nlohmann::json lock_dir_warning(const Policy &policy);

// One held (or adopted) lease.
class Lease {
public:
  virtual ~Lease() = default;
  virtual std::string backend() const = 0;
  virtual const Resource &resource() const = 0;
  virtual const Holder &holder() const = 0;
  virtual std::string token() const = 0;
  virtual double ttl_s() const = 0;
  // True when the hold lapses unless renewed (etcd); false when it lasts as long as the holder
  // process (file: the kernel drops the flock when the holder dies).
  virtual bool expires() const = 0;
  // How often the keeper renews (or, for a non-expiring hold, re-verifies) it.
  virtual double renew_interval_s() const { return ttl_s() / 3; }
  // Asks the authority whether this hold is still ours with the same token.
  virtual Check verify() = 0;
  // Extends the hold (etcd keepalive); an adopted lease or a non-expiring one re-verifies instead.
  virtual Check renew() = 0;
  virtual void release() = 0; // idempotent; an adopted lease is released by its owner, not here
  // backend, resource, holder, token, ttl_s, fencing (backend-specific), adopted
  virtual nlohmann::json describe() const = 0;
  // The CONVBENCH_LEASE value a child adopts (enough to check the token with the authority).
  virtual std::string export_env() const = 0;
};

struct AcquireRequest {
  Resource resource;
  Holder holder;
  double ttl_s = 0;      // 0: the policy's
  double wait_s = 0;     // poll a busy resource for up to this long; 0: refuse at once
  double estimate_s = 0; // how long the plan expects to hold it (0: unknown); a backend whose
                         // hold ends at a fixed time (slurm) warns when less time is left
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Throws LeaseRefused naming the holder when the resource stays busy past wait_s.
  virtual std::unique_ptr<Lease> acquire(const AcquireRequest &req) = 0;
  // Adopts the lease a parent exported (export_env) after checking it with the authority;
  // a forged or stale token throws LeaseRefused.
  virtual std::unique_ptr<Lease> adopt(const nlohmann::json &inherited) = 0;
  // Who holds what: [{resource, holder, token, ...}]
  virtual nlohmann::json status() = 0;
};

// Registry: name -> factory. `fleet` backends are site authorities; when the policy names one,
// the embedded file backend refuses to act (a second, local mutex excludes nothing).
using BackendFactory = std::function<std::unique_ptr<Backend>(const Policy &)>;
void register_backend(const std::string &name, bool fleet, BackendFactory factory);
std::unique_ptr<Backend> make_backend(const std::string &name, const Policy &policy);
bool is_fleet_backend(const std::string &name);
std::vector<std::string> backend_names();

// The lease inherited from `convlease run` (kLeaseEnv), adopted through the policy's backend
// (which checks the token with the authority) and checked to cover `used`, the resource the
// caller times; nullptr when nothing is inherited. Throws LeaseRefused.
std::unique_ptr<Lease> adopt_inherited(const Policy &policy, const Resource &used);

// Utilities shared by backends, RunLease and convlease.
std::string utc_now();         // ISO-8601 with milliseconds, ending in Z
std::string random_hex(int n); // n hex digits from /dev/urandom
bool pid_alive(long pid);
bool is_ancestor(long pid); // pid is this process or one of its ancestors
double parse_seconds(const std::string &s, const char *what); // throws std::invalid_argument

} // namespace convbench::lease

// Backend files register themselves with this; CMake collects src/backends/*.cpp and calls each
// registration, so no static-initialiser is dropped by the linker.
#define CONVBENCH_LEASE_BACKEND(NAME, FLEET, FACTORY)                                              \
  namespace convbench::lease::detail {                                                             \
  void register_backend_##NAME() { ::convbench::lease::register_backend(#NAME, FLEET, FACTORY); }  \
  }
