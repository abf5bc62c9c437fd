// The data files bench_conv reads: model families (models.json) and device floors (devices.json),
// and the stage names a user types (expand_stages). Located by data_dir(): $CONVBENCH_DATA_DIR,
// else <exe>/../share/convbench, else the source tree.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "convbench/shape.hpp"

namespace convbench::bench {

// A missing or malformed data file, an unknown model or stage: bench_conv exits 2 with what().
class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

std::string data_dir();     // throws DataError naming every place it looked
std::string profiles_dir(); // $CONVBENCH_PROFILES_DIR, else the source tree's profiles/

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

// The causal depthwise conv1d family's case names:
//   causal.cC.lL[.bB][.kK][.state][.none]   C channels, L positions, batch B (1), width K (4),
//                                            with an initial state, identity activation (SiLU)
//   causal                                   the family: C in {1024, 2048, 4096, 8192}, L in
//                                            {1, 64, 1024, 8192}, batch 1 and 8, with and
//                                            without state, K 4, SiLU (64 cases)
bool is_causal_stage(const std::string &stage);
CausalConvShape causal_shape(const std::string &stage); // throws DataError
std::string causal_stage_name(const CausalConvShape &s);

// The stages a user typed -> every case to plan, each once, in the generator's order (then the
// causal cases). Groups: `ampI` (the AMP block after upI), `amp` (every AMP block), `chain` (the
// upsample stages as one case, brings upI along), `all` (every upI and chain), `generator`
// (every convolution in order as one case, brings its distinct stages along), `causal`. Throws
// DataError with one line naming the bad word and what the model has.
std::vector<std::string> expand_stages(const std::vector<std::string> &words, const Model &m);

struct ModelCatalog {
  std::string default_model;
  std::vector<Model> models;
  std::string path;
  const Model *find(const std::string &name_or_alias) const;
  std::vector<std::string> names() const;
};
ModelCatalog load_models(const std::string &path);

// Floors of one device in FLOP/s and bytes/s.
struct DeviceFloors {
  std::string match;
  double fp32_fma = 0, fp64_fma = 0, fp64_nofma = 0, fp64_dmma = 0, memory = 0;
  // Every number of the entry by its key (the above and the optional ones, e.g. the tensor-core
  // peaks tf32_tensor_flops): the counter profiles' {"device": key} inputs.
  std::map<std::string, double> rates;
  double rate(const std::string &kind) const; // by floor kind; throws DataError if unknown
};
struct DeviceCatalog {
  std::vector<DeviceFloors> devices;
  std::string path;
  // The first device whose `match` occurs in `gpu_name`.
  std::optional<DeviceFloors> find(const std::string &gpu_name) const;
};
DeviceCatalog load_devices(const std::string &path);

} // namespace convbench::bench
