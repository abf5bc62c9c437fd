#include "probes/sysinfo.hpp"

#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <random>
#include <unistd.h>

#include "core/file_sha256.hpp"
#include "probes/host_probe.hpp"

namespace convbench::bench {

namespace {
std::string first_line(const std::string &path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}
} // namespace

std::string utc_now_compact() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0)
    return "unknown-host";
  return buf;
}

std::string new_run_id() {
  std::random_device rd;
  uint64_t a = (uint64_t(rd()) << 32) ^ rd();
  uint64_t b = (uint64_t(rd()) << 32) ^ rd() ^
               uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
               uint64_t(getpid());
  char buf[40];
  snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
  return buf;
}

nlohmann::json host_block() {
  nlohmann::json h;
  nlohmann::json un = nlohmann::json::object();
  h["name"] = host_name();
  auto file_field = [&](const char *key, const char *path) {
    std::string v = first_line(path);
    if (v.empty()) {
      h[key] = nullptr;
      un[key] = std::string(path) + " not readable";
    } else {
      h[key] = v;
    }
  };
  file_field("machine_id", "/etc/machine-id");
  file_field("boot_id", "/proc/sys/kernel/random/boot_id");
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  if (model.empty()) {
    h["cpu_model"] = nullptr;
    un["cpu_model"] = "/proc/cpuinfo has no 'model name'";
  } else {
    h["cpu_model"] = model;
  }
  h["cores"] = online_cpus();
  HostSnapshot s = probe_host();
  h["governor"] = s.governor ? nlohmann::json(*s.governor) : nlohmann::json(nullptr);
  if (!s.governor)
    un["governor"] = s.unavailable.value("governor", "unreadable");
  h["memory_bytes"] = physical_memory_bytes();
  h["unavailable"] = un;
  return h;
}

nlohmann::json tool_block() {
  return {
    {"name", "convbench"}, {"version", CONVBENCH_VERSION}, {"git_sha", CONVBENCH_GIT_SHA},
        {"build_type", CONVBENCH_BUILD_TYPE}, {"compiler", CONVBENCH_COMPILER},
        {"cxx_flags", CONVBENCH_CXX_FLAGS},
#if CONVBENCH_HAVE_CUDA
        {"cuda_flags", CONVBENCH_CUDA_FLAGS}, {"cuda_version", CONVBENCH_CUDA_VERSION},
#else
        {"cuda_flags", nullptr}, {"cuda_version", nullptr},
#endif
    {
      "benchmark_version", CONVBENCH_BENCHMARK_VERSION
    }
  };
}

nlohmann::json binary_sha() {
  // Two builds of one git sha can differ (flags, toolchain, local edits): the analysis names a
  // changed binary before it blames the instrument.
  try {
    return plugin::file_sha256("/proc/self/exe");
  } catch (const std::exception &) {
    return nullptr;
  }
}

double physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? double(pages) * double(size) : 0.0;
}

nlohmann::json benchmark_context() {
  const auto &cpu = benchmark::CPUInfo::Get();
  const auto &sys = benchmark::SystemInfo::Get();
  nlohmann::json caches = nlohmann::json::array();
  for (const auto &c : cpu.caches)
    caches.push_back(
        {{"type", c.type}, {"level", c.level}, {"size", c.size}, {"num_sharing", c.num_sharing}});
  return {{"host_name", sys.name},
          {"num_cpus", cpu.num_cpus},
          {"mhz_per_cpu", int(cpu.cycles_per_second / 1e6)},
          {"cpu_scaling_enabled", cpu.scaling == benchmark::CPUInfo::ENABLED},
          {"caches", caches},
          {"load_avg", cpu.load_avg},
          {"library_build_type", "unknown"},
          {"library_version", CONVBENCH_BENCHMARK_VERSION}};
}

} // namespace convbench::bench
