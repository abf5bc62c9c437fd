#include "host_trial.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/crash_notice.hpp"
#include "core/interrupt.hpp"

namespace convbench::bench::plugin {

namespace {
constexpr int kFailed = 3; // the body reported a failure (its reason is on the pipe)

void write_all(int fd, const std::string &s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n <= 0 && errno != EINTR)
      return;
    if (n > 0)
      done += size_t(n);
  }
}

// The child and whatever it started: its own process group, killed as one.
void kill_trial(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}
// The forked child: runs the body, writes its failure (empty: none) to write_fd and exits.
[[noreturn]] void trial_child(const std::function<std::string()> &body, int read_fd, int write_fd,
                              pid_t parent) {
  close(read_fd);
  // A process group of its own (killed whole on a timeout or an interrupt), and death with
  // bench_conv whichever way it ends: a trial never outlives the run that started it.
  setpgid(0, 0);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
    _exit(127);
  // Default dispositions: the child dies by the plugin's signal, which the parent reports.
  // SIGINT from the terminal reaches only the foreground group, not this one: the parent acts.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGINT, SIGTERM, SIGHUP})
    std::signal(sig, SIG_DFL);
  mark_trial_child();
  std::string why;
  try {
    why = body();
  } catch (const std::exception &e) {
    why = e.what();
  } catch (...) {
    why = "an exception of unknown type";
  }
  write_all(write_fd, why);
  close(write_fd);
  std::fflush(nullptr);
  _exit(why.empty() ? 0 : kFailed); // no atexit handlers or destructors of the parent's state
}
} // namespace

std::string run_trial(const std::function<std::string()> &body) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return std::string("trial run: pipe: ") + std::strerror(errno);
  // Flushed first, so the child's buffered copies of bench_conv's output are empty.
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::string("trial run: fork: ") + std::strerror(errno);
  }
  if (pid == 0)
    trial_child(body, fds[0], fds[1], parent);
  setpgid(pid, pid); // also here: no window in which a kill of the group misses it
  close(fds[1]);
  const double limit = plugin_timeout();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(limit));
  std::string why, stopped;
  char buf[512];
  for (;;) {
    if (interrupted()) {
      stopped = std::string("its trial run was stopped by ") + interrupt_signal_name();
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      stopped = "its trial run did not finish within " + std::to_string(int(limit)) +
                " s (--plugin-timeout): killed";
      break;
    }
    struct pollfd p {
      fds[0], POLLIN, 0
    };
    const int r = poll(&p, 1, 50);
    if (r < 0 && errno != EINTR)
      break;
    if (r <= 0)
      continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0)
      why.append(buf, size_t(n));
    else if (n == 0 || errno != EINTR)
      break; // end of file: the child is done (or dying)
  }
  close(fds[0]);
  if (!stopped.empty())
    kill_trial(pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return std::string("trial run: waitpid: ") + std::strerror(errno);
  ::kill(-pid, SIGKILL); // anything it started and left behind
  if (!stopped.empty())
    return stopped;
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char *name = sigabbrev_np(sig);
    return std::string("crashed with SIG") + (name ? name : "?") + " (signal " +
           std::to_string(sig) + ") in its trial run (a child process)";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == kFailed)
    return why;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kCalledExitStatus)
    return "called exit() in its trial run (a child process)";
  return "its trial run (a child process) exited with status " +
         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

} // namespace convbench::bench::plugin
