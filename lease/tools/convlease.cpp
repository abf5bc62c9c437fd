// convlease: run a command under a lease, or show who holds what.
//   convlease run [--gpu N | --gpu-uuid U] [--ttl S] [--wait S] [--run-id R] -- CMD ARGS...
//   convlease status [--json]
// `run` acquires through the site policy's backend, exports the lease to the command in
// CONVBENCH_LEASE (bench_conv adopts and verifies it), keeps it renewed, runs the command,
// verifies, releases, and exits with the command's status, or 3 when the lease was refused or lost.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "convbench/lease/keeper.hpp"
#include "convbench/lease/lease.hpp"
#include "convbench/lease/nvml_gpu.hpp"

using namespace convbench::lease;
using nlohmann::json;

namespace {

constexpr int kExitRefused = 3, kExitUsage = 2;

volatile sig_atomic_t g_child = 0;

void forward(int sig) {
  if (g_child > 0)
    ::kill(g_child, sig);
}

int usage(const std::string &msg) {
  if (!msg.empty())
    std::cerr << "convlease: " << msg << "\n";
  std::cerr << "usage: convlease run [--gpu N | --gpu-uuid U] [--ttl S] [--wait S] [--run-id R] "
               "-- CMD ARGS...\n       convlease status [--json]\n";
  return kExitUsage;
}

int cmd_run(std::vector<std::string> args) {
  std::string gpu_uuid, run_id;
  int gpu_index = -1;
  double ttl = 0, wait = 0;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string &a = args[i];
    auto value = [&](const char *what) -> std::string {
      if (i + 1 >= args.size())
        throw std::invalid_argument(std::string(what) + " needs a value");
      return args[++i];
    };
    if (a == "--gpu") {
      std::string v = value("--gpu");
      char *end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 0 || n > 1024)
        throw std::invalid_argument("--gpu needs a GPU index, got '" + v + "'");
      gpu_index = static_cast<int>(n);
    } else if (a == "--gpu-uuid") {
      gpu_uuid = value("--gpu-uuid");
    } else if (a == "--ttl") {
      ttl = parse_seconds(value("--ttl"), "--ttl");
    } else if (a == "--wait") {
      wait = parse_seconds(value("--wait"), "--wait");
    } else if (a == "--run-id") {
      run_id = value("--run-id");
    } else {
      throw std::invalid_argument("unknown option '" + a + "'");
    }
  }
  if (i >= args.size() || i + 1 >= args.size())
    throw std::invalid_argument("no command: put it after --");
  std::vector<std::string> cmd(args.begin() + static_cast<long>(i) + 1, args.end());
  if (gpu_index >= 0 && !gpu_uuid.empty())
    throw std::invalid_argument("give --gpu or --gpu-uuid, not both");
  if (gpu_index >= 0) {
    std::string why;
    gpu_uuid = resolve_gpu_uuid(gpu_index, &why);
    if (gpu_uuid.empty())
      throw LeaseRefused(why);
  }

  Policy policy = Policy::load();
  AcquireRequest req{Resource::this_host(gpu_uuid), Holder::this_process(run_id), ttl, wait};
  std::unique_ptr<Lease> lease = make_backend(policy.backend, policy)->acquire(req);
  std::cerr << "convlease: holding " << lease->resource().name() << " on " << lease->resource().host
            << " via " << lease->backend() << ", token " << lease->token() << "\n";
  Keeper keeper(*lease);
  keeper.start();

  std::string env = lease->export_env();
  ::setenv(kLeaseEnv, env.c_str(), 1);
  std::vector<char *> argv;
  for (auto &s : cmd)
    argv.push_back(s.data());
  argv.push_back(nullptr);

  struct sigaction sa {};
  sa.sa_handler = forward;
  ::sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    ::sigaction(s, &sa, nullptr);

  pid_t pid = ::fork();
  if (pid < 0) {
    std::cerr << "convlease: fork failed: " << std::strerror(errno) << "\n";
    return kExitRefused;
  }
  if (pid == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      ::sigaction(s, &dfl, nullptr);
    ::execvp(argv[0], argv.data());
    const char *msg = "convlease: cannot run the command: ";
    (void)!::write(2, msg, std::strlen(msg));
    (void)!::write(2, argv[0], std::strlen(argv[0]));
    (void)!::write(2, "\n", 1);
    ::_exit(127);
  }
  g_child = pid;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;

  keeper.stop();
  Check end = lease->verify();
  bool lost = keeper.lost() || !end.ok;
  for (auto &r : keeper.reasons())
    std::cerr << "convlease: lease lost: " << r << "\n";
  if (!end.ok)
    std::cerr << "convlease: final verify failed: " << end.detail << "\n";
  lease->release();
  if (lost)
    return kExitRefused;
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 1;
}

int cmd_status(const std::vector<std::string> &args) {
  bool as_json = false;
  for (auto &a : args) {
    if (a == "--json")
      as_json = true;
    else
      throw std::invalid_argument("unknown option '" + a + "'");
  }
  Policy policy = Policy::load();
  json st = make_backend(policy.backend, policy)->status();
  if (as_json) {
    std::cout << json{{"policy", policy.to_json()}, {"leases", st}}.dump(2) << "\n";
    return 0;
  }
  std::cout << "backend " << policy.backend << " (" << policy.source << ")\n";
  if (st.empty())
    std::cout << "no leases\n";
  for (auto &e : st) {
    std::string where = e.value("lock_path", e.value("key", ""));
    std::string res = e.contains("resource") && e["resource"].is_object()
                          ? e["resource"].value("name", "?")
                          : std::string("?");
    if (e.value("held", false))
      std::cout << res << "  HELD by " << Holder::from_json(e["holder"]).describe() << "  token "
                << e.value("token", "") << "  " << where << "\n";
    else
      std::cout << res << "  free (token " << e.value("token", "") << ")  " << where << "\n";
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    return usage("");
  std::string sub = args[0];
  args.erase(args.begin());
  try {
    if (sub == "run")
      return cmd_run(args);
    if (sub == "status")
      return cmd_status(args);
    if (sub == "-h" || sub == "--help") {
      usage("");
      return 0;
    }
    return usage("unknown command '" + sub + "'");
  } catch (const std::invalid_argument &e) {
    return usage(e.what());
  } catch (const LeaseRefused &e) {
    std::cerr << "convlease: refused: " << e.what() << "\n";
    return kExitRefused;
  } catch (const std::exception &e) {
    std::cerr << "convlease: " << e.what() << "\n";
    return 1;
  }
}
