// The vocoder upsample stages the gates run on, read from bench/data/models.json: the one model
// table, which bench_conv reads too. Stage i of a model is ConvTranspose1d(C/2^i -> C/2^(i+1),
// K_i, stride s_i, padding (K_i - s_i) / 2, bias), its input length frames x the product of the
// earlier strides.
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convbench/shape.hpp"

namespace convbench::testing {

struct ModelFamily {
  std::string model;
  int64_t channels = 0;
  std::vector<int64_t> strides, kernels;
};

struct Stage {
  std::string model;
  std::string name; // up0, up1, ...
  ConvShape shape;
};

struct ModelTable {
  std::string default_model;
  std::vector<ModelFamily> families;
};

// Throws std::runtime_error naming the file and what is wrong with it.
inline ModelTable load_model_table(const std::string &path) {
  std::ifstream f(path);
  if (!f)
    throw std::runtime_error("cannot read the model table " + path);
  ModelTable t;
  try {
    const nlohmann::json j = nlohmann::json::parse(f);
    t.default_model = j.at("default").get<std::string>();
    for (const auto &m : j.at("models")) {
      ModelFamily fam{m.at("name").get<std::string>(), m.at("channels").get<int64_t>(),
                      m.at("strides").get<std::vector<int64_t>>(),
                      m.at("kernels").get<std::vector<int64_t>>()};
      if (fam.strides.size() != fam.kernels.size() || fam.strides.empty())
        throw std::runtime_error("model " + fam.model + ": strides and kernels differ in length");
      t.families.push_back(std::move(fam));
    }
  } catch (const nlohmann::json::exception &e) {
    throw std::runtime_error("model table " + path + ": " + e.what());
  }
  return t;
}

// The table of this source tree (CONVBENCH_SOURCE_DATA_DIR, set by kernels/tests/CMakeLists.txt),
// read once.
inline const ModelTable &model_table() {
  static const ModelTable t =
      load_model_table(std::string(CONVBENCH_SOURCE_DATA_DIR) + "/models.json");
  return t;
}

inline const std::vector<ModelFamily> &model_families() { return model_table().families; }

inline const ModelFamily &model_family(const std::string &name) {
  for (const auto &m : model_families())
    if (m.model == name)
      return m;
  throw std::runtime_error("no model '" + name + "' in the model table");
}

inline const ModelFamily &default_model() { return model_family(model_table().default_model); }

inline std::vector<Stage> model_stages(const ModelFamily &m, int64_t frames, int64_t batch = 1) {
  std::vector<Stage> out;
  int64_t l_in = frames;
  for (size_t i = 0; i < m.strides.size(); ++i) {
    ConvShape s;
    s.op = ConvOp::transposed;
    s.batch = batch;
    s.cin = m.channels >> i;
    s.cout = m.channels >> (i + 1);
    s.k = m.kernels[i];
    s.stride = m.strides[i];
    s.padding = (s.k - s.stride) / 2;
    s.l_in = l_in;
    s.bias = true;
    out.push_back({m.model, "up" + std::to_string(i), s});
    l_in *= s.stride;
  }
  return out;
}

// An AMP block Conv1d after an upsample stage: ch -> ch, kernel k, dilation d, the padding that
// keeps the length (d (k - 1) / 2), bias.
inline ConvShape amp_shape(int64_t ch, int64_t k, int64_t d, int64_t l_in, int64_t batch = 1) {
  ConvShape s;
  s.op = ConvOp::forward;
  s.batch = batch;
  s.cin = s.cout = ch;
  s.k = k;
  s.dilation = d;
  s.padding = d * (k - 1) / 2;
  s.l_in = l_in;
  return s;
}

// Every stage of every model at `frames`.
inline std::vector<Stage> all_stages(int64_t frames) {
  std::vector<Stage> out;
  for (const auto &m : model_families())
    for (auto &st : model_stages(m, frames))
      out.push_back(st);
  return out;
}

} // namespace convbench::testing
