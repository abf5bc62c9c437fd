// The gates read their vocoder stages from bench/data/models.json through convbench/models.hpp
// (model_stages.hpp), as bench_conv does: the loader must give every model's stages with the
// properties the kernels rely on and the shapes the table's "about" rules state, and must refuse a
// broken table with a message naming the file.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model_stages.hpp"

namespace convbench::testing {
namespace {

TEST(ModelStages, EveryModelOfTheTableHasVocoderStages) {
  ASSERT_FALSE(model_families().empty());
  EXPECT_NO_THROW(default_model());
  for (const auto &m : model_families())
    for (const auto &frames : {1, 96}) {
      const auto stages = model_stages(m, frames);
      ASSERT_EQ(stages.size(), m.strides.size()) << m.name;
      int64_t l_in = frames;
      for (size_t i = 0; i < stages.size(); ++i) {
        const ConvShape &s = stages[i].shape;
        EXPECT_NO_THROW(s.validate()) << m.name << " " << stages[i].name;
        EXPECT_EQ(stages[i].name, "up" + std::to_string(i));
        EXPECT_EQ(s.op, ConvOp::transposed);
        EXPECT_EQ(s.cin, 2 * s.cout) << "channels halve each stage";
        EXPECT_EQ(s.l_in, l_in) << "input length: frames x the earlier strides";
        // Padding (K - s) / 2 with K = 2s: each stage upsamples by exactly its stride.
        EXPECT_EQ(s.l_out(), s.stride * s.l_in) << m.name << " " << stages[i].name;
        l_in = s.l_out();
      }
    }
}

// The shapes as the table's "about" rules state them, read from the raw JSON: the derivation
// bench_conv, the gates and the counter tests each wrote out before convbench/models.hpp.
ConvShape rule_shape(const nlohmann::json &m, const std::string &stage, int64_t frames) {
  const int64_t c = m.at("channels");
  const auto strides = m.at("strides").get<std::vector<int64_t>>();
  const auto kernels = m.at("kernels").get<std::vector<int64_t>>();
  auto length = [&](size_t i) {
    int64_t l = frames;
    for (size_t j = 0; j < i; ++j)
      l *= strides[j];
    return l;
  };
  ConvShape s; // bias true, batch 1
  if (stage.rfind("up", 0) == 0) {
    const size_t i = std::stoul(stage.substr(2));
    s.op = ConvOp::transposed;
    s.cin = c >> i;
    s.cout = c >> (i + 1);
    s.k = kernels[i];
    s.stride = strides[i];
    s.padding = (s.k - s.stride) / 2;
    s.l_in = length(i);
    return s;
  }
  s.op = ConvOp::forward;
  if (stage == "pre") {
    s.cin = m.at("num_mels");
    s.cout = c;
    s.k = m.at("pre_kernel");
    s.l_in = frames;
  } else if (stage == "post") {
    s.cin = c >> strides.size();
    s.cout = 1;
    s.k = m.at("post_kernel");
    s.bias = m.at("post_bias");
    s.l_in = length(strides.size());
  } else { // ampI.kK.dD
    const size_t i = std::stoul(stage.substr(3));
    const size_t kd = stage.find(".k"), dd = stage.find(".d");
    s.cin = s.cout = c >> (i + 1);
    s.k = std::stoll(stage.substr(kd + 2, dd - kd - 2));
    s.dilation = std::stoll(stage.substr(dd + 2));
    s.l_in = length(i + 1);
  }
  s.padding = s.dilation * (s.k - 1) / 2;
  return s;
}

std::string fields(const ConvShape &s) {
  return std::to_string(int(s.op)) + " b" + std::to_string(s.batch) + " " + std::to_string(s.cin) +
         "->" + std::to_string(s.cout) + " k" + std::to_string(s.k) + " s" +
         std::to_string(s.stride) + " d" + std::to_string(s.dilation) + " p" +
         std::to_string(s.padding) + " op" + std::to_string(s.output_padding) + " l" +
         std::to_string(s.l_in) + " bias" + std::to_string(s.bias);
}

// Every model of the table (its num_mels aliases too) and every stage it runs, at two lengths.
// Planted: the AMP padding as (k - 1) / 2 without the dilation failed every ampI.kK.d3 and d5.
TEST(ModelStages, EveryStageFollowsTheTablesRules) {
  std::ifstream f(std::string(CONVBENCH_SOURCE_DATA_DIR) + "/models.json");
  const nlohmann::json table = nlohmann::json::parse(f);
  int compared = 0;
  for (const auto &raw : table.at("models")) {
    std::vector<nlohmann::json> listed{raw};
    for (const auto &a : raw.value("aliases", nlohmann::json::array()))
      if (a.is_object()) {
        listed.push_back(raw);
        listed.back()["name"] = a.at("name");
        listed.back()["num_mels"] = a.at("num_mels");
      }
    for (const auto &m : listed) {
      const Model *model = model_table().find(m.at("name").get<std::string>());
      ASSERT_NE(model, nullptr) << m.at("name");
      for (const std::string &stage : model->generator_order())
        for (int64_t frames : {1, 96}) {
          EXPECT_EQ(fields(model->named_shape(stage, frames)), fields(rule_shape(m, stage, frames)))
              << model->name << " " << stage << " at " << frames;
          ++compared;
        }
    }
  }
  EXPECT_EQ(model_table().models.size(), 5u) << "three listed models, two num_mels aliases";
  EXPECT_GE(compared, 5 * 2 * (1 + 4 + 4 * 18 + 1));
}

TEST(ModelStages, ABrokenTableIsRefusedNamingTheFile) {
  const std::string path = ::testing::TempDir() + "/models-broken.json";
  {
    std::ofstream f(path);
    // Planted: one kernel too few.
    f << R"({"default": "m", "models": [{"name": "m", "num_mels": 4, "channels": 8,
            "resblock_kernels": [3], "resblock_dilations": [1], "pre_kernel": 7, "post_kernel": 7,
            "post_bias": true, "strides": [2, 2], "kernels": [4]}]})";
  }
  try {
    load_model_table(path);
    FAIL() << "a table whose strides and kernels differ in length was accepted";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("'strides' and 'kernels'"), std::string::npos) << e.what();
  }
  {
    std::ofstream f(path);
    f << R"({"default": "m", "models": [{"name": "m", "channels": 8}]})"; // no strides
  }
  try {
    load_model_table(path);
    FAIL() << "a table without strides was accepted";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(load_model_table(path), std::runtime_error) << "a missing file";
}

} // namespace
} // namespace convbench::testing
