// The vocoder stages the gates run on: bench/data/models.json's models, their shapes derived by
// convbench/models.hpp, the one derivation bench_conv plans from too.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "convbench/models.hpp"
#include "convbench/shape.hpp"

namespace convbench::testing {

using ModelFamily = Model;

struct Stage {
  std::string model;
  std::string name; // up0, up1, ...
  ConvShape shape;
};

// Throws DataError (a std::runtime_error) naming the file and what is wrong with it.
inline ModelCatalog load_model_table(const std::string &path) { return load_models(path); }

// The table of this source tree (CONVBENCH_SOURCE_DATA_DIR, set by kernels/tests/CMakeLists.txt),
// read once.
inline const ModelCatalog &model_table() {
  static const ModelCatalog t =
      load_model_table(std::string(CONVBENCH_SOURCE_DATA_DIR) + "/models.json");
  return t;
}

// The listed models (not the aliases that only change num_mels: their upsample stages are their
// model's).
inline const std::vector<Model> &model_families() {
  static const std::vector<Model> families = [] {
    std::vector<Model> out;
    for (const auto &m : model_table().models)
      if (m.variant_of.empty())
        out.push_back(m);
    return out;
  }();
  return families;
}

inline const Model &model_family(const std::string &name) {
  for (const auto &m : model_families())
    if (m.name == name)
      return m;
  throw std::runtime_error("no model '" + name + "' in the model table");
}

inline const Model &default_model() { return model_family(model_table().default_model); }

// The upsample stages up0.. of `m` at `frames`, `batch` sequences each.
inline std::vector<Stage> model_stages(const Model &m, int64_t frames, int64_t batch = 1) {
  std::vector<Stage> out;
  for (int i = 0; i < m.stages(); ++i) {
    ConvShape s = m.stage_shape(i, frames);
    s.batch = batch;
    out.push_back({m.name, "up" + std::to_string(i), s});
  }
  return out;
}

// An AMP block Conv1d after an upsample stage: ch -> ch, kernel k, dilation d, the padding that
// keeps the length, bias.
inline ConvShape amp_shape(int64_t ch, int64_t k, int64_t d, int64_t l_in, int64_t batch = 1) {
  ConvShape s = same_length_conv1d(ch, ch, k, d, l_in, true);
  s.batch = batch;
  return s;
}

// The AMP blocks' Conv1d of model `m` at `frames`: after each upsample stage I (its output
// channels and length), every resblock kernel K and dilation D, named "ampI.kK.dD" as bench_conv
// names them.
inline std::vector<Stage> amp_stages(const Model &m, int64_t frames) {
  std::vector<Stage> out;
  for (int i = 0; i < m.stages(); ++i) {
    const ConvShape up = m.stage_shape(i, frames);
    for (int64_t k : m.resblock_kernels)
      for (int64_t d : m.resblock_dilations)
        out.push_back(
            {m.name,
             "amp" + std::to_string(i) + ".k" + std::to_string(k) + ".d" + std::to_string(d),
             amp_shape(up.cout, k, d, up.l_out())});
  }
  return out;
}

// The model's stages, then its AMP Conv1d (amp_stages), at `frames`: every convolution the plans
// are checked on.
inline std::vector<Stage> stages_and_amp(const Model &m, int64_t frames) {
  std::vector<Stage> out = model_stages(m, frames);
  for (auto &st : amp_stages(m, frames))
    out.push_back(std::move(st));
  return out;
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
