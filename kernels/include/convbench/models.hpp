// The vocoder generators of bench/data/models.json and the one derivation of their stages' shapes:
// bench_conv plans from it, and every gate and counter test asks it for the stages it runs, so a
// rule written here is the rule everywhere.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convbench/shape.hpp"

namespace convbench {

// A missing or malformed data file, an unknown model or stage: what() is one line naming it.
class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// One vocoder generator: its convolutions, in order (activations and the residual sums are not
// convolutions and are not modelled). Stage names:
//   pre           Conv1d(num_mels -> C, pre_kernel, padding (pre_kernel - 1)/2, bias)
//   upI           ConvTranspose1d(C/2^I -> C/2^(I+1), kernels[I], strides[I], (K - s)/2, bias)
//   ampI.kK.dD    Conv1d(C/2^(I+1) -> same, K, dilation D, padding D(K - 1)/2, bias): the AMP
//                 block after upI (convs1 use each dilation once, convs2 dilation 1, three times)
//   post          Conv1d(C/2^stages -> 1, post_kernel, padding (post_kernel - 1)/2, post_bias)
struct Model {
  std::string name;
  std::vector<std::string> aliases;
  std::string variant_of; // an alias with its own num_mels: the listed model it feeds; "" if none
  int64_t num_mels = 0;
  int64_t channels = 0;
  std::vector<int64_t> strides, kernels;
  std::vector<int64_t> resblock_kernels, resblock_dilations;
  int64_t pre_kernel = 7, post_kernel = 7;
  bool post_bias = true;
  int stages() const { return int(strides.size()); }
  // Input length of up_i: frames x the product of the earlier strides (the AMP block after up_i
  // runs at i + 1's).
  int64_t length_before(int i, int64_t frames) const;
  // up_i: ConvTranspose1d(C/2^i -> C/2^(i+1), K_i, s_i, padding (K_i - s_i)/2, bias).
  ConvShape stage_shape(int i, int64_t frames) const;
  ConvShape pre_shape(int64_t frames) const;
  ConvShape amp_shape(int i, int64_t k, int64_t dilation, int64_t frames) const;
  ConvShape post_shape(int64_t frames) const;
  // The shape of a single stage by name (pre, upI, ampI.kK.dD, post); throws DataError.
  ConvShape named_shape(const std::string &stage, int64_t frames) const;
  // The distinct Conv1d stages of the AMP block after up_i, and of every block, in order.
  std::vector<std::string> amp_stages(int i) const;
  // Every convolution of the generator in order, by stage name (AMP stages repeat).
  std::vector<std::string> generator_order() const;
};

struct ModelCatalog {
  std::string default_model;
  std::vector<Model> models; // each listed model, then its num_mels variants
  std::string path;
  const Model *find(const std::string &name_or_alias) const;
  std::vector<std::string> names() const;
};
// Reads and checks models.json; throws DataError naming the file, the model and the fault.
ModelCatalog load_models(const std::string &path);

// A Conv1d that keeps the length (pre, the AMP blocks, post): padding dilation (k - 1) / 2.
ConvShape same_length_conv1d(int64_t cin, int64_t cout, int64_t k, int64_t dilation, int64_t l,
                             bool bias);

// The pieces of the stage-name grammar: "123" -> 123, anything else (empty, sign, leading zero,
// too long) -> -1; "a.b.c" -> {"a", "b", "c"}.
int64_t parse_count(const std::string &s);
std::vector<std::string> split_dots(const std::string &s);

// A data file as JSON, and one field of an object: DataError naming `where` when the file cannot
// be read or parsed, the field is missing or has the wrong type.
nlohmann::json read_data_json(const std::string &path);
template <class T>
T data_field(const nlohmann::json &obj, const char *key, const std::string &where) {
  if (!obj.is_object() || !obj.contains(key))
    throw DataError(where + ": missing field '" + key + "'");
  try {
    return obj.at(key).get<T>();
  } catch (const nlohmann::json::exception &) {
    throw DataError(where + ": field '" + key + "' has the wrong type");
  }
}

} // namespace convbench
