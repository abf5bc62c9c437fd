// The node run's pieces that need no GPU: the neighbour probe's readings as they land in a sample's
// JSON (two fake GPUs stand in for NVML), the --gpus list against the node's GPUs, the per-GPU
// record paths.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "driver/multi_gpu.hpp"
#include "plan/case.hpp"
#include "plan/cli.hpp"
#include "probes/neighbours.hpp"
#include "record/record.hpp"

namespace convbench::bench {
namespace {

// Two neighbours: GPU 1 busy and fully read, GPU 2 whose power NVML could not
// give.
class TwoFakeGpus : public NeighbourProbe {
public:
  std::vector<NeighbourReading> read() const override {
    NeighbourReading busy;
    busy.index = 1;
    busy.uuid = "GPU-fake-1";
    busy.util_pct = 97;
    busy.power_w = 612.5;
    busy.sm_clock_mhz = 1755;
    busy.violation_us = 1200.0;
    busy.processes = 2;
    NeighbourReading dim;
    dim.index = 2;
    dim.uuid = "GPU-fake-2";
    dim.util_pct = 0;
    dim.sm_clock_mhz = 345;
    dim.violation_us = 0.0;
    dim.processes = 0;
    dim.unavailable["power_w"] = "NVML: nvmlDeviceGetPowerUsage: Not Supported (3)";
    return {busy, dim};
  }
};

// Planted: neighbours_json writing power_w from util_pct failed TwoFakeGpusLandInTheSample (612.5
// vs 97); dropping the `unavailable` map failed it too.
TEST(Neighbours, TwoFakeGpusLandInTheSample) {
  TwoFakeGpus probe;
  Sample s;
  s.neighbours = probe.read();
  const nlohmann::json j = sample_json(s);
  ASSERT_TRUE(j.contains("neighbours"));
  const auto &n = j["neighbours"];
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0]["index"], 1);
  EXPECT_EQ(n[0]["uuid"], "GPU-fake-1");
  EXPECT_EQ(n[0]["util_pct"], 97);
  EXPECT_DOUBLE_EQ(n[0]["power_w"].get<double>(), 612.5);
  EXPECT_EQ(n[0]["sm_clock_mhz"], 1755);
  EXPECT_DOUBLE_EQ(n[0]["violation_us"].get<double>(), 1200.0);
  EXPECT_EQ(n[0]["processes"], 2);
  EXPECT_TRUE(n[0]["unavailable"].empty());
  EXPECT_TRUE(n[1]["power_w"].is_null());
  EXPECT_EQ(n[1]["unavailable"]["power_w"], "NVML: nvmlDeviceGetPowerUsage: Not Supported (3)");
  EXPECT_EQ(n[1]["util_pct"], 0);
}

// A run of its own records no neighbours field at all (not an empty list:
// nothing was asked).
TEST(Neighbours, AbsentOutsideANodeRun) {
  Sample s;
  EXPECT_FALSE(sample_json(s).contains("neighbours"));
  ::unsetenv("CONVBENCH_NODE_GPUS");
  EXPECT_EQ(node_neighbour_probe(), nullptr);
}

// Without NVML every field is null and says why (the probe never throws, never
// invents).
TEST(Neighbours, NvmlProbeWithoutNvmlSaysWhy) {
  ::setenv("CONVBENCH_NODE_GPUS", "0,1,2", 1);
  ::setenv("CONVBENCH_NODE_GPU", "1", 1);
  auto probe = node_neighbour_probe();
  ASSERT_NE(probe, nullptr);
  const auto readings = probe->read();
  ASSERT_EQ(readings.size(), 2u); // itself left out
  EXPECT_EQ(readings[0].index, 0);
  EXPECT_EQ(readings[1].index, 2);
  for (const auto &r : readings)
    if (!r.util_pct) // a machine with NVML reads them; here each null field has
                     // its reason
      for (const char *f : {"util_pct", "power_w", "sm_clock_mhz", "violation_us", "processes"})
        EXPECT_FALSE(r.unavailable.at(f).empty()) << f;
  ::unsetenv("CONVBENCH_NODE_GPUS");
  ::unsetenv("CONVBENCH_NODE_GPU");
}

// Planted: accepting an index equal to the count (v > count) failed
// BadListsAreRefused.
TEST(NodeGpus, ListsAgainstASimulatedNode) {
  ::setenv("CONVBENCH_TEST_NODE_GPUS", "3", 1);
  EXPECT_EQ(node_gpus("all"), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(node_gpus("2,0"), (std::vector<int>{2, 0}));
  EXPECT_EQ(node_gpus("1"), (std::vector<int>{1}));
  ::unsetenv("CONVBENCH_TEST_NODE_GPUS");
}

TEST(NodeGpus, BadListsAreRefused) {
  ::setenv("CONVBENCH_TEST_NODE_GPUS", "2", 1);
  for (const char *bad : {"2", "0,0", "x", "0,", "-1", "1.5", ""})
    EXPECT_THROW(node_gpus(bad), UsageError) << bad;
  ::setenv("CONVBENCH_TEST_NODE_GPUS", "0", 1);
  EXPECT_THROW(node_gpus("all"), UsageError);
  ::unsetenv("CONVBENCH_TEST_NODE_GPUS");
}

TEST(NodeGpus, RecordPathsBesideTheSummary) {
  EXPECT_EQ(gpu_record_path("r/node.json", 3), "r/node.gpu3.json");
  EXPECT_EQ(gpu_record_path("r/node", 0), "r/node.gpu0.json");
}

// The child's side of the barrier: it says its index on the ready pipe, then stays put until the go
// pipe closes. Planted: returning right after the ready write (no read of the go pipe) failed
// StaysUntilTheGoPipeCloses.
TEST(NodeBarrier, StaysUntilTheGoPipeCloses) {
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  const std::string spec = std::to_string(ready[1]) + "," + std::to_string(go[0]);
  ::setenv("CONVBENCH_NODE_BARRIER", spec.c_str(), 1);
  ::setenv("CONVBENCH_NODE_GPU", "3", 1);
  std::atomic<bool> passed{false};
  std::thread child([&] {
    wait_at_node_barrier();
    passed = true;
  });
  int index = -1;
  ASSERT_EQ(::read(ready[0], &index, sizeof index), ssize_t(sizeof index));
  EXPECT_EQ(index, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(passed.load()) << "passed the barrier before it was released";
  ::close(go[1]);
  child.join();
  EXPECT_TRUE(passed.load());
  char byte;
  EXPECT_EQ(::read(ready[0], &byte, 1), 0) << "the ready pipe's write end is left open";
  ::close(ready[0]);
  EXPECT_EQ(std::getenv("CONVBENCH_NODE_BARRIER"), nullptr); // a second call returns at once
  wait_at_node_barrier();
  ::unsetenv("CONVBENCH_NODE_GPU");
}

} // namespace
} // namespace convbench::bench
