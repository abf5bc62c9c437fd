#include "catalog.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace convbench::bench {

namespace {
fs::path exe_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p.parent_path();
}

json read_json(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw DataError("cannot read " + path);
  try {
    return json::parse(in);
  } catch (const json::exception &e) {
    throw DataError(path + ": not valid JSON: " + e.what());
  }
}

template <class T> T field(const json &obj, const char *key, const std::string &where) {
  if (!obj.is_object() || !obj.contains(key))
    throw DataError(where + ": missing field '" + key + "'");
  try {
    return obj.at(key).get<T>();
  } catch (const json::exception &) {
    throw DataError(where + ": field '" + key + "' has the wrong type");
  }
}
} // namespace

std::string data_dir() {
  std::vector<fs::path> tried;
  if (const char *env = std::getenv("CONVBENCH_DATA_DIR"); env && *env) {
    // An explicit override that is wrong is an error, not a reason to silently use another copy.
    if (fs::is_regular_file(fs::path(env) / "models.json"))
      return env;
    throw DataError(std::string("CONVBENCH_DATA_DIR=") + env + " holds no models.json");
  }
  fs::path installed = exe_dir() / ".." / "share" / "convbench";
  tried.push_back(installed);
  if (fs::is_regular_file(installed / "models.json"))
    return installed.lexically_normal().string();
  fs::path source = CONVBENCH_SOURCE_DATA_DIR;
  tried.push_back(source);
  if (fs::is_regular_file(source / "models.json"))
    return source.string();
  std::string msg = "no models.json found (set CONVBENCH_DATA_DIR); looked in";
  for (auto &t : tried) // appended in two steps: " " + string trips GCC 12's -Wrestrict (a false
    msg.append(" ").append(t.string()); // positive, GCC bug 105329)
  throw DataError(msg);
}

std::string profiles_dir() {
  if (const char *env = std::getenv("CONVBENCH_PROFILES_DIR"); env && *env)
    return env;
  fs::path installed = exe_dir() / ".." / "share" / "convbench" / "profiles";
  if (fs::is_directory(installed))
    return installed.lexically_normal().string();
  return CONVBENCH_SOURCE_PROFILES_DIR;
}

ConvShape Model::stage_shape(int i, int64_t frames) const {
  ConvShape s;
  s.op = ConvOp::transposed;
  s.batch = 1;
  s.cin = channels >> i;
  s.cout = channels >> (i + 1);
  s.k = kernels[size_t(i)];
  s.stride = strides[size_t(i)];
  s.padding = (s.k - s.stride) / 2;
  s.l_in = frames;
  for (int j = 0; j < i; ++j)
    s.l_in *= strides[size_t(j)];
  s.bias = true;
  return s;
}

const Model *ModelCatalog::find(const std::string &name) const {
  for (const auto &m : models) {
    if (m.name == name)
      return &m;
    for (const auto &a : m.aliases)
      if (a == name)
        return &m;
  }
  return nullptr;
}

std::vector<std::string> ModelCatalog::names() const {
  std::vector<std::string> out;
  for (const auto &m : models) {
    out.push_back(m.name);
    for (const auto &a : m.aliases)
      out.push_back(a);
  }
  return out;
}

ModelCatalog load_models(const std::string &path) {
  json j = read_json(path);
  ModelCatalog cat;
  cat.path = path;
  cat.default_model = field<std::string>(j, "default", path);
  auto models = field<json>(j, "models", path);
  if (!models.is_array() || models.empty())
    throw DataError(path + ": 'models' must be a non-empty list");
  for (size_t n = 0; n < models.size(); ++n) {
    const json &m = models[n];
    std::string where = path + ": models[" + std::to_string(n) + "]";
    Model model;
    model.name = field<std::string>(m, "name", where);
    where += " (" + model.name + ")";
    if (m.contains("aliases"))
      model.aliases = field<std::vector<std::string>>(m, "aliases", where);
    model.channels = field<int64_t>(m, "channels", where);
    model.strides = field<std::vector<int64_t>>(m, "strides", where);
    model.kernels = field<std::vector<int64_t>>(m, "kernels", where);
    if (model.strides.empty() || model.strides.size() != model.kernels.size())
      throw DataError(where + ": 'strides' and 'kernels' must be non-empty and of equal length");
    if (model.channels <= 0 || model.channels % (int64_t(1) << model.stages()) != 0)
      throw DataError(where + ": 'channels' must be positive and divisible by 2^stages");
    for (size_t i = 0; i < model.strides.size(); ++i)
      if (model.strides[i] <= 0 || model.kernels[i] < model.strides[i] ||
          (model.kernels[i] - model.strides[i]) % 2 != 0)
        throw DataError(where + ": stage " + std::to_string(i) +
                        " needs stride > 0 and an even kernel - stride >= 0");
    cat.models.push_back(std::move(model));
  }
  if (!cat.find(cat.default_model))
    throw DataError(path + ": default model is not listed");
  return cat;
}

double DeviceFloors::rate(const std::string &kind) const {
  if (kind == "fp32_fma")
    return fp32_fma;
  if (kind == "fp64_fma")
    return fp64_fma;
  if (kind == "fp64_nofma")
    return fp64_nofma;
  if (kind == "memory")
    return memory;
  throw DataError("unknown floor kind '" + kind + "'");
}

std::optional<DeviceFloors> DeviceCatalog::find(const std::string &gpu_name) const {
  for (const auto &d : devices)
    if (!d.match.empty() && gpu_name.find(d.match) != std::string::npos)
      return d;
  return std::nullopt;
}

DeviceCatalog load_devices(const std::string &path) {
  json j = read_json(path);
  DeviceCatalog cat;
  cat.path = path;
  auto devs = field<json>(j, "devices", path);
  if (!devs.is_array())
    throw DataError(path + ": 'devices' must be a list");
  for (size_t n = 0; n < devs.size(); ++n) {
    std::string where = path + ": devices[" + std::to_string(n) + "]";
    DeviceFloors d;
    d.match = field<std::string>(devs[n], "match", where);
    d.fp32_fma = field<double>(devs[n], "fp32_fma_flops", where);
    d.fp64_fma = field<double>(devs[n], "fp64_fma_flops", where);
    d.fp64_nofma = field<double>(devs[n], "fp64_nofma_flops", where);
    d.memory = field<double>(devs[n], "memory_bytes_per_s", where);
    if (!(d.fp32_fma > 0 && d.fp64_fma > 0 && d.fp64_nofma > 0 && d.memory > 0))
      throw DataError(where + ": every rate must be positive");
    cat.devices.push_back(d);
  }
  return cat;
}

} // namespace convbench::bench
