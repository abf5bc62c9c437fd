// The data files bench_conv reads: model families (models.json) and device floors (devices.json).
// Located by data_dir(): $CONVBENCH_DATA_DIR, else <exe>/../share/convbench, else the source tree.
#pragma once

#include <cstdint>
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

struct Model {
  std::string name;
  std::vector<std::string> aliases;
  int64_t channels = 0;
  std::vector<int64_t> strides, kernels;
  int stages() const { return int(strides.size()); }
  // up_i: ConvTranspose1d(C/2^i -> C/2^(i+1), K_i, s_i, padding (K_i - s_i)/2, bias),
  // L_in = frames x product of the earlier strides.
  ConvShape stage_shape(int i, int64_t frames) const;
};

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
  double fp32_fma = 0, fp64_fma = 0, fp64_nofma = 0, memory = 0;
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
