// The slurm authority: the job allocation is the lease. Nothing is locked here; the backend asks
// Slurm, at grant, on every check and on renewal, whether this process belongs to the job its
// token names (`scontrol pidinfo`), whether that job is RUNNING on this node and holds the
// resource alone (`scontrol show job -o --details`, `squeue -w`): the node exclusively for host
// arms, the GPU by its GRES binding (or an exclusive node) for device arms. Token = job id + step.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>

#include "convbench/lease/lease.hpp"
#include "convbench/lease/slurm_job.hpp"

extern char **environ;

namespace convbench::lease {
namespace {

using nlohmann::json;
namespace sl = slurm;

constexpr double kCommandTimeoutS = 15;
// A renewal runs Slurm commands: rarely (not per sample), and at least three times within the
// time the job has left, as for every backend's TTL.
constexpr double kRenewIntervalS = 60;

struct Output {
  int status = -1;
  std::string out, err;
};

// Runs a Slurm command (no shell) and collects its output; a hung controller costs at most the
// timeout, then the command is killed.
Output run_command(const std::vector<std::string> &argv, double timeout_s = kCommandTimeoutS) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    throw LeaseRefused(std::string("slurm: pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw LeaseRefused(std::string("slurm: pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char *> args;
  for (auto &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  Output o;
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    o.err = argv[0] + ": " + std::strerror(rc);
    return o;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string *sinks[2] = {&o.out, &o.err};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (::poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buf[4096];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto &f : fds)
    if (f.fd >= 0)
      ::close(f.fd);
  if (timed_out)
    ::kill(pid, SIGKILL);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  o.status = timed_out ? -1 : (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  if (timed_out)
    o.err = argv[0] + " gave no answer within " + std::to_string(int(timeout_s)) + " s";
  return o;
}

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string first_line(const std::string &s) { return s.substr(0, s.find('\n')); }

// "Slurm JobId=7 ends at ..." -> "7"; "" when Slurm does not know the pid.
std::string job_of_pid(long pid) {
  Output o = run_command({"scontrol", "pidinfo", std::to_string(pid)});
  if (o.status != 0)
    return "";
  std::string id = sl::parse_key_values(first_line(o.out)).get("JobId");
  return id.substr(0, id.find(' '));
}

// The job's name as its owner gave it (it may hold spaces, "Key=" words and newlines): squeue
// prints it alone, and parse_job matches it verbatim instead of reading it as fields.
std::string job_name(const std::string &id) {
  // Unit and record separators: neither can be typed into a name on a command line by accident,
  // and a record is found by its job id (an array's id lists every task).
  Output o = run_command({"squeue", "-h", "-t", "all", "-j", id, "-o", "%A\x1f%j\x1e"});
  if (o.status != 0)
    throw LeaseRefused("slurm: squeue -j " + id +
                       " failed: " + first_line(o.err.empty() ? o.out : o.err));
  const std::string want = id + "\x1f";
  for (size_t at = 0; at < o.out.size();) {
    size_t end = o.out.find("\x1e\n", at);
    if (end == std::string::npos)
      end = o.out.size();
    if (o.out.compare(at, want.size(), want) == 0)
      return o.out.substr(at + want.size(), end - at - want.size());
    at = end + 2;
  }
  throw LeaseRefused("slurm: squeue -j " + id + " does not list the job: '" + first_line(o.out) +
                     "'");
}

sl::Job show_job(const std::string &id) {
  Output o = run_command({"scontrol", "show", "job", "-o", "--details", id});
  if (o.status != 0)
    throw LeaseRefused("slurm: scontrol show job " + id +
                       " failed: " + first_line(o.err.empty() ? o.out : o.err));
  std::string text = o.out;
  if (!text.empty() && text.back() == '\n')
    text.pop_back();
  try {
    return sl::parse_job(text, job_name(id));
  } catch (const std::invalid_argument &e) {
    throw LeaseRefused(std::string("slurm: cannot read scontrol's answer: ") + e.what());
  }
}

// The other jobs squeue lists RUNNING on this node (array tasks by their own job id).
std::vector<sl::Job> others_on(const std::string &host, const std::string &mine) {
  Output o = run_command({"squeue", "-h", "-w", host, "-t", "RUNNING", "-o", "%A"});
  if (o.status != 0)
    throw LeaseRefused("slurm: squeue -w " + host + " failed: " + first_line(o.err));
  std::vector<sl::Job> out;
  std::istringstream in(o.out);
  for (std::string id; in >> id;)
    if (id != mine) {
      sl::Job j = show_job(id);
      if (j.state == "RUNNING") // it may have ended between the two calls
        out.push_back(std::move(j));
    }
  return out;
}

std::string node_name() {
  std::string n = env("SLURMD_NODENAME"); // Slurm's name for this node, which NodeList uses
  if (!n.empty())
    return n;
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  n = buf;
  return n.substr(0, n.find('.'));
}

// This process's GPU, as a global index: CUDA device 0 is the first GPU of its step (or job).
std::optional<int> gpu_index() {
  for (const char *name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    std::string v = env(name);
    if (v.empty())
      continue;
    try {
      auto idx = sl::expand_ranges(v);
      if (!idx.empty())
        return idx.front();
    } catch (const std::invalid_argument &) {
      throw LeaseRefused(std::string("slurm: ") + name + "='" + v +
                         "' is not a list of GPU indices");
    }
  }
  return std::nullopt;
}

// The job and step this process says it runs in: "JOB.STEP" ("batch" in a batch script).
std::string own_token() {
  std::string job = env("SLURM_JOB_ID");
  if (job.empty())
    return "";
  std::string step = env("SLURM_STEP_ID");
  return job + "." + (step.empty() ? "batch" : step);
}

double now_epoch() { return static_cast<double>(std::time(nullptr)); }

struct Grant {
  std::string token, job_id, step, host;
  bool gpu_wanted = false;
  std::optional<int> gpu;
  int restarts = 0;
};

sl::Evidence gather(const Grant &g, bool ending_ok) {
  sl::Evidence e;
  e.ending_ok = ending_ok;
  e.host = g.host;
  e.token_job = g.job_id;
  e.gpu = g.gpu;
  e.gpu_wanted = g.gpu_wanted;
  e.restarts_at_grant = g.restarts;
  e.pid_job = job_of_pid(::getpid());
  e.job = show_job(g.job_id);
  if (e.job.state == "RUNNING" || sl::ending_state(e.job.state))
    e.others = others_on(g.host, e.job.id);
  return e;
}

class SlurmLease final : public Lease {
public:
  SlurmLease(Grant g, sl::Job job, Resource r, Holder h, double ttl, json warnings, bool adopted)
      : g_(std::move(g)), job_(std::move(job)), res_(std::move(r)), holder_(std::move(h)),
        ttl_(ttl), warnings_(std::move(warnings)), adopted_(adopted) {}

  std::string backend() const override { return "slurm"; }
  const Resource &resource() const override { return res_; }
  const Holder &holder() const override { return holder_; }
  std::string token() const override { return g_.token; }
  double ttl_s() const override { return ttl_; }
  // Slurm ends the hold (SIGTERM at the time limit, on preemption or scancel); nothing lapses
  // for want of a renewal.
  bool expires() const override { return false; }
  double renew_interval_s() const override {
    return std::isfinite(ttl_) ? std::clamp(ttl_ / 3, 1.0, kRenewIntervalS) : kRenewIntervalS;
  }

  Check verify() override {
    Check c;
    c.at_utc = utc_now();
    try {
      sl::Evidence e = gather(g_, true);
      c.detail = sl::judge(e);
      c.ok = c.detail.empty();
      if (c.ok)
        c.detail = "job " + g_.token + " " + e.job.state + " on " + g_.host + ", " +
                   what_it_holds(e.job) +
                   (e.job.state == "RUNNING" ? ""
                                             : " (being ended: the allocation holds until "
                                               "this process exits)");
    } catch (const std::exception &ex) {
      c.detail = ex.what();
    }
    return c;
  }
  Check renew() override { return verify(); }
  void release() override {} // the job ends the allocation, not us

  json describe() const override {
    json s = job_.to_json();
    s["step"] = g_.step;
    s["gpu_index"] = g_.gpu ? json(*g_.gpu) : json();
    s["time_left_s"] = std::isfinite(ttl_) ? json(ttl_) : json();
    // The job as the controller sees it when the record is written: an interrupted run's
    // record says why (CANCELLED, TIMEOUT, PREEMPTED, requeued).
    try {
      sl::Job now = show_job(g_.job_id);
      s["state_at_record"] = now.state;
      s["reason_at_record"] = now.reason;
      s["restarts_at_record"] = now.restarts;
    } catch (const std::exception &e) {
      s["state_at_record"] = nullptr;
      s["reason_at_record"] = e.what();
    }
    return {{"backend", "slurm"},
            {"resource", res_.to_json()},
            {"holder", holder_.to_json()},
            {"token", token()},
            {"ttl_s", std::isfinite(ttl_) ? json(ttl_) : json()},
            {"adopted", adopted_},
            {"fencing",
             {{"kind", "slurm-job"},
              {"job_id", g_.job_id},
              {"step", g_.step},
              {"restarts", g_.restarts}}},
            {"slurm", s},
            {"warnings", warnings_}};
  }

  std::string export_env() const override {
    return json{{"backend", "slurm"},
                {"resource", res_.to_json()},
                {"token", token()},
                {"holder", holder_.to_json()},
                {"restarts", g_.restarts}}
        .dump();
  }

private:
  std::string what_it_holds(const sl::Job &j) const {
    auto n = j.nodes.find(g_.host);
    std::string cpus, gpus;
    if (n != j.nodes.end()) {
      for (int c : n->second.cpu_ids) {
        if (!cpus.empty())
          cpus += ',';
        cpus += std::to_string(c);
      }
      gpus = n->second.gres;
    }
    std::string s = j.exclusive() ? "node exclusive" : "node shared";
    if (g_.gpu)
      s += ", GPU " + std::to_string(*g_.gpu) + (gpus.empty() ? "" : " (GRES " + gpus + ")");
    return s + (cpus.empty() ? "" : ", CPUs " + cpus) + ", restarts " + std::to_string(j.restarts);
  }

  Grant g_;
  sl::Job job_;
  Resource res_;
  Holder holder_;
  double ttl_;
  json warnings_;
  bool adopted_;
};

class SlurmBackend final : public Backend {
public:
  explicit SlurmBackend(const Policy &p) : policy_(p) {}
  std::string name() const override { return "slurm"; }

  std::unique_ptr<Lease> acquire(const AcquireRequest &req) override {
    return grant(req.resource, req.holder, own_token(), req.estimate_s, false);
  }

  // A child of `convlease run` inside the same job: the inherited token must be this process's
  // own job and step, and Slurm must count this process in that job.
  std::unique_ptr<Lease> adopt(const json &j) override {
    std::string token = j.value("token", "");
    std::string mine = own_token();
    if (token.empty() || token != mine)
      throw LeaseRefused("inherited slurm lease names job " + (token.empty() ? "?" : token) +
                         ", but this process runs in " +
                         (mine.empty() ? "no Slurm job" : "job " + mine));
    Resource r = Resource::from_json(j.value("resource", json::object()));
    Holder h = Holder::from_json(j.value("holder", json::object()));
    return grant(r, h, token, 0, true);
  }

  json status() override {
    std::string host = node_name();
    Output o = run_command({"squeue", "-h", "-w", host, "-t", "RUNNING", "-o", "%A|%u|%P|%l|%e"});
    if (o.status != 0)
      throw LeaseRefused("slurm: squeue failed: " + first_line(o.err));
    json out = json::array();
    std::istringstream in(o.out);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> f;
      std::istringstream fs(line);
      for (std::string x; std::getline(fs, x, '|');)
        f.push_back(x);
      if (f.size() < 5)
        continue;
      out.push_back({{"key", host + "/job/" + f[0]},
                     {"held", true},
                     {"resource", {{"host", host}}},
                     {"token", f[0]},
                     {"holder", {{"user", f[1]}, {"host", host}}},
                     {"partition", f[2]},
                     {"time_limit", f[3]},
                     {"end_time", f[4]}});
    }
    return out;
  }

private:
  std::unique_ptr<Lease> grant(const Resource &r, Holder h, const std::string &token,
                               double estimate_s, bool adopted) {
    if (token.empty())
      throw LeaseRefused(
          "the lease policy (" + policy_.source +
          ") names the slurm authority, but this process "
          "runs outside any Slurm job (no SLURM_JOB_ID): run it inside a job, e.g. srun "
          "--exclusive bench_conv ..., or submit it with convbench-fleet submit");
    Grant g;
    g.token = token;
    g.job_id = token.substr(0, token.find('.'));
    g.step = token.substr(token.find('.') + 1);
    g.host = node_name();
    g.gpu_wanted = !r.gpu_uuid.empty();
    g.gpu = g.gpu_wanted ? gpu_index() : std::nullopt;
    sl::Evidence e = gather(g, false);
    // The restart count is part of the grant: a requeued job is a new allocation.
    g.restarts = e.job.restarts;
    e.restarts_at_grant = e.job.restarts;
    if (std::string why = sl::judge(e); !why.empty())
      throw LeaseRefused("slurm: " + why);
    double ttl = INFINITY;
    if (auto left = sl::seconds_until(e.job.end_time, now_epoch()))
      ttl = std::max(0.0, *left);
    json warnings = json::array();
    if (estimate_s > 0 && ttl < estimate_s) {
      char msg[256];
      std::snprintf(msg, sizeof msg,
                    "job %s has %.0f s left (time limit %s) but the plan needs about %.0f s",
                    g.job_id.c_str(), ttl, e.job.time_limit.c_str(), estimate_s);
      warnings.push_back({{"code", "slurm-time-left"},
                          {"message", msg},
                          {"remedy", "submit with a longer --time, or a smaller plan (fewer "
                                     "--reps or stages); a requeued job resumes with --resume"}});
    }
    if (h.acquired_utc.empty())
      h.acquired_utc = utc_now();
    return std::make_unique<SlurmLease>(g, e.job, r, h, ttl, warnings, adopted);
  }

  Policy policy_;
};

} // namespace
} // namespace convbench::lease

CONVBENCH_LEASE_BACKEND(slurm, true, [](const convbench::lease::Policy &p) {
  return std::unique_ptr<convbench::lease::Backend>(new convbench::lease::SlurmBackend(p));
})
