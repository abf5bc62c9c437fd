// The device facts the plans read (convbench/device_facts.hpp): the planning table is the device
// the cost models were fitted on, and a build or host without a GPU plans with it.
//
// Planted faults seen failing (then reverted): kPlanningDevice's bandwidth at 3.3 TB/s
// (PlanningDeviceIsTheFittedOne fails: 1667 bytes per cycle); device_facts() without CUDA
// returning a zeroed table (WithoutADeviceThePlanningTableAnswers fails).
#include <gtest/gtest.h>

#include "convbench/device_facts.hpp"

using convbench::device_facts;
using convbench::kPlanningDevice;

TEST(DeviceFacts, PlanningDeviceIsTheFittedOne) {
  EXPECT_EQ(kPlanningDevice.sms, 132);
  // The cost models' device-memory rate, exactly: plans without a GPU stay as tuned.
  EXPECT_EQ(kPlanningDevice.dram_bytes_per_cycle(), 1750.0);
  EXPECT_EQ(kPlanningDevice.smem_per_sm, 228 * 1024);
}

TEST(DeviceFacts, WithoutADeviceThePlanningTableAnswers) {
  const convbench::DeviceFacts &d = device_facts();
  EXPECT_EQ(&d, &device_facts()) << "read once per device";
  EXPECT_GT(d.sms, 0);
  EXPECT_GT(d.dram_bytes_per_cycle(), 0.0);
  if (!CONVBENCH_HAVE_CUDA) {
    EXPECT_EQ(d.sms, kPlanningDevice.sms);
    EXPECT_EQ(d.sm_clock_hz, kPlanningDevice.sm_clock_hz);
    EXPECT_EQ(d.dram_bytes_per_s, kPlanningDevice.dram_bytes_per_s);
  }
}
