// Counter profiles as data: loading, and every check that can run before anything is timed.
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "convbench/profiles/counters.hpp"

#ifndef CONVBENCH_PROFILES_DIR
#define CONVBENCH_PROFILES_DIR "profiles"
#endif

namespace convbench::profiles {
namespace {

using nlohmann::json;

const std::set<std::string> kRollups = {"sum", "avg", "min", "max"};
// Submetrics a counter or throughput rollup may carry (Nsight Compute's metric grammar).
const std::set<std::string> kSubmetrics = {"peak_sustained",
                                           "peak_sustained_active",
                                           "peak_sustained_elapsed",
                                           "peak_sustained_region",
                                           "peak_sustained_frame",
                                           "per_second",
                                           "per_cycle_active",
                                           "per_cycle_elapsed",
                                           "per_cycle_region",
                                           "per_cycle_frame",
                                           "pct_of_peak_sustained_active",
                                           "pct_of_peak_sustained_elapsed",
                                           "pct_of_peak_sustained_region",
                                           "pct_of_peak_sustained_frame"};
const std::set<std::string> kRatioSuffixes = {"pct", "ratio", "max_rate"};
const std::set<std::string> kInputs = {"best_seconds", "flops_hint"};

size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string read_file(const std::string &path, bool *ok) {
  std::ifstream in(path, std::ios::binary);
  *ok = static_cast<bool>(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_path(const std::string &s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

std::string type_name(const json &v) { return v.type_name(); }

// Validates one profile document; every error names the profile, the field and (where there is
// one) the metric.
class Validator {
public:
  Validator(std::string label, std::string path, const KnownMetrics &known)
      : label_(std::move(label)), path_(std::move(path)), known_(known) {}

  [[noreturn]] void fail(const std::string &field, const std::string &problem) const {
    throw ProfileError("profile '" + label_ + "' (" + path_ + "): field '" + field +
                       "': " + problem);
  }
  void set_label(const std::string &l) { label_ = l; }

  const json &require(const json &obj, const std::string &key, const std::string &field) const {
    if (!obj.contains(key))
      fail(field, "is missing");
    return obj.at(key);
  }
  std::string require_string(const json &obj, const std::string &key, const std::string &prefix,
                             bool non_empty) const {
    const std::string field = prefix + key;
    const json &v = require(obj, key, field);
    if (!v.is_string())
      fail(field, "must be a string, not " + type_name(v));
    if (non_empty && v.get<std::string>().empty())
      fail(field, "must not be empty");
    return v.get<std::string>();
  }
  void only_keys(const json &obj, const std::set<std::string> &allowed,
                 const std::string &field) const {
    for (const auto &[k, v] : obj.items()) {
      if (!allowed.count(k)) {
        std::string list;
        for (const auto &a : allowed)
          list += (list.empty() ? "" : ", ") + a;
        fail(field.empty() ? k : field + "." + k, "unknown key (allowed: " + list + ")");
      }
    }
  }

  void check_scale(const json &obj, const std::string &field) const {
    if (obj.contains("scale") && !obj.at("scale").is_number())
      fail(field + ".scale", "must be a number, not " + type_name(obj.at("scale")));
  }

  void check_term(const json &t, const std::string &field, const std::set<std::string> &metrics,
                  const std::set<std::string> &earlier) const {
    if (!t.is_object())
      fail(field, "must be an object, not " + type_name(t));
    only_keys(t, {"metric", "derived", "input", "device", "const", "scale"}, field);
    int kinds = 0;
    for (const char *k : {"metric", "derived", "input", "device", "const"})
      kinds += t.contains(k) ? 1 : 0;
    if (kinds != 1)
      fail(field, "must have exactly one of metric, derived, input, device, const");
    check_scale(t, field);
    if (t.contains("metric")) {
      const json &m = t.at("metric");
      if (!m.is_string())
        fail(field + ".metric", "must be a string, not " + type_name(m));
      const std::string name = m.get<std::string>();
      if (!metrics.count(name))
        fail(field + ".metric", "metric '" + name + "' is not in the profile's metrics list");
    } else if (t.contains("derived")) {
      const json &d = t.at("derived");
      if (!d.is_string())
        fail(field + ".derived", "must be a string, not " + type_name(d));
      if (!earlier.count(d.get<std::string>()))
        fail(field + ".derived",
             "'" + d.get<std::string>() + "' is not a derived figure defined above this one");
    } else if (t.contains("input")) {
      const json &i = t.at("input");
      if (!i.is_string() || !kInputs.count(i.get<std::string>()))
        fail(field + ".input", "unknown input " + i.dump() + " (known: best_seconds, flops_hint)");
    } else if (t.contains("device")) {
      // A rate of bench/data/devices.json's entry for the device, by its key.
      const json &k = t.at("device");
      if (!k.is_string() || k.get<std::string>().empty() ||
          k.get<std::string>().find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") !=
              std::string::npos)
        fail(field + ".device",
             "must be a devices.json key (lower case, digits, '_'), not " + k.dump());
    } else if (!t.at("const").is_number()) {
      fail(field + ".const", "must be a number, not " + type_name(t.at("const")));
    }
  }

  // The metrics list: known names, each once, into p.metrics; the set of them.
  std::set<std::string> check_metrics(const json &doc, Profile &p) const {
    const json &ms = require(doc, "metrics", "metrics");
    if (!ms.is_array() || ms.empty())
      fail("metrics", "must be a non-empty array of metric names, not " +
                          (ms.is_array() ? std::string("an empty array") : type_name(ms)));
    std::set<std::string> metric_set;
    for (size_t i = 0; i < ms.size(); ++i) {
      const std::string field = "metrics[" + std::to_string(i) + "]";
      if (!ms[i].is_string())
        fail(field, "must be a string, not " + type_name(ms[i]));
      const std::string m = ms[i].get<std::string>();
      if (const std::string why = known_.problem(m); !why.empty())
        fail(field, "metric '" + m + "': " + why);
      if (!metric_set.insert(m).second)
        fail(field, "metric '" + m + "' is listed twice");
      p.metrics.push_back(m);
    }
    return metric_set;
  }

  Profile run(const std::string &text, const std::string &expected_name) {
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::parse_error &e) {
      fail("(document)", std::string("not valid JSON: ") + e.what());
    }
    if (!doc.is_object())
      fail("(document)", "must be a JSON object, not " + type_name(doc));
    Profile p;
    p.path = path_;
    p.name = require_string(doc, "name", "", true);
    set_label(p.name);
    if (!expected_name.empty() && p.name != expected_name)
      fail("name", "is '" + p.name + "' but the profile was looked up as '" + expected_name + "'");
    p.description = require_string(doc, "description", "", false);
    only_keys(doc, {"name", "description", "metrics", "derived", "paths"}, "");

    const std::set<std::string> metric_set = check_metrics(doc, p);

    const json &ds = require(doc, "derived", "derived");
    if (!ds.is_array())
      fail("derived", "must be an array, not " + type_name(ds));
    std::set<std::string> earlier;
    for (size_t i = 0; i < ds.size(); ++i) {
      const std::string field = "derived[" + std::to_string(i) + "]";
      const json &d = ds[i];
      if (!d.is_object())
        fail(field, "must be an object, not " + type_name(d));
      const std::string name = require_string(d, "name", field + ".", true);
      const std::string named = field + " (" + name + ")";
      if (name == "unavailable")
        fail(named + ".name", "'unavailable' is reserved");
      if (earlier.count(name))
        fail(named + ".name", "'" + name + "' is defined twice");
      require_string(d, "unit", named + ".", false);
      require_string(d, "description", named + ".", false);
      only_keys(d, {"name", "unit", "description", "sum", "product", "ratio", "scale"}, named);
      check_scale(d, named);
      int forms = 0;
      for (const char *k : {"sum", "product", "ratio"})
        forms += d.contains(k) ? 1 : 0;
      if (forms != 1)
        fail(named, "must have exactly one of sum, product, ratio");
      for (const char *form : {"sum", "product"}) {
        if (!d.contains(form))
          continue;
        const json &terms = d.at(form);
        const std::string f = named + "." + form;
        if (!terms.is_array() || terms.empty())
          fail(f, "must be a non-empty array of terms");
        for (size_t j = 0; j < terms.size(); ++j)
          check_term(terms[j], f + "[" + std::to_string(j) + "]", metric_set, earlier);
      }
      if (d.contains("ratio")) {
        const json &r = d.at("ratio");
        const std::string f = named + ".ratio";
        if (!r.is_object())
          fail(f, "must be an object {num, den}, not " + type_name(r));
        only_keys(r, {"num", "den"}, f);
        check_term(require(r, "num", f + ".num"), f + ".num", metric_set, earlier);
        check_term(require(r, "den", f + ".den"), f + ".den", metric_set, earlier);
      }
      earlier.insert(name);
    }
    p.derived = ds;
    if (doc.contains("paths"))
      p.paths = check_paths(doc.at("paths"), earlier);
    return p;
  }

  // The "where the arithmetic ran" table: each path names derived figures defined above.
  json check_paths(const json &ps, const std::set<std::string> &derived) const {
    if (!ps.is_array())
      fail("paths", "must be an array, not " + type_name(ps));
    std::set<std::string> names, kinds;
    for (size_t i = 0; i < ps.size(); ++i) {
      const std::string field = "paths[" + std::to_string(i) + "]";
      const json &e = ps[i];
      if (!e.is_object())
        fail(field, "must be an object, not " + type_name(e));
      const std::string name = require_string(e, "name", field + ".", true);
      const std::string named = field + " (" + name + ")";
      only_keys(e, {"name", "pipe", "precision", "flop", "peak_tflops", "util_pct"}, named);
      if (!names.insert(name).second)
        fail(named + ".name", "'" + name + "' is listed twice");
      const std::string pipe = require_string(e, "pipe", named + ".", true);
      if (pipe != "simt" && pipe != "tensor")
        fail(named + ".pipe", "must be \"simt\" or \"tensor\", not \"" + pipe + "\"");
      const std::string prec = require_string(e, "precision", named + ".", true);
      if (!kinds.insert(pipe + " " + prec).second)
        fail(named + ".precision", "a second " + pipe + " path of precision " + prec);
      for (const char *k : {"flop", "peak_tflops", "util_pct"}) {
        if (!e.contains(k) && std::string(k) == "util_pct")
          continue;
        const std::string d = require_string(e, k, named + ".", true);
        if (!derived.count(d))
          fail(named + "." + k, "'" + d + "' is not a derived figure of this profile");
      }
    }
    return ps;
  }

private:
  std::string label_;
  std::string path_;
  const KnownMetrics &known_;
};

} // namespace

std::string default_profiles_dir() { return CONVBENCH_PROFILES_DIR; }

KnownMetrics KnownMetrics::parse(const std::string &text, const std::string &source) {
  KnownMetrics k;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos)
      line.erase(hash);
    std::istringstream ls(line);
    std::string base, type, extra;
    if (!(ls >> base))
      continue;
    if (!(ls >> type) || (ls >> extra) ||
        (type != "counter" && type != "ratio" && type != "throughput"))
      throw ProfileError("known metric list " + source + " line " + std::to_string(n) +
                         ": expected '<base name> <counter|ratio|throughput>'");
    k.bases_.emplace_back(base, type);
  }
  if (k.bases_.empty())
    throw ProfileError("known metric list " + source + " names no metric");
  return k;
}

KnownMetrics KnownMetrics::load(const std::string &path) {
  bool ok = false;
  const std::string text = read_file(path, &ok);
  if (!ok)
    throw ProfileError("known metric list " + path + " cannot be read");
  return parse(text, path);
}

bool KnownMetrics::contains_base(const std::string &base) const {
  return std::any_of(bases_.begin(), bases_.end(), [&](const auto &b) { return b.first == base; });
}

std::string KnownMetrics::problem(const std::string &metric) const {
  const auto dot = metric.find('.');
  const std::string base = metric.substr(0, dot);
  auto it =
      std::find_if(bases_.begin(), bases_.end(), [&](const auto &b) { return b.first == base; });
  if (it == bases_.end()) {
    std::string best;
    size_t best_d = 4; // suggest only near misses
    for (const auto &b : bases_) {
      if (size_t d = edit_distance(base, b.first); d < best_d)
        best_d = d, best = b.first;
    }
    return "unknown metric base name '" + base + "' (not in known_metrics.txt" +
           (best.empty() ? "" : "; did you mean '" + best + "'?") + ")";
  }
  const std::string &type = it->second;
  if (dot == std::string::npos)
    return type == "ratio" ? "ratio metric needs a suffix: .pct, .ratio or .max_rate"
                           : "needs a rollup suffix: .sum, .avg, .min or .max";
  const std::string rest = metric.substr(dot + 1);
  if (type == "ratio") {
    if (!kRatioSuffixes.count(rest))
      return "suffix '." + rest + "' does not fit a ratio metric (use .pct, .ratio or .max_rate)";
    return "";
  }
  const auto dot2 = rest.find('.');
  const std::string rollup = rest.substr(0, dot2);
  if (!kRollups.count(rollup))
    return "rollup '." + rollup + "' is not one of .sum, .avg, .min, .max (a " + type + " metric)";
  if (dot2 != std::string::npos && !kSubmetrics.count(rest.substr(dot2 + 1)))
    return "submetric '." + rest.substr(dot2 + 1) + "' is not a known submetric";
  return "";
}

Profile parse_profile(const std::string &text, const std::string &path, const KnownMetrics &known,
                      const std::string &expected_name) {
  std::string label = expected_name;
  if (label.empty()) {
    label = path.substr(path.find_last_of('/') + 1);
    if (label.size() > 5 && label.compare(label.size() - 5, 5, ".json") == 0)
      label.resize(label.size() - 5);
  }
  Validator v(label, path, known);
  return v.run(text, expected_name);
}

Profile load_profile(const std::string &name_or_path, const std::string &dir_in) {
  const std::string dir = dir_in.empty() ? default_profiles_dir() : dir_in;
  const bool by_path = is_path(name_or_path);
  const std::string path = by_path ? name_or_path : dir + "/" + name_or_path + ".json";
  bool ok = false;
  const std::string text = read_file(path, &ok);
  if (!ok) {
    if (by_path)
      throw ProfileError("profile file " + path + " cannot be read");
    throw ProfileError("profile '" + name_or_path + "': no file " + path +
                       " (profiles are <dir>/<name>.json)");
  }
  const KnownMetrics known = KnownMetrics::load(dir + "/known_metrics.txt");
  return parse_profile(text, path, known, by_path ? "" : name_or_path);
}

} // namespace convbench::profiles
