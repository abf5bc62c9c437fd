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

#include "convbench/models.hpp"
#include "convbench/shape.hpp"

namespace convbench::bench {

// models.json's generators and their stages (convbench/models.hpp, shared with the gates' tests).
using convbench::DataError;
using convbench::load_models;
using convbench::Model;
using convbench::ModelCatalog;

std::string data_dir();     // throws DataError naming every place it looked
std::string profiles_dir(); // $CONVBENCH_PROFILES_DIR, else the source tree's profiles/

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
