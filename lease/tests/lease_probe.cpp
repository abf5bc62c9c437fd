// A stand-in for bench_conv in the lease tests: opens a RunLease exactly as bench does, "times"
// samples for --seconds (observing as told), verifies, writes the lease block, releases.
//   lease_probe [--seconds S] [--wait S] [--ttl S] [--gpu-uuid U] [--foreign-gpu N]
//               [--log FILE] [--json FILE] [--no-lease] [--estimate S]
// --log appends "acquire|release <token> <CLOCK_MONOTONIC ns> <pid>" so tests can check that no
// two holders overlapped. Exit: 0 valid, 3 refused, 4 void, 5 outside-lease, 2 usage.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "convbench/lease/run_lease.hpp"

using namespace convbench::lease;

static long long mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void log_line(const std::string &path, const std::string &what, const std::string &token) {
  if (path.empty())
    return;
  std::string line = what + " " + token + " " + std::to_string(mono_ns()) + " " +
                     std::to_string(::getpid()) + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!::write(fd, line.data(), line.size()); // one write: O_APPEND keeps lines whole
    ::close(fd);
  }
}

int main(int argc, char **argv) {
  RunLeaseOptions opt;
  double seconds = 0.5;
  int foreign_gpu = 0;
  std::string log, json_out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "lease_probe: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seconds")
      seconds = std::atof(next().c_str());
    else if (a == "--wait")
      opt.wait_s = std::atof(next().c_str());
    else if (a == "--ttl")
      opt.ttl_s = std::atof(next().c_str());
    else if (a == "--gpu-uuid")
      opt.gpu_uuid = next();
    else if (a == "--foreign-gpu")
      foreign_gpu = std::atoi(next().c_str());
    else if (a == "--log")
      log = next();
    else if (a == "--json")
      json_out = next();
    else if (a == "--estimate")
      opt.estimate_s = std::atof(next().c_str());
    else if (a == "--no-lease")
      opt.no_lease = true;
    else {
      std::cerr << "lease_probe: unknown option " << a << "\n";
      return 2;
    }
  }
  opt.run_id = "probe" + std::to_string(::getpid());
  std::unique_ptr<RunLease> lease;
  try {
    lease = RunLease::open(opt);
  } catch (const LeaseRefused &e) {
    std::cerr << "lease_probe: refused: " << e.what() << "\n";
    return 3;
  }
  std::string token = lease->to_json().value("token", nlohmann::json()).dump();
  log_line(log, "acquire", token);
  lease->verify_start();
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (int round = 0; std::chrono::steady_clock::now() < end; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    lease->observe_sample("up0/96/probe-f32/host", round, foreign_gpu, 0.01 * (round % 7));
  }
  lease->verify_end();
  log_line(log, "release", token);
  nlohmann::json j = lease->to_json();
  lease->release();
  if (json_out.empty()) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::ofstream(json_out) << j.dump(2) << "\n";
  }
  std::string v = lease->verdict();
  return v == "valid" ? 0 : v == "void" ? 4 : 5;
}
