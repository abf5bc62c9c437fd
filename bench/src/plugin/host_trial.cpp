#include "host_trial.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

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
} // namespace

std::string run_trial(const std::function<std::string()> &body) {
  int fds[2];
  if (pipe(fds) != 0)
    return std::string("trial run: pipe: ") + std::strerror(errno);
  // Flushed first, so the child's buffered copies of bench_conv's output are empty.
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::string("trial run: fork: ") + std::strerror(errno);
  }
  if (pid == 0) {
    close(fds[0]);
    // Default dispositions: the child dies by the plugin's signal, which the parent reports.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      std::signal(sig, SIG_DFL);
    std::string why;
    try {
      why = body();
    } catch (const std::exception &e) {
      why = e.what();
    } catch (...) {
      why = "an exception of unknown type";
    }
    write_all(fds[1], why);
    close(fds[1]);
    std::fflush(nullptr);
    _exit(why.empty() ? 0 : kFailed); // no atexit handlers or destructors of the parent's state
  }
  close(fds[1]);
  std::string why;
  char buf[512];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0)
      why.append(buf, size_t(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return std::string("trial run: waitpid: ") + std::strerror(errno);
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
  return "its trial run (a child process) exited with status " +
         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

} // namespace convbench::bench::plugin
