// The plan: the request parsed, checked and expanded into cases, before anything runs. Every
// way the request can be wrong fails here (UsageError / DataError: exit 2, nothing written).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convbench/profiles/counters.hpp"
#include "convbench/thread_pool.hpp"
#include "plan/arm.hpp"
#include "plan/case.hpp"
#include "plan/catalog.hpp"
#include "plan/cli.hpp"
#include "plan/cudnn_algo.hpp"
#include "plan/problem.hpp"

namespace convbench::bench {

// The GPU this run sees. Before the lease: present, why_not, uuid and name from NVML (no CUDA
// call); once the lease is held, open_device fills the rest from CUDA device 0.
struct GpuFacts {
  bool present = false;
  std::string why_not; // when !present
  std::string name, uuid, pci_bus_id;
  int sm_count = 0;
  long long l2_bytes = 0;
  int runtime_version = 0, driver_version = 0; // CUDA's integers, e.g. 13000
  int sm_clock_max_khz = 0;
};

struct Plan {
  Options opt;
  std::vector<std::string> argv;
  std::string started_utc;
  Model model;
  std::vector<std::string> stages;
  std::vector<const Arm *> arms;
  bool any_device = false;          // some planned arm runs on the GPU
  std::vector<std::string> skipped; // (arm, problem) pairs an arm does not run, and why
  std::vector<std::unique_ptr<Problem>> problems;
  std::vector<Case> cases;
  GpuFacts gpu;
  DeviceCatalog devices;              // devices.json, for the floors once the GPU is known
  std::optional<DeviceFloors> floors; // set by open_device
  std::optional<profiles::Profile> profile;
  std::string counters_off_reason; // empty: counters will be collected
  std::string out_path;
  std::string journal_path; // <out_path>.journal: every finished round, flushed
  int threads = 1;
  Placement placement;                          // where the host arms' workers run
  std::map<std::string, CudnnAlgo> cudnn_algos; // --cudnn-algo: the pinned cases, by id
};

// Throws UsageError or DataError for a request that cannot run; --help is the caller's.
Plan make_plan(const Options &opt, std::vector<std::string> argv, std::string started_utc);

// Device bytes the planned cases hold at once.
double device_bytes_needed(const Plan &plan);
// Host bytes: each problem's inputs, weights, reference and spare output (shared by its cases),
// each case's own outputs; the plan's sum.
double problem_host_bytes(const Problem &pr);
double case_host_bytes(const Case &c);
double host_bytes_needed(const Plan &plan);
// Why the plan would not fit (host: half of RAM; device: 90% of the GPU's total), with what would
// (for causal cases: how many fit, the largest alone); empty when it fits.
std::string memory_refusal(const Plan &plan);
// The host part against `limit_bytes` (memory_refusal's is half of RAM).
std::string host_memory_refusal(const Plan &plan, double limit_bytes);

} // namespace convbench::bench
