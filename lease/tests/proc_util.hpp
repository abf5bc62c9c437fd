// Process helpers for the lease tests: real processes, real signals, real files.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

extern char **environ;

namespace lease_test {

struct Proc {
  pid_t pid = -1;
  std::string out, err; // files capturing stdout / stderr
};

inline std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string make_tmpdir(const std::string &tag) {
  std::string tmpl = "/tmp/convbench-lease-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw std::runtime_error("mkdtemp failed");
  return buf.data();
}

// Starts argv with the current environment plus `extra` (NAME=VALUE; VALUE empty = unset).
inline Proc spawn(const std::vector<std::string> &argv, const std::string &out_prefix,
                  const std::map<std::string, std::string> &extra = {}) {
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    std::string kv = *e, name = kv.substr(0, kv.find('='));
    if (!extra.count(name))
      env.push_back(kv);
  }
  for (auto &[k, v] : extra)
    if (!v.empty())
      env.push_back(k + "=" + v);
  std::vector<char *> cargv, cenv;
  for (auto &s : argv)
    cargv.push_back(const_cast<char *>(s.c_str()));
  cargv.push_back(nullptr);
  for (auto &s : env)
    cenv.push_back(const_cast<char *>(s.c_str()));
  cenv.push_back(nullptr);
  Proc p;
  p.out = out_prefix + ".out";
  p.err = out_prefix + ".err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int rc = posix_spawnp(&p.pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw std::runtime_error("cannot start " + argv[0]);
  return p;
}

// Exit status (128+signal when killed); -1 on timeout (the process is then SIGKILLed).
inline int wait_exit(Proc &p, double timeout_s = 60) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int st = 0;
  for (;;) {
    pid_t r = ::waitpid(p.pid, &st, WNOHANG);
    if (r == p.pid)
      break;
    if (std::chrono::steady_clock::now() > end) {
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Waits until `pred` holds or the timeout passes.
template <class F> bool wait_until(F pred, double timeout_s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    if (pred())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

struct Hold {
  std::string token;
  long long from = 0, to = 0;
  long pid = 0;
};

// Pairs the acquire/release lines of a lease_probe log into holds, per pid.
inline std::vector<Hold> read_holds(const std::string &log) {
  std::map<long, Hold> open;
  std::vector<Hold> done;
  std::istringstream in(slurp(log));
  std::string what, token;
  long long t;
  long pid;
  while (in >> what >> token >> t >> pid) {
    if (what == "acquire")
      open[pid] = Hold{token, t, 0, pid};
    else if (what == "release" && open.count(pid)) {
      Hold h = open[pid];
      h.to = t;
      done.push_back(h);
      open.erase(pid);
    }
  }
  std::sort(done.begin(), done.end(), [](auto &a, auto &b) { return a.from < b.from; });
  return done;
}

// "" when no two holds overlap and the tokens grow with time; otherwise what went wrong.
inline std::string overlap_problem(const std::vector<Hold> &holds) {
  for (size_t i = 1; i < holds.size(); ++i) {
    if (holds[i].from < holds[i - 1].to)
      return "pid " + std::to_string(holds[i].pid) + " (token " + holds[i].token +
             ") acquired while pid " + std::to_string(holds[i - 1].pid) + " (token " +
             holds[i - 1].token + ") still held";
    if (std::stoll(nlohmann::json::parse(holds[i].token).get<std::string>()) <=
        std::stoll(nlohmann::json::parse(holds[i - 1].token).get<std::string>()))
      return "token did not grow: " + holds[i - 1].token + " then " + holds[i].token;
  }
  return "";
}

} // namespace lease_test
