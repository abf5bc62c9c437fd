#include "driver/multi_gpu.hpp"

#include <fcntl.h>
#include <sys/wait.h>

#include <csignal>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convbench/lease/lease.hpp"
#include "convbench/lease/nvml_gpu.hpp"
#include "core/exit_codes.hpp"
#include "record/record.hpp"

extern char **environ;

namespace convbench::bench {

namespace {

using nlohmann::json;

// The children's pids, for the forwarding handler (a signal to the launcher alone, e.g. from a
// batch system, must still stop every run, which then writes its record as "interrupted").
constexpr int kMaxChildren = 1024;
volatile pid_t g_children[kMaxChildren];
volatile sig_atomic_t g_child_count = 0;

extern "C" void forward_signal(int sig) {
  for (sig_atomic_t i = 0; i < g_child_count; ++i)
    if (g_children[i] > 0)
      ::kill(g_children[i], sig);
}

// Forwards SIGINT/SIGTERM to the children while it lives; the old handlers come back after.
class ForwardSignals {
public:
  ForwardSignals() {
    struct sigaction sa = {};
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~ForwardSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    g_child_count = 0;
  }

private:
  struct sigaction old_int_ = {}, old_term_ = {};
};

constexpr const char *kBarrierEnv = "CONVBENCH_NODE_BARRIER"; // "<ready fd>,<go fd>"

std::optional<unsigned> gpu_count(std::string *why) {
  if (const char *n = std::getenv("CONVBENCH_TEST_NODE_GPUS"); n && *n)
    return unsigned(std::atoi(n));
  return lease::nvml_gpu_count(why);
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// The parent's argv without --gpus and --out (each child gets its own --out).
std::vector<std::string> child_args(int argc, const char *const *argv, const std::string &out) {
  std::vector<std::string> args{"bench_conv"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gpus" || a == "--out") {
      ++i;
      continue;
    }
    if (a.rfind("--gpus=", 0) == 0 || a.rfind("--out=", 0) == 0)
      continue;
    args.push_back(a);
  }
  args.push_back("--out");
  args.push_back(out);
  return args;
}

std::string cuda_device(int index) {
  if (std::getenv("CONVBENCH_TEST_NODE_GPUS"))
    return std::to_string(index);
  std::string why;
  const std::string uuid = lease::nvml_gpu_uuid(index, &why);
  return uuid.empty() ? std::to_string(index) : uuid;
}

// This process's environment with the node's variables set for child `index`.
std::vector<std::string> child_env(int index, const std::string &node_list, int ready_fd,
                                   int go_fd) {
  const std::map<std::string, std::string> set = {
      // NVML numbers GPUs in PCI order, CUDA fastest first unless told: name the GPU by its UUID
      // where NVML gives it, else by its index in PCI order.
      {"CUDA_VISIBLE_DEVICES", cuda_device(index)},
      {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
      {"CONVBENCH_NODE_GPUS", node_list},
      {"CONVBENCH_NODE_GPU", std::to_string(index)},
      {kBarrierEnv, std::to_string(ready_fd) + "," + std::to_string(go_fd)}};
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    const std::string kv = *e;
    if (!set.count(kv.substr(0, kv.find('='))))
      env.push_back(kv);
  }
  for (const auto &[k, v] : set)
    env.push_back(k + "=" + v);
  return env;
}

std::vector<char *> c_strings(std::vector<std::string> &v) {
  std::vector<char *> out;
  for (auto &s : v)
    out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

struct Child {
  int index = 0;
  pid_t pid = -1;
  std::string record, spawned_utc, ready_utc;
  int exit_status = -1, signal = 0;
  // A record left at the path by an earlier run is not this child's.
  std::optional<std::filesystem::file_time_type> earlier;
  bool wrote() const {
    std::error_code ec;
    const auto t = std::filesystem::last_write_time(record, ec);
    return !ec && (!earlier || t != *earlier);
  }
};

pid_t spawn(std::vector<std::string> args, std::vector<std::string> env, int ready_fd, int go_fd) {
  auto argv = c_strings(args);
  auto envp = c_strings(env);
  const pid_t pid = ::fork();
  if (pid == 0) {    // only async-signal-safe calls from here
    ::setpgid(0, 0); // Ctrl-C reaches the launcher only, which forwards it once (ForwardSignals)
    ::fcntl(ready_fd, F_SETFD, 0);
    ::fcntl(go_fd, F_SETFD, 0);
    ::execve("/proc/self/exe", argv.data(), envp.data());
    ::_exit(127);
  }
  return pid;
}

// Reads each child's index off the ready pipe until every write end is closed:
// every child has passed its lease and gate, or exited.
void wait_until_all_ready(int ready_r, std::vector<Child> &children) {
  int index = 0;
  for (;;) {
    const ssize_t n = ::read(ready_r, &index, sizeof index);
    if (n < 0 && errno == EINTR)
      continue;
    if (n != ssize_t(sizeof index))
      return;
    for (auto &c : children)
      if (c.index == index)
        c.ready_utc = lease::utc_now();
  }
}

json summary_json(const std::vector<Child> &children, const std::string &started,
                  const std::string &released, const std::vector<std::string> &command) {
  json gpus = json::array();
  for (const auto &c : children) {
    std::string why;
    const std::string uuid = std::getenv("CONVBENCH_TEST_NODE_GPUS")
                                 ? std::string()
                                 : lease::nvml_gpu_uuid(c.index, &why);
    if (uuid.empty() && why.empty())
      why = "a simulated node (CONVBENCH_TEST_NODE_GPUS): no GPU behind this index";
    json g = {{"index", c.index},
              {"uuid", uuid.empty() ? json(nullptr) : json(uuid)},
              {"record", c.record},
              {"record_written", c.wrote()},
              {"spawned_utc", c.spawned_utc},
              {"ready_utc", c.ready_utc.empty() ? json(nullptr) : json(c.ready_utc)},
              {"exit_status", c.exit_status},
              {"signal", c.signal ? json(c.signal) : json(nullptr)},
              {"unavailable", json::object()}};
    if (uuid.empty())
      g["unavailable"]["uuid"] = why;
    if (c.ready_utc.empty())
      g["unavailable"]["ready_utc"] = "the run ended before it held its lease and passed its gate";
    gpus.push_back(g);
  }
  int status = 0;
  for (const auto &c : children)
    if (!status && c.exit_status)
      status = c.exit_status;
  return {{"kind", "convbench-node"},
          {"version", 1},
          {"host", host_name()},
          {"command", command},
          {"started_utc", started},
          {"released_utc", released},
          {"finished_utc", lease::utc_now()},
          {"gpus", gpus},
          {"exit_status", status}};
}

} // namespace

std::vector<int> node_gpus(const std::string &spec) {
  std::string why;
  const auto count = gpu_count(&why);
  if (!count || *count == 0)
    throw UsageError("--gpus " + spec + ": no GPU is listed on this node (" +
                     (why.empty() ? std::string("NVML lists 0 GPUs") : why) + ")");
  std::vector<int> out;
  if (spec == "all") {
    for (unsigned i = 0; i < *count; ++i)
      out.push_back(int(i));
    return out;
  }
  if (spec.empty() || spec.back() == ',')
    throw UsageError("--gpus: expected all or GPU indices such as 0,1, got '" + spec + "'");
  std::set<int> seen;
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    char *end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end || v < 0)
      throw UsageError("--gpus: expected all or GPU indices such as 0,1, got '" + spec + "'");
    if (v >= long(*count))
      throw UsageError("--gpus: GPU " + item + " is not on this node (it lists " +
                       std::to_string(*count) + ")");
    if (!seen.insert(int(v)).second)
      throw UsageError("--gpus: GPU " + item + " named twice");
    out.push_back(int(v));
  }
  if (out.empty())
    throw UsageError("--gpus: expected all or GPU indices such as 0,1");
  return out;
}

std::string gpu_record_path(const std::string &out, int index) {
  std::string stem = out;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".json") == 0)
    stem.resize(stem.size() - 5);
  return stem + ".gpu" + std::to_string(index) + ".json";
}

int run_node(const Options &opt, int argc, const char *const *argv) {
  const std::vector<int> gpus = node_gpus(opt.gpus);
  const std::string started = lease::utc_now();
  std::string out = opt.out;
  if (out.empty()) {
    std::string stamp = started;
    for (char &ch : stamp)
      if (ch == ':')
        ch = '-';
    out = "results/" + stamp + "-" + host_name() + "-node.json";
  }
  if (auto dir = std::filesystem::path(out).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir);
  // Every GPU of the node is a neighbour, timed here or not: a job on GPU 1 is what a run on GPU 0
  // alone most needs to see.
  std::string node_list;
  for (unsigned i = 0; i < gpu_count(nullptr).value_or(0); ++i)
    node_list += (node_list.empty() ? "" : ",") + std::to_string(i);
  int ready[2], go[2];
  if (::pipe2(ready, O_CLOEXEC) || ::pipe2(go, O_CLOEXEC))
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (gpus.size() > size_t(kMaxChildren))
    throw UsageError("--gpus: more than " + std::to_string(kMaxChildren) + " GPUs");
  std::vector<Child> children;
  ForwardSignals forward;
  for (int i : gpus) {
    Child c;
    c.index = i;
    c.record = gpu_record_path(out, i);
    c.spawned_utc = lease::utc_now();
    std::error_code ec;
    if (auto t = std::filesystem::last_write_time(c.record, ec); !ec)
      c.earlier = t;
    c.pid = spawn(child_args(argc, argv, c.record), child_env(i, node_list, ready[1], go[0]),
                  ready[1], go[0]);
    if (c.pid < 0)
      std::cerr << "bench_conv: warning: cannot start the run on GPU " << i << ": "
                << std::strerror(errno) << "\n";
    children.push_back(c);
    g_children[g_child_count] = c.pid;
    g_child_count = g_child_count + 1;
  }
  ::close(ready[1]);
  ::close(go[0]);
  wait_until_all_ready(ready[0], children);
  ::close(ready[0]);
  const std::string released = lease::utc_now();
  ::close(go[1]); // every child waiting reads end-of-file: the rounds start
                  // together
  for (auto &c : children) {
    int st = 0;
    if (c.pid < 0) {
      c.exit_status = kExitError;
      continue;
    }
    while (::waitpid(c.pid, &st, 0) < 0 && errno == EINTR) {
    }
    c.exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    c.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  }
  const json summary =
      summary_json(children, started, released, std::vector<std::string>(argv, argv + argc));
  write_record(out, summary);
  std::cout << "node: " << out << " (" << gpus.size() << " GPU record(s) beside it)\n";
  return summary["exit_status"].get<int>();
}

void wait_at_node_barrier() {
  const char *spec = std::getenv(kBarrierEnv);
  if (!spec || !*spec)
    return;
  int ready_fd = -1, go_fd = -1;
  if (std::sscanf(spec, "%d,%d", &ready_fd, &go_fd) != 2)
    return;
  const char *self = std::getenv("CONVBENCH_NODE_GPU");
  const int index = self ? std::atoi(self) : -1;
  (void)!::write(ready_fd, &index, sizeof index);
  ::close(ready_fd);
  char byte;
  while (::read(go_fd, &byte, 1) < 0 && errno == EINTR) {
  }
  ::close(go_fd);
  ::unsetenv(kBarrierEnv);
}

} // namespace convbench::bench
