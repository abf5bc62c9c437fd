#include "plan/catalog.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
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

bool is_causal_stage(const std::string &stage) {
  return stage == "causal" || stage.rfind("causal.", 0) == 0;
}

CausalConvShape causal_shape(const std::string &stage) {
  const std::vector<std::string> parts = split_dots(stage);
  const std::string grammar = "causal.c<channels>.l<length>[.b<batch>][.k<width>][.state][.none]";
  CausalConvShape s;
  s.channels = s.length = 0;
  bool seen_b = false, seen_k = false;
  for (size_t n = 1; n < parts.size(); ++n) {
    const std::string &p = parts[n];
    const int64_t v = p.size() > 1 ? parse_count(p.substr(1)) : -1;
    if (n == 1 && p[0] == 'c' && v > 0)
      s.channels = v;
    else if (n == 2 && !p.empty() && p[0] == 'l' && v > 0)
      s.length = v;
    else if (n > 2 && p == "state" && !s.initial_state)
      s.initial_state = true;
    else if (n > 2 && p == "none" && s.activation == Activation::silu)
      s.activation = Activation::none;
    else if (n > 2 && !p.empty() && p[0] == 'b' && v > 0 && !seen_b && !seen_k &&
             !s.initial_state && s.activation == Activation::silu)
      seen_b = true, s.batch = v;
    else if (n > 2 && !p.empty() && p[0] == 'k' && v > 0 && !seen_k && !s.initial_state &&
             s.activation == Activation::silu)
      seen_k = true, s.k = v;
    else
      throw DataError("--stage: " + stage + ": expected " + grammar + " (at '" + p + "')");
  }
  if (s.channels == 0 || s.length == 0)
    throw DataError("--stage: " + stage + ": expected " + grammar);
  try {
    s.validate();
  } catch (const ShapeError &e) {
    throw DataError("--stage: " + stage + ": " + e.what());
  }
  return s;
}

std::string causal_stage_name(const CausalConvShape &s) {
  std::string n = "causal.c" + std::to_string(s.channels) + ".l" + std::to_string(s.length) + ".b" +
                  std::to_string(s.batch);
  if (s.k != 4)
    n += ".k" + std::to_string(s.k);
  if (s.initial_state)
    n += ".state";
  if (s.activation == Activation::none)
    n += ".none";
  return n;
}

namespace {
std::vector<std::string> causal_family() {
  std::vector<std::string> out;
  for (int64_t c : {1024, 2048, 4096, 8192})
    for (int64_t l : {1, 64, 1024, 8192})
      for (int64_t b : {1, 8})
        for (bool st : {false, true}) {
          CausalConvShape s;
          s.channels = c;
          s.length = l;
          s.batch = b;
          s.initial_state = st;
          out.push_back(causal_stage_name(s));
        }
  return out;
}
} // namespace

std::vector<std::string> expand_stages(const std::vector<std::string> &words, const Model &m) {
  std::set<std::string> want;
  std::vector<std::string> causal;
  bool chain = false, generator = false;
  auto add_causal = [&](const std::string &n) {
    if (std::find(causal.begin(), causal.end(), n) == causal.end())
      causal.push_back(n);
  };
  for (const auto &w : words) {
    if (w == "all" || w == "chain") {
      chain = true;
      for (int i = 0; i < m.stages(); ++i)
        want.insert("up" + std::to_string(i));
    } else if (w == "generator") {
      generator = true;
      for (const auto &s : m.generator_order())
        want.insert(s);
    } else if (w == "amp") {
      for (int i = 0; i < m.stages(); ++i)
        for (const auto &s : m.amp_stages(i))
          want.insert(s);
    } else if (w == "causal") {
      for (const auto &n : causal_family())
        add_causal(n);
    } else if (is_causal_stage(w)) {
      add_causal(causal_stage_name(causal_shape(w)));
    } else if (w.rfind("amp", 0) == 0 && w.find('.') == std::string::npos) {
      const int64_t i = parse_count(w.substr(3));
      if (i < 0 || i >= m.stages())
        throw DataError("--stage: model " + m.name + " has AMP blocks amp0..amp" +
                        std::to_string(m.stages() - 1) + ", not " + w);
      for (const auto &s : m.amp_stages(int(i)))
        want.insert(s);
    } else {
      (void)m.named_shape(w, 1); // validates the name
      want.insert(w);
    }
  }
  // In the generator's order, each distinct stage once.
  std::vector<std::string> out;
  for (const auto &s : m.generator_order())
    if (want.count(s) && std::find(out.begin(), out.end(), s) == out.end())
      out.push_back(s);
  if (chain)
    out.push_back("chain");
  if (generator)
    out.push_back("generator");
  out.insert(out.end(), causal.begin(), causal.end());
  return out;
}

double DeviceFloors::rate(const std::string &kind) const {
  if (kind == "fp32_fma")
    return fp32_fma;
  if (kind == "fp64_fma")
    return fp64_fma;
  if (kind == "fp64_nofma")
    return fp64_nofma;
  if (kind == "fp64_dmma")
    return fp64_dmma;
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
  json j = read_data_json(path);
  DeviceCatalog cat;
  cat.path = path;
  auto devs = data_field<json>(j, "devices", path);
  if (!devs.is_array())
    throw DataError(path + ": 'devices' must be a list");
  for (size_t n = 0; n < devs.size(); ++n) {
    std::string where = path + ": devices[" + std::to_string(n) + "]";
    DeviceFloors d;
    d.match = data_field<std::string>(devs[n], "match", where);
    d.fp32_fma = data_field<double>(devs[n], "fp32_fma_flops", where);
    d.fp64_fma = data_field<double>(devs[n], "fp64_fma_flops", where);
    d.fp64_nofma = data_field<double>(devs[n], "fp64_nofma_flops", where);
    d.fp64_dmma = data_field<double>(devs[n], "fp64_dmma_flops", where);
    d.memory = data_field<double>(devs[n], "memory_bytes_per_s", where);
    if (!(d.fp32_fma > 0 && d.fp64_fma > 0 && d.fp64_nofma > 0 && d.fp64_dmma > 0 && d.memory > 0))
      throw DataError(where + ": every rate must be positive");
    for (const auto &[key, v] : devs[n].items())
      if (v.is_number())
        d.rates[key] = v.get<double>();
    cat.devices.push_back(d);
  }
  return cat;
}

} // namespace convbench::bench
