// Plugins through the loader and a whole run: every bad plugin is refused with one line naming
// it, and the run goes on with the other arms; a bad case is recorded, never timed (exit 4).
// Each check was seen failing on a planted fault in the code it guards (named per test).
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "driver/run.hpp"
#include "plan/arm.hpp"
#include "plugin/plugin_arm.hpp"
#include "plugin/plugin_loader.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace convbench::bench;

namespace {

std::string so(const std::string &name) {
  return std::string(CONVBENCH_TEST_PLUGIN_DIR) + "/" + name + ".so";
}

int count_lines_with(const std::string &text, const std::string &needle) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    n += line.find(needle) != std::string::npos;
  return n;
}

// Planted: accepting any abi_version in open_table() made this fail (the plugin loaded).
TEST(PluginLoad, WrongAbiVersionIsRefused) {
  testing::internal::CaptureStderr();
  const auto r = plugin::load_plugin(so("fault_abi"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(r.refused.find("ABI version 99"), std::string::npos) << r.refused;
  EXPECT_TRUE(r.arms.empty());
  EXPECT_EQ(find_arm("fault-abi"), nullptr);
  EXPECT_EQ(count_lines_with(err, "plugin " + r.path + ": refused"), 1) << err;
}

// Planted: skipping the struct-size checks made this fail.
TEST(PluginLoad, WrongStructSizeIsRefused) {
  const auto r = plugin::load_plugin(so("fault_size"));
  EXPECT_NE(r.refused.find("convbench_arm is"), std::string::npos) << r.refused;
  EXPECT_EQ(find_arm("fault-size"), nullptr);
}

TEST(PluginLoad, MissingEntryPointIsRefused) {
  const auto r = plugin::load_plugin(so("fault_no_entry"));
  EXPECT_NE(r.refused.find("exports no convbench_arm_plugin"), std::string::npos) << r.refused;
  EXPECT_EQ(find_arm("fault-no-entry"), nullptr);
}

TEST(PluginLoad, NotASharedObjectIsRefusedAndNoFileIsAUsageError) {
  const fs::path text = fs::temp_directory_path() / ("not_a_plugin_" + std::to_string(getpid()));
  std::ofstream(text) << "not an ELF file\n";
  const auto r = plugin::load_plugin(text.string());
  EXPECT_NE(r.refused.find("dlopen failed"), std::string::npos) << r.refused;
  EXPECT_EQ(r.sha256.size(), 64u); // still hashed: the record can say which file it was
  fs::remove(text);
  EXPECT_THROW(plugin::load_plugin("/nonexistent/plugin.so"), plugin::PluginPathError);
}

// Planted: registering without the find_arm() check made register_arm throw (a crash of the
// whole run on a name clash); a tolerance of 2 accepted made the second expectation fail.
TEST(PluginLoad, AnArmMayNotShadowABuiltInAndBadEntriesAreRefusedAlone) {
  const Arm *builtin = find_arm("cpu-f32");
  ASSERT_NE(builtin, nullptr);
  testing::internal::CaptureStderr();
  const auto r = plugin::load_plugin(so("fault_shadow"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(r.refused.empty()) << r.refused;
  EXPECT_EQ(r.arms, std::vector<std::string>{"fault-shadow-ok"});
  ASSERT_EQ(r.refused_arms.size(), 2u);
  EXPECT_NE(r.refused_arms[0].find("arm cpu-f32 has the name of an arm already registered"),
            std::string::npos);
  EXPECT_NE(r.refused_arms[1].find("tolerance in (0, 1)"), std::string::npos);
  EXPECT_EQ(find_arm("cpu-f32"), builtin);
  EXPECT_EQ(dynamic_cast<const plugin::PluginArm *>(builtin), nullptr);
  EXPECT_EQ(count_lines_with(err, "plugin " + r.path + ": refused arm cpu-f32"), 1) << err;
}

// The run-level view of what was loaded and refused (for the record's plugins block).
TEST(PluginLoad, ReportsListLoadedAndRefusedPlugins) {
  plugin::load_plugin(so("fault_abi"));
  plugin::load_plugin(so("fault_shadow"));
  const json j = plugin::plugins_json();
  EXPECT_EQ(j["abi_version"], 1);
  bool refused = false, loaded = false;
  for (const auto &r : j["refused"])
    refused |= r["path"].get<std::string>().ends_with("fault_abi.so") &&
               r["why"].get<std::string>().find("ABI version 99") != std::string::npos;
  for (const auto &l : j["loaded"])
    loaded |= l["path"].get<std::string>().ends_with("fault_shadow.so") &&
              l["refused_arms"].size() == 2 && l["arms"].size() == 1;
  EXPECT_TRUE(refused) << j.dump(1);
  EXPECT_TRUE(loaded) << j.dump(1);
}

struct Expect {
  std::string arm;
  bool pass;
  std::string refusal; // in the record's kernel.plugin.refused.host and on one stderr line
};

// One run with every runtime fault beside good arms. Planted faults it caught:
//  - the fork trial bypassed (prepare_plugin_case calling the plugin in-process): the test
//    process died by SIGSEGV in fault-segv;
//  - guarded() without its catch clauses: fault-throw's refusal no longer said what crossed
//    the C ABI (the trial's own catch took it);
//  - PluginCase::call() throwing at the gate instead of refusing: exit 1, no result
//    (fault-call-in-parent, whose trial run passes);
//  - the NaN count removed from output(): no "NaN" line for fault-nan.
TEST(PluginRun, BadArmsAreRefusedRecordedNotTimedAndTheRunGoesOn) {
  for (const char *name : {"fault_none", "fault_prepare", "fault_call", "fault_wrong", "fault_nan",
                           "fault_segv", "fault_throw", "fault_call_in_parent", "abi_arms"}) {
    const auto r = plugin::load_plugin(so(name));
    ASSERT_TRUE(r.refused.empty()) << name << ": " << r.refused;
  }
  const std::vector<Expect> expect = {
      {"cpu-f64", true, ""},
      {"cpu-f32", true, ""},
      {"abi-cpu-f32", true, ""},
      {"fault-none", true, ""},
      {"fault-prepare", false, "prepare returned status 1: planted: prepare refuses"},
      {"fault-call", false, "call returned status 1: planted: call fails"},
      {"fault-wrong", false, ""},
      {"fault-nan", false, "the output holds 1 NaN or infinite cells"},
      {"fault-segv", false, "crashed with SIGSEGV (signal 11) in its trial run"},
      {"fault-throw", false, "call threw a C++ exception across the C ABI: planted"},
      {"fault-call-in-parent", false, "call returned status 1: planted: call fails outside"},
  };
  std::string arms;
  for (const auto &e : expect)
    arms += (arms.empty() ? "" : ",") + e.arm;
  const fs::path dir = fs::temp_directory_path() / ("bench_plugin_run_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "r.json").string();
  const char *argv[] = {"bench_conv",
                        "--stage",
                        "up3",
                        "--model",
                        "bigvgan_base_22khz_80band",
                        "--frames",
                        "4",
                        "--reps",
                        "2",
                        "--target-ci",
                        "0",
                        "--arms",
                        arms.c_str(),
                        "--no-counters",
                        "--no-lease",
                        "--min-time",
                        "0.001",
                        "--threads",
                        "2",
                        "--out",
                        out.c_str()};
  testing::internal::CaptureStderr();
  const int rc = run_bench_conv(int(sizeof argv / sizeof *argv), argv);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 4) << err;
  std::ifstream in(out);
  ASSERT_TRUE(in.good()) << "no result written\n" << err;
  const json r = json::parse(in);
  int checked = 0;
  for (const auto &e : expect) {
    const json *c = nullptr;
    for (const auto &cj : r["cases"])
      if (cj["arm"] == e.arm)
        c = &cj;
    ASSERT_NE(c, nullptr) << e.arm << " has no case";
    EXPECT_EQ((*c)["gate"]["result"], e.pass ? "pass" : "fail") << e.arm;
    EXPECT_EQ((*c)["samples"].size(), e.pass ? 2u : 0u) << e.arm << ": timed iff gated";
    const json &k = (*c)["kernel"];
    if (e.arm.rfind("fault-", 0) == 0 || e.arm.rfind("abi-", 0) == 0) {
      const json &pl = k["plugin"];
      EXPECT_TRUE(std::regex_match(pl["sha256"].get<std::string>(), std::regex("[0-9a-f]{64}")));
      EXPECT_TRUE(fs::path(pl["path"].get<std::string>()).is_absolute());
      EXPECT_EQ(pl["abi_version"], 1);
      EXPECT_FALSE(pl["version"].get<std::string>().empty());
      if (!e.refusal.empty()) {
        const std::string why = pl["refused"].value("host", "");
        EXPECT_NE(why.find(e.refusal), std::string::npos) << e.arm << ": " << why;
        EXPECT_EQ(count_lines_with(err, "plugin " + pl["path"].get<std::string>() + ": arm " +
                                            e.arm + ": up3/4 host: "),
                  1)
            << e.arm << "\n"
            << err;
      } else {
        EXPECT_FALSE(pl.contains("refused")) << e.arm;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, int(expect.size()));
  // What the arm chose, from its describe(): in the same block.
  for (const auto &cj : r["cases"]) {
    if (cj["arm"] == "abi-cpu-f32") {
      EXPECT_NE(cj["kernel"]["name"].get<std::string>().find("through the ABI"), std::string::npos);
    }
  }
  fs::remove_all(dir);
}

} // namespace
