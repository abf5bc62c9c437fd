#include "convbench/models.hpp"

#include <algorithm>
#include <fstream>

using nlohmann::json;

namespace convbench {

json read_data_json(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw DataError("cannot read " + path);
  try {
    return json::parse(in);
  } catch (const json::exception &e) {
    throw DataError(path + ": not valid JSON: " + e.what());
  }
}

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

ConvShape same_length_conv1d(int64_t cin, int64_t cout, int64_t k, int64_t dilation, int64_t l,
                             bool bias) {
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

namespace {

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
  return same_length_conv1d(num_mels, channels, pre_kernel, 1, frames, true);
}

ConvShape Model::amp_shape(int i, int64_t k, int64_t dilation, int64_t frames) const {
  const int64_t ch = channels >> (i + 1);
  return same_length_conv1d(ch, ch, k, dilation, length_before(i + 1, frames), true);
}

ConvShape Model::post_shape(int64_t frames) const {
  return same_length_conv1d(channels >> stages(), 1, post_kernel, 1,
                            length_before(stages(), frames), post_bias);
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

namespace {
// The fields of one listed model and the checks its stages need; `where` names it.
Model read_model(const json &m, std::string where) {
  Model model;
  model.name = data_field<std::string>(m, "name", where);
  where += " (" + model.name + ")";
  model.num_mels = data_field<int64_t>(m, "num_mels", where);
  model.channels = data_field<int64_t>(m, "channels", where);
  model.resblock_kernels = data_field<std::vector<int64_t>>(m, "resblock_kernels", where);
  model.resblock_dilations = data_field<std::vector<int64_t>>(m, "resblock_dilations", where);
  model.pre_kernel = data_field<int64_t>(m, "pre_kernel", where);
  model.post_kernel = data_field<int64_t>(m, "post_kernel", where);
  model.post_bias = data_field<bool>(m, "post_bias", where);
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
  model.strides = data_field<std::vector<int64_t>>(m, "strides", where);
  model.kernels = data_field<std::vector<int64_t>>(m, "kernels", where);
  if (model.strides.empty() || model.strides.size() != model.kernels.size())
    throw DataError(where + ": 'strides' and 'kernels' must be non-empty and of equal length");
  if (model.channels <= 0 || model.channels % (int64_t(1) << model.stages()) != 0)
    throw DataError(where + ": 'channels' must be positive and divisible by 2^stages");
  for (size_t i = 0; i < model.strides.size(); ++i)
    if (model.strides[i] <= 0 || model.kernels[i] < model.strides[i] ||
        (model.kernels[i] - model.strides[i]) % 2 != 0)
      throw DataError(where + ": stage " + std::to_string(i) +
                      " needs stride > 0 and an even kernel - stride >= 0");
  return model;
}

// An alias is a name or {"name", "num_mels"}: the same generator fed another mel count, listed as
// a model of its own (its pre stage differs). Names go to model.aliases; the variants are returned.
std::vector<Model> read_aliases(const json &m, Model &model, const std::string &where) {
  std::vector<Model> variants;
  if (!m.contains("aliases"))
    return variants;
  const json al = data_field<json>(m, "aliases", where);
  if (!al.is_array())
    throw DataError(where + ": 'aliases' must be a list");
  for (const json &a : al) {
    if (a.is_string()) {
      model.aliases.push_back(a.get<std::string>());
      continue;
    }
    Model v = model;
    v.name = data_field<std::string>(a, "name", where + ": alias");
    v.num_mels = data_field<int64_t>(a, "num_mels", where + ": alias " + v.name);
    if (v.num_mels <= 0)
      throw DataError(where + ": alias " + v.name + ": 'num_mels' must be positive");
    v.variant_of = model.name;
    variants.push_back(std::move(v));
  }
  for (auto &v : variants)
    v.aliases.clear();
  return variants;
}
} // namespace

ModelCatalog load_models(const std::string &path) {
  const json j = read_data_json(path);
  ModelCatalog cat;
  cat.path = path;
  cat.default_model = data_field<std::string>(j, "default", path);
  const auto models = data_field<json>(j, "models", path);
  if (!models.is_array() || models.empty())
    throw DataError(path + ": 'models' must be a non-empty list");
  for (size_t n = 0; n < models.size(); ++n) {
    const std::string where = path + ": models[" + std::to_string(n) + "]";
    Model model = read_model(models[n], where);
    std::vector<Model> variants = read_aliases(models[n], model, where + " (" + model.name + ")");
    cat.models.push_back(std::move(model));
    for (auto &v : variants)
      cat.models.push_back(std::move(v));
  }
  const std::vector<std::string> all = cat.names();
  for (const auto &n : all)
    if (std::count(all.begin(), all.end(), n) > 1)
      throw DataError(path + ": model name or alias '" + n + "' listed twice");
  if (!cat.find(cat.default_model))
    throw DataError(path + ": default model is not listed");
  return cat;
}

} // namespace convbench
