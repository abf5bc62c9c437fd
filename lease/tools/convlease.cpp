// convlease: run a command under a lease, or show who holds what.
//   convlease run [--gpu N | --gpu-uuid U] [--ttl S] [--wait S] [--run-id R] -- CMD ARGS...
//   convlease status [--json]
//   convlease verify [--gpu-uuid U] [--json]
// `run` acquires through the site policy's backend, exports the lease to the command in
// CONVBENCH_LEASE (bench_conv adopts and verifies it), keeps it renewed, runs the command,
// verifies, releases, and exits with the command's status, or 3 when the lease was refused or lost.
// A signal to convlease is passed on to the command (one from the terminal reached it already);
// the command gets SIGTERM if convlease itself dies.
// `verify`, run by a command under `run` that is not bench_conv (a user's own script), adopts
// the inherited lease as bench_conv does, checks it with the authority once, and prints what a
// record's lease block needs; exit 0 verified, 3 refused.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "convbench/lease/keeper.hpp"
#include "convbench/lease/lease.hpp"
#include "convbench/lease/nvml_gpu.hpp"

using namespace convbench::lease;
using nlohmann::json;

namespace {

constexpr int kExitRefused = 3, kExitUsage = 2;

volatile sig_atomic_t g_child = 0;

// Passes a signal on to the command, except one the terminal sent (Ctrl-C, a hangup):
// the terminal signals the whole foreground process group, the command included, and a second
// copy from here would be a second Ctrl-C (which bench_conv takes as "stop now, no record").
void forward(int sig, siginfo_t *info, void *) {
  if (info && info->si_code == SI_KERNEL)
    return;
  if (g_child > 0)
    ::kill(g_child, sig);
}

constexpr const char *kUsage =
    "usage: convlease run [--gpu N | --gpu-uuid U] [--ttl S] [--wait S] [--run-id R] "
    "-- CMD ARGS...\n       convlease status [--json]\n       convlease verify [--gpu-uuid U] "
    "[--json]\n";

int usage(const std::string &msg) {
  if (!msg.empty())
    std::cerr << "convlease: " << msg << "\n";
  std::cerr << kUsage;
  return kExitUsage;
}

struct RunArgs {
  int gpu_index = -1;
  std::string gpu_uuid, run_id, ttl, wait;
  std::vector<std::string> cmd;
};

// The forked child: default signal handling, death with convlease, then the command.
[[noreturn]] void exec_child(pid_t parent, std::vector<char *> &argv) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    ::sigaction(s, &dfl, nullptr);
  // Without convlease nobody holds the lease: the command gets SIGTERM when convlease dies (a
  // SIGKILL, an OOM kill), so bench_conv writes its record (void: the holder is gone) and stops
  // instead of timing on while another run is granted the resource.
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent)
    ::_exit(kExitRefused);
  ::execvp(argv[0], argv.data());
  const char *msg = "convlease: cannot run the command: ";
  (void)!::write(2, msg, std::strlen(msg));
  (void)!::write(2, argv[0], std::strlen(argv[0]));
  (void)!::write(2, "\n", 1);
  ::_exit(127);
}

int cmd_run(RunArgs a) {
  double ttl = a.ttl.empty() ? 0 : parse_seconds(a.ttl, "--ttl");
  double wait = a.wait.empty() ? 0 : parse_seconds(a.wait, "--wait");
  std::string gpu_uuid = a.gpu_uuid, run_id = a.run_id;
  const int gpu_index = a.gpu_index;
  if (a.cmd.empty())
    throw std::invalid_argument("no command: put it after --");
  std::vector<std::string> cmd = a.cmd;
  if (gpu_index >= 0 && !gpu_uuid.empty())
    throw std::invalid_argument("give --gpu or --gpu-uuid, not both");
  if (gpu_index >= 0) {
    std::string why;
    gpu_uuid = resolve_gpu_uuid(gpu_index, &why);
    if (gpu_uuid.empty())
      throw LeaseRefused(why);
  }

  Policy policy = Policy::load();
  if (json w = lock_dir_warning(policy); !w.is_null())
    std::cerr << "convlease: lease warning [" << w.value("code", "")
              << "]: " << w.value("message", "") << "; " << w.value("remedy", "") << "\n";
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
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO;
  ::sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    ::sigaction(s, &sa, nullptr);

  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    std::cerr << "convlease: fork failed: " << std::strerror(errno) << "\n";
    return kExitRefused;
  }
  if (pid == 0)
    exec_child(parent, argv);
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

int cmd_status(bool as_json) {
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

// One check of the inherited lease, as bench_conv's start and end checks: adopt (the backend
// asks the authority about the token), then verify. With --json the answer is always one object
// on stdout: the lease's description, the policy and `check` {ok, at_utc, detail}.
int cmd_verify(const std::string &gpu_uuid, bool as_json) {
  json out;
  Check c;
  try {
    Policy policy = Policy::load();
    std::unique_ptr<Lease> lease = adopt_inherited(policy, Resource::this_host(gpu_uuid));
    if (!lease)
      throw LeaseRefused(std::string("no inherited lease: ") + kLeaseEnv +
                         " is not set (run this under convlease run)");
    c = lease->verify();
    out = lease->describe();
    out["policy"] = policy.to_json();
  } catch (const std::exception &e) { // refused, or the authority could not be asked
    c = Check{false, utc_now(), e.what()};
  }
  out["check"] = c.to_json();
  if (as_json)
    std::cout << out.dump(2) << "\n";
  if (!c.ok) {
    std::cerr << "convlease: refused: " << c.detail << "\n";
    return kExitRefused;
  }
  if (!as_json)
    std::cout << "verified " << out["resource"].value("name", "?") << " via "
              << out.value("backend", "?") << ", token " << out.value("token", "") << ": "
              << c.detail << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Runs a command under a lease, or shows who holds what.", "convlease"};
  app.set_help_flag("-h,--help", "this text");
  app.require_subcommand(1);
  RunArgs ra;
  CLI::App *run = app.add_subcommand(
      "run", "acquire through the site policy's backend, export the lease to the command "
             "(CONVBENCH_LEASE), keep it renewed, run it, verify, release; exit with the "
             "command's status, or 3 when the lease was refused or lost");
  run->add_option("--gpu", ra.gpu_index, "GPU index (its UUID from NVML)")
      ->check(CLI::Range(0, 1024));
  run->add_option("--gpu-uuid", ra.gpu_uuid, "GPU UUID (GPU-...)")->excludes("--gpu");
  run->add_option("--ttl", ra.ttl, "seconds the lease lives between renewals");
  run->add_option("--wait", ra.wait, "seconds to wait for a busy resource");
  run->add_option("--run-id", ra.run_id, "recorded in the holder");
  run->add_option("cmd", ra.cmd, "the command, after --");
  bool as_json = false;
  CLI::App *status = app.add_subcommand("status", "every lease this host's backend knows");
  status->add_flag("--json", as_json, "as JSON");
  std::string verify_gpu;
  CLI::App *verify = app.add_subcommand(
      "verify", "check the lease inherited from convlease run (CONVBENCH_LEASE) with its "
                "authority, as bench_conv does; exit 0 verified, 3 refused");
  verify->add_option("--gpu-uuid", verify_gpu,
                     "the GPU the caller times (GPU-...); without it, the host alone (cpu)");
  verify->add_flag("--json", as_json, "the lease and the check as JSON, also when refused");
  app.add_flag("--version")
      ->description("the build's version (git describe), the project version, CUDA on or off");
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::cout << "convlease " << CONVBENCH_PROJECT_VERSION << " (git " << CONVBENCH_GIT_DESCRIBE
              << "), CUDA " << (CONVBENCH_CUDA_ON ? "on" : "off") << "\n";
    return 0;
  }
  if (argc < 2)
    return usage("");
  if (const std::string sub = argv[1];
      sub != "run" && sub != "status" && sub != "verify" && sub[0] != '-')
    return usage("unknown command '" + sub + "'");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError &e) {
    std::string what = e.what();
    if (what.find("--gpu") != std::string::npos && what.find("exclude") != std::string::npos)
      what = "give --gpu or --gpu-uuid, not both";
    return usage(what);
  }
  try {
    if (*run)
      return cmd_run(ra);
    if (*verify)
      return cmd_verify(verify_gpu, as_json);
    return cmd_status(as_json);
  } catch (const std::invalid_argument &e) {
    return usage(e.what());
  } catch (const LeaseBusy &e) {
    std::cerr << "convlease: refused: " << e.what()
              << (*run && ra.wait.empty() ? "; wait for it with --wait S" : "") << "\n";
    return kExitRefused;
  } catch (const LeaseRefused &e) {
    std::cerr << "convlease: refused: " << e.what() << "\n";
    return kExitRefused;
  } catch (const std::exception &e) {
    std::cerr << "convlease: " << e.what() << "\n";
    return 1;
  }
}
