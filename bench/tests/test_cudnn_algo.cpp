// --cudnn-algo: the SPEC's forms, the replay of an earlier record's choices, and the pins that
// refuse the plan. Planted faults, each seen failing here:
//  - index_below accepting == count (fwd_algo_8 parsed): KnownNamesOnly fails;
//  - split_top splitting inside parentheses: CommaListKeepsMathWithComma fails;
//  - cudnn_algos_of_record taking every arm's cases: RecordReplaysCudnnCasesOnly fails;
//  - pin_cudnn_cases ignoring the op (every case pinned): OneNameAppliesToItsOpOnly fails;
//  - pin_cudnn_cases dropping the tensor-op check: TensorOpRefusedOnF32 fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "plan/cli.hpp"
#include "plan/cudnn_algo.hpp"

namespace cb = convbench::bench;
using nlohmann::json;

namespace {

std::string write_temp(const std::string &name, const std::string &text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("convbench_cudnn_algo_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

json cudnn_case(const std::string &id, const std::string &arm, const std::string &algo) {
  return {{"id", id}, {"arm", arm}, {"kernel", {{"name", "cuDNN"}, {"algorithm", algo}}}};
}

const std::vector<cb::CudnnTarget> kTargets = {
    {"up0/96/cudnn-f32/resident", "cudnn-f32", false},
    {"up0/96/cudnn-tf32/resident", "cudnn-tf32", false},
    {"up0/96/cudnn-f32#2/resident", "cudnn-f32#2", false},
    {"pre/96/cudnn-tf32/resident", "cudnn-tf32", true},
};

} // namespace

TEST(CudnnAlgo, KnownNamesOnly) {
  for (int i = 0; i < cb::kCudnnFwdAlgos; ++i)
    EXPECT_TRUE(cb::parse_cudnn_algo("fwd_algo_" + std::to_string(i)).forward);
  for (int i = 0; i < cb::kCudnnBwdDataAlgos; ++i)
    EXPECT_EQ(cb::parse_cudnn_algo("bwd_data_algo_" + std::to_string(i)).index, i);
  for (const char *bad :
       {"fwd_algo_8", "bwd_data_algo_6", "bwd_data_algo_", "bwd_data_algo_-1", "bwd_filter_algo_0",
        "fwd_algo_1 (warp math)", "fwd_algo_1 (fma math", "FWD_ALGO_1", ""})
    EXPECT_THROW(cb::parse_cudnn_algo(bad), cb::UsageError) << bad;
}

TEST(CudnnAlgo, RecordSpellingRoundTrips) {
  for (const char *s : {"bwd_data_algo_1 (tensor-op math)", "fwd_algo_6 (fma math)",
                        "bwd_data_algo_0 (tensor-op math, conversion)", "fwd_algo_2"})
    EXPECT_EQ(cb::parse_cudnn_algo(s).name(), s);
  EXPECT_EQ(cb::parse_cudnn_algo("bwd_data_algo_1 (tensor-op math)").math, "tensor-op math");
}

TEST(CudnnAlgo, CommaListKeepsMathWithComma) {
  const auto s = cb::parse_cudnn_algo_spec(
      "up0/96/cudnn-tf32/resident=bwd_data_algo_1 (tensor-op math, conversion),"
      "up0/96/cudnn-f32/resident=bwd_data_algo_0");
  ASSERT_EQ(s.by_case.size(), 2u);
  EXPECT_FALSE(s.every);
  EXPECT_EQ(s.by_case.at("up0/96/cudnn-tf32/resident").math, "tensor-op math, conversion");
  EXPECT_EQ(s.by_case.at("up0/96/cudnn-f32/resident").index, 0);
  for (const char *bad : {"a=bwd_data_algo_0,a=bwd_data_algo_1", "a=bwd_data_algo_0,",
                          "=bwd_data_algo_0", "a=", "a=bwd_data_algo_7"})
    EXPECT_THROW(cb::parse_cudnn_algo_spec(bad), cb::UsageError) << bad;
}

TEST(CudnnAlgo, RecordReplaysCudnnCasesOnly) {
  json rec = {
      {"cases",
       {cudnn_case("up0/96/cudnn-tf32/resident", "cudnn-tf32", "bwd_data_algo_1 (tensor-op math)"),
        cudnn_case("up0/96/cudnn-f32/resident", "cudnn-f32", "bwd_data_algo_0 (fma math)"),
        // another arm's kernel block is not cuDNN's, whatever it holds
        cudnn_case("up0/96/cuda-f32/resident", "cuda-f32", "bwd_data_algo_3"),
        {{"id", "up0/96/cpu-f64/host"}, {"arm", "cpu-f64"}, {"kernel", nullptr}}}}};
  const std::string path = write_temp("rec.json", rec.dump());
  const auto s = cb::parse_cudnn_algo_spec("@" + path);
  EXPECT_EQ(s.record, path);
  ASSERT_EQ(s.by_case.size(), 2u);
  EXPECT_EQ(s.by_case.at("up0/96/cudnn-tf32/resident").name(), "bwd_data_algo_1 (tensor-op math)");
  EXPECT_EQ(s.by_case.count("up0/96/cuda-f32/resident"), 0u);
  // Replayed against a plan: the record's cases this run plans, by id; the rest run Find.
  const auto pins = cb::pin_cudnn_cases(s, kTargets);
  EXPECT_EQ(pins.size(), 2u);
  EXPECT_EQ(pins.count("up0/96/cudnn-f32#2/resident"), 0u);
  std::filesystem::remove(path);
}

TEST(CudnnAlgo, RealRecordReplays) {
  // A real run's record: every cuDNN case of it has a kernel.algorithm.
  const auto s = cb::parse_cudnn_algo_spec("@" CONVBENCH_EXAMPLES_DIR "/instrument.json");
  std::ifstream in(CONVBENCH_EXAMPLES_DIR "/instrument.json");
  const json rec = json::parse(in);
  size_t cudnn = 0;
  for (const auto &c : rec["cases"])
    cudnn += c["arm"].get<std::string>().rfind("cudnn-", 0) == 0;
  ASSERT_GT(cudnn, 0u);
  EXPECT_EQ(s.by_case.size(), cudnn);
  EXPECT_EQ(s.by_case.at("up0/96/cudnn-f32/resident").name(), "bwd_data_algo_0 (fma math)");
}

TEST(CudnnAlgo, UnreadableRecordsRefused) {
  EXPECT_THROW(cb::parse_cudnn_algo_spec("@/nonexistent/convbench.json"), cb::UsageError);
  for (const std::string &text :
       {std::string("{not json"), std::string("[]"), std::string("{\"cases\": 3}"),
        json({{"cases", {{{"arm", "cudnn-f32"}}}}}).dump(),
        json({{"cases", {cudnn_case("x", "cudnn-f32", "bwd_data_algo_77")}}}).dump(),
        json({{"cases", json::array()}}).dump()}) {
    const std::string path = write_temp("bad.json", text);
    EXPECT_THROW(cb::parse_cudnn_algo_spec("@" + path), cb::UsageError) << text;
    std::filesystem::remove(path);
  }
}

TEST(CudnnAlgo, OneNameAppliesToItsOpOnly) {
  const auto pins = cb::pin_cudnn_cases(cb::parse_cudnn_algo_spec("bwd_data_algo_1"), kTargets);
  EXPECT_EQ(pins.size(), 3u); // the three ConvTranspose1d cases, the twin included
  EXPECT_EQ(pins.count("pre/96/cudnn-tf32/resident"), 0u);
  const auto fwd = cb::pin_cudnn_cases(cb::parse_cudnn_algo_spec("fwd_algo_0"), kTargets);
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_TRUE(fwd.begin()->second.forward);
  // No planned case runs it, or no cuDNN case planned at all: the plan is refused.
  EXPECT_THROW(cb::pin_cudnn_cases(cb::parse_cudnn_algo_spec("fwd_algo_0"), {kTargets[0]}),
               cb::UsageError);
  EXPECT_THROW(cb::pin_cudnn_cases(cb::parse_cudnn_algo_spec("bwd_data_algo_0"), {}),
               cb::UsageError);
}

TEST(CudnnAlgo, ListedCasesMustBePlannedAndOfTheirOp) {
  EXPECT_THROW(cb::pin_cudnn_cases(cb::parse_cudnn_algo_spec("up9/96/cudnn-f32/resident="
                                                             "bwd_data_algo_0"),
                                   kTargets),
               cb::UsageError);
  EXPECT_THROW(cb::pin_cudnn_cases(
                   cb::parse_cudnn_algo_spec("up0/96/cudnn-tf32/resident=fwd_algo_1"), kTargets),
               cb::UsageError);
  const auto pins = cb::pin_cudnn_cases(
      cb::parse_cudnn_algo_spec("up0/96/cudnn-tf32/resident=bwd_data_algo_5"), kTargets);
  ASSERT_EQ(pins.size(), 1u);
  EXPECT_EQ(pins.at("up0/96/cudnn-tf32/resident").index, 5);
}

TEST(CudnnAlgo, TensorOpRefusedOnF32) {
  const auto spec = cb::parse_cudnn_algo_spec("bwd_data_algo_1 (tensor-op math)");
  EXPECT_THROW(cb::pin_cudnn_cases(spec, kTargets), cb::UsageError);
  EXPECT_NO_THROW(cb::pin_cudnn_cases(spec, {kTargets[1]}));
  EXPECT_THROW(cb::pin_cudnn_cases(spec, {kTargets[2]}), cb::UsageError); // cudnn-f32's twin
}
