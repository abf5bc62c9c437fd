// The gates read their vocoder stages from bench/data/models.json (model_stages.hpp) instead of a
// copy of the table: the loader must give every model's stages with the properties the kernels
// rely on, and must refuse a broken table with a message naming the file.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "model_stages.hpp"

namespace convbench::testing {
namespace {

TEST(ModelStages, EveryModelOfTheTableHasVocoderStages) {
  ASSERT_FALSE(model_families().empty());
  EXPECT_NO_THROW(default_model());
  for (const auto &m : model_families())
    for (const auto &frames : {1, 96}) {
      const auto stages = model_stages(m, frames);
      ASSERT_EQ(stages.size(), m.strides.size()) << m.model;
      int64_t l_in = frames;
      for (size_t i = 0; i < stages.size(); ++i) {
        const ConvShape &s = stages[i].shape;
        EXPECT_NO_THROW(s.validate()) << m.model << " " << stages[i].name;
        EXPECT_EQ(stages[i].name, "up" + std::to_string(i));
        EXPECT_EQ(s.op, ConvOp::transposed);
        EXPECT_EQ(s.cin, 2 * s.cout) << "channels halve each stage";
        EXPECT_EQ(s.l_in, l_in) << "input length: frames x the earlier strides";
        // Padding (K - s) / 2 with K = 2s: each stage upsamples by exactly its stride.
        EXPECT_EQ(s.l_out(), s.stride * s.l_in) << m.model << " " << stages[i].name;
        l_in = s.l_out();
      }
    }
}

TEST(ModelStages, ABrokenTableIsRefusedNamingTheFile) {
  const std::string path = ::testing::TempDir() + "/models-broken.json";
  {
    std::ofstream f(path);
    // Planted: one kernel too few.
    f << R"({"default": "m", "models": [{"name": "m", "channels": 8, "strides": [2, 2],
            "kernels": [4]}]})";
  }
  try {
    load_model_table(path);
    FAIL() << "a table whose strides and kernels differ in length was accepted";
  } catch (const std::runtime_error &e) {
    EXPECT_NE(std::string(e.what()).find("strides and kernels"), std::string::npos) << e.what();
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
