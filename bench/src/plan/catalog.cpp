#include "plan/catalog.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

int64_t Model::length_before(int i, int64_t frames) const {
  int64_t l = frames;
  for (int j = 0; j < i; ++j)
    l *= strides[size_t(j)];
  return l;
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
  s.l_in = length_before(i, frames);
  s.bias = true;
  return s;
}

namespace {
ConvShape conv1d(int64_t cin, int64_t cout, int64_t k, int64_t dilation, int64_t l, bool bias) {
  ConvShape s;
  s.op = ConvOp::forward;
  s.cin = cin;
  s.cout = cout;
  s.k = k;
  s.dilation = dilation;
  s.padding = dilation * (k - 1) / 2;
  s.l_in = l;
  s.bias = bias;
  return s;
}

// "123" -> 123; anything else (empty, sign, leading zero, too long) -> -1.
int64_t parse_count(const std::string &s) {
  if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0'))
    return -1;
  for (char ch : s)
    if (ch < '0' || ch > '9')
      return -1;
  return std::stoll(s);
}

std::vector<std::string> split_dots(const std::string &s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos)
      return out;
    start = dot + 1;
  }
}

std::string join_numbers(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s.append(i ? ", " : "").append(std::to_string(v[i]));
  return s;
}

bool contains(const std::vector<int64_t> &v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
} // namespace

ConvShape Model::pre_shape(int64_t frames) const {
  return conv1d(num_mels, channels, pre_kernel, 1, frames, true);
}

ConvShape Model::amp_shape(int i, int64_t k, int64_t dilation, int64_t frames) const {
  const int64_t ch = channels >> (i + 1);
  return conv1d(ch, ch, k, dilation, length_before(i + 1, frames), true);
}

ConvShape Model::post_shape(int64_t frames) const {
  return conv1d(channels >> stages(), 1, post_kernel, 1, length_before(stages(), frames),
                post_bias);
}

std::vector<std::string> Model::amp_stages(int i) const {
  std::vector<std::string> out;
  for (int64_t k : resblock_kernels)
    for (int64_t d : resblock_dilations)
      out.push_back("amp" + std::to_string(i) + ".k" + std::to_string(k) + ".d" +
                    std::to_string(d));
  return out;
}

std::vector<std::string> Model::generator_order() const {
  std::vector<std::string> out{"pre"};
  for (int i = 0; i < stages(); ++i) {
    out.push_back("up" + std::to_string(i));
    const std::string amp = "amp" + std::to_string(i) + ".k";
    // AMPBlock: per resblock kernel, per dilation d: convs1 (dilation d), then convs2 (1).
    for (int64_t k : resblock_kernels)
      for (int64_t d : resblock_dilations) {
        out.push_back(amp + std::to_string(k) + ".d" + std::to_string(d));
        out.push_back(amp + std::to_string(k) + ".d1");
      }
  }
  out.push_back("post");
  return out;
}

ConvShape Model::named_shape(const std::string &stage, int64_t frames) const {
  if (stage == "pre")
    return pre_shape(frames);
  if (stage == "post")
    return post_shape(frames);
  const std::vector<std::string> parts = split_dots(stage);
  const std::string &head = parts[0];
  const bool up = head.rfind("up", 0) == 0, amp = head.rfind("amp", 0) == 0;
  const int64_t i = up ? parse_count(head.substr(2)) : amp ? parse_count(head.substr(3)) : -1;
  const std::string range = "0.." + std::to_string(stages() - 1);
  if ((up || amp) && (i < 0 || i >= stages()))
    throw DataError("--stage: model " + name + " has " + (up ? "up" : "amp") + range + ", not " +
                    stage);
  if (up && parts.size() == 1)
    return stage_shape(int(i), frames);
  if (amp && parts.size() == 3 && parts[1].rfind("k", 0) == 0 && parts[2].rfind("d", 0) == 0) {
    const int64_t k = parse_count(parts[1].substr(1)), d = parse_count(parts[2].substr(1));
    if (!contains(resblock_kernels, k))
      throw DataError("--stage: " + stage + ": model " + name + " has AMP kernels " +
                      join_numbers(resblock_kernels));
    if (!contains(resblock_dilations, d))
      throw DataError("--stage: " + stage + ": model " + name + " has AMP dilations " +
                      join_numbers(resblock_dilations));
    return amp_shape(int(i), k, d, frames);
  }
  throw DataError("--stage: unknown stage '" + stage +
                  "' (pre, up0, amp0.k3.d1, post, groups amp0, amp, chain, all, generator; "
                  "causal.c1024.l64, causal: see --help)");
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
    model.num_mels = field<int64_t>(m, "num_mels", where);
    model.channels = field<int64_t>(m, "channels", where);
    model.resblock_kernels = field<std::vector<int64_t>>(m, "resblock_kernels", where);
    model.resblock_dilations = field<std::vector<int64_t>>(m, "resblock_dilations", where);
    model.pre_kernel = field<int64_t>(m, "pre_kernel", where);
    model.post_kernel = field<int64_t>(m, "post_kernel", where);
    model.post_bias = field<bool>(m, "post_bias", where);
    if (model.num_mels <= 0)
      throw DataError(where + ": 'num_mels' must be positive");
    // Odd kernels, so padding d(k - 1)/2 keeps the length (the configs' get_padding).
    for (int64_t k : model.resblock_kernels)
      if (k <= 0 || k % 2 == 0)
        throw DataError(where + ": every resblock kernel must be odd and positive");
    for (int64_t d : model.resblock_dilations)
      if (d <= 0)
        throw DataError(where + ": every resblock dilation must be positive");
    if (model.resblock_kernels.empty() || !contains(model.resblock_dilations, 1))
      throw DataError(where + ": 'resblock_kernels' must be non-empty and 'resblock_dilations' "
                              "must hold 1 (the convs2 dilation)");
    if (model.pre_kernel <= 0 || model.pre_kernel % 2 == 0 || model.post_kernel <= 0 ||
        model.post_kernel % 2 == 0)
      throw DataError(where + ": 'pre_kernel' and 'post_kernel' must be odd and positive");
    // An alias is a name or {"name", "num_mels"}: the same generator fed another mel count,
    // listed as a model of its own (its pre stage differs).
    std::vector<Model> variants;
    if (m.contains("aliases")) {
      const json al = field<json>(m, "aliases", where);
      if (!al.is_array())
        throw DataError(where + ": 'aliases' must be a list");
      for (const json &a : al) {
        if (a.is_string()) {
          model.aliases.push_back(a.get<std::string>());
          continue;
        }
        Model v;
        v.name = field<std::string>(a, "name", where + ": alias");
        v.num_mels = field<int64_t>(a, "num_mels", where + ": alias " + v.name);
        if (v.num_mels <= 0)
          throw DataError(where + ": alias " + v.name + ": 'num_mels' must be positive");
        variants.push_back(v);
      }
    }
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
    for (auto &v : variants) {
      Model full = model;
      full.name = v.name;
      full.aliases.clear();
      full.num_mels = v.num_mels;
      cat.models.push_back(std::move(full));
    }
    cat.models.insert(cat.models.end() - long(variants.size()), std::move(model));
  }
  const std::vector<std::string> all = cat.names();
  for (const auto &n : all)
    if (std::count(all.begin(), all.end(), n) > 1)
      throw DataError(path + ": model name or alias '" + n + "' listed twice");
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
    d.fp64_dmma = field<double>(devs[n], "fp64_dmma_flops", where);
    d.memory = field<double>(devs[n], "memory_bytes_per_s", where);
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
