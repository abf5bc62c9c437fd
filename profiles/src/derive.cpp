// Derived figures (pure arithmetic over one capture's metric values) and the analytic count
// checks that give the instrument its teeth.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "convbench/profiles/counters.hpp"

namespace convbench::profiles {
namespace {

using nlohmann::json;

// A value, or why there is none.
struct Value {
  std::optional<double> v;
  std::string why;
};

double scale_of(const json &obj) {
  return obj.contains("scale") ? obj.at("scale").get<double>() : 1.0;
}

// What a derived figure reads besides the metrics.
struct Inputs {
  double best_seconds, flops_hint;
  const DeviceRates &rates;
  const json &rejected; // {metric: why the profiler refused it}
};

Value number_in(const json &metrics, const std::string &name, const json &rejected = json()) {
  if (rejected.is_object() && rejected.contains(name))
    return {std::nullopt,
            "metric " + name + " refused by the profiler: " + rejected.at(name).get<std::string>()};
  if (!metrics.is_object() || !metrics.contains(name))
    return {std::nullopt, "metric " + name + " missing"};
  const json &m = metrics.at(name);
  if (!m.is_number() || !std::isfinite(m.get<double>()))
    return {std::nullopt, "metric " + name + " is not a finite number"};
  return {m.get<double>(), ""};
}

// The profile was validated on load, so every reference resolves; a missing value is a capture
// that did not deliver it.
Value eval_term(const json &t, const json &metrics, const std::map<std::string, Value> &done,
                const Inputs &in) {
  Value x;
  if (t.contains("metric")) {
    x = number_in(metrics, t.at("metric").get<std::string>(), in.rejected);
  } else if (t.contains("device")) {
    const std::string k = t.at("device").get<std::string>();
    auto it = in.rates.find(k);
    if (it != in.rates.end() && std::isfinite(it->second) && it->second > 0)
      x = {it->second, ""};
    else
      x = {std::nullopt, "bench/data/devices.json has no " + k + " for this device"};
  } else if (t.contains("derived")) {
    const std::string n = t.at("derived").get<std::string>();
    auto it = done.find(n);
    x = it == done.end() ? Value{std::nullopt, n + " not computed"} : it->second;
    if (!x.v)
      x.why = n + " is null";
  } else if (t.contains("input")) {
    const std::string n = t.at("input").get<std::string>();
    const double v = n == "best_seconds" ? in.best_seconds : in.flops_hint;
    if (std::isfinite(v))
      x = {v, ""};
    else
      x = {std::nullopt, "input " + n + " is not a finite number"};
  } else {
    x = {t.at("const").get<double>(), ""};
  }
  if (x.v)
    *x.v *= scale_of(t);
  return x;
}

double count(const json &metrics, const char *name, CountCheck &c) {
  Value v = number_in(metrics, name);
  if (!v.v) {
    c.ok = false;
    c.failures.push_back(v.why + " from the counters block");
    return NAN;
  }
  return *v.v;
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(15);
  s << v;
  return s.str();
}

void expect_near(CountCheck &c, const char *what, double got, double want, double tol) {
  if (std::isnan(got))
    return; // already reported as missing
  if (std::fabs(got - want) > tol) {
    c.ok = false;
    c.failures.push_back(std::string(what) + " = " + fmt(got) + ", expected " + fmt(want) +
                         (tol > 0 ? " +- " + fmt(tol) : "") + " (off by " + fmt(got - want) + ")");
  }
}

} // namespace

json derive(const Profile &p, const json &metrics, double best_seconds, double flops_hint,
            const DeviceRates &rates, const json &rejected) {
  json out = json::object();
  json unavailable = json::object();
  std::map<std::string, Value> done;
  const Inputs in{best_seconds, flops_hint, rates, rejected};
  for (const json &d : p.derived) {
    const std::string name = d.at("name").get<std::string>();
    Value r;
    auto eval = [&](const json &t) { return eval_term(t, metrics, done, in); };
    if (d.contains("sum") || d.contains("product")) {
      const bool sum = d.contains("sum");
      double acc = sum ? 0.0 : 1.0;
      r.v = 0.0;
      for (const json &t : d.at(sum ? "sum" : "product")) {
        Value x = eval(t);
        if (!x.v) {
          r = x;
          break;
        }
        acc = sum ? acc + *x.v : acc * *x.v;
      }
      if (r.v)
        r.v = acc;
    } else {
      Value num = eval(d.at("ratio").at("num"));
      Value den = eval(d.at("ratio").at("den"));
      if (!num.v)
        r = num;
      else if (!den.v)
        r = den;
      else if (*den.v == 0.0)
        r = {std::nullopt, "division by zero"};
      else
        r = {*num.v / *den.v, ""};
    }
    if (r.v)
      *r.v *= scale_of(d);
    done[name] = r;
    if (r.v) {
      out[name] = *r.v;
    } else {
      out[name] = nullptr;
      unavailable[name] = r.why;
    }
  }
  if (!unavailable.empty())
    out["unavailable"] = unavailable;
  return out;
}

json derived_units(const Profile &p) {
  json u = json::object();
  for (const json &d : p.derived)
    u[d.at("name").get<std::string>()] = d.at("unit");
  return u;
}

json evaluate_paths(const Profile &p, const json &derived, double best_seconds) {
  const json why = derived.value("unavailable", json::object());
  auto figure = [&](const json &path, const char *key, json &unavailable) -> json {
    if (!path.contains(key))
      return nullptr;
    const std::string n = path.at(key).get<std::string>();
    if (derived.contains(n) && derived.at(n).is_number())
      return derived.at(n);
    unavailable[key] = why.value(n, n + " not derived");
    return nullptr;
  };
  json out = json::array();
  double total = 0.0;
  for (const json &path : p.paths) {
    json unavailable = json::object();
    json e = {
        {"name", path.at("name")}, {"pipe", path.at("pipe")}, {"precision", path.at("precision")}};
    e["flop"] = figure(path, "flop", unavailable);
    e["peak_tflops"] = figure(path, "peak_tflops", unavailable);
    e["util_pct"] = figure(path, "util_pct", unavailable);
    e["tflops"] = nullptr;
    if (e["flop"].is_number() && std::isfinite(best_seconds) && best_seconds > 0)
      e["tflops"] = e["flop"].get<double>() / best_seconds * 1e-12;
    else if (e["flop"].is_number())
      unavailable["tflops"] = "no event-timed best time";
    e["pct_of_peak"] = nullptr;
    if (e["tflops"].is_number() && e["peak_tflops"].is_number() &&
        e["peak_tflops"].get<double>() > 0)
      e["pct_of_peak"] = 100.0 * e["tflops"].get<double>() / e["peak_tflops"].get<double>();
    if (e["flop"].is_number())
      total += e["flop"].get<double>();
    if (!unavailable.empty())
      e["unavailable"] = unavailable;
    out.push_back(e);
  }
  for (json &e : out)
    e["share_pct"] = e["flop"].is_number() && total > 0
                         ? json(100.0 * e["flop"].get<double>() / total)
                         : json(nullptr);
  return out;
}

CountCheck check_tensor_work(const Profile &p, const json &derived, const std::string &precision,
                             double expected_macs) {
  CountCheck c;
  const bool found = std::any_of(p.paths.begin(), p.paths.end(), [&](const json &path) {
    return path.at("pipe") == "tensor" && path.at("precision") == precision;
  });
  for (const json &path : p.paths) {
    if (path.at("pipe") != "tensor")
      continue;
    const std::string prec = path.at("precision").get<std::string>();
    const std::string fig = path.at("flop").get<std::string>();
    const std::string what = prec + " tensor FLOP (" + fig + ")";
    if (!derived.contains(fig) || !derived.at(fig).is_number()) {
      if (prec != precision)
        continue; // another precision's figure missing: nothing to hold this kernel to there
      c.ok = false;
      const json why = derived.value("unavailable", json::object());
      c.failures.push_back(what + " not counted: " + why.value(fig, std::string("missing")));
      continue;
    }
    const double got = derived.at(fig).get<double>();
    // Exact: every count is an integer number of MMAs' work, far below 2^53.
    const double want = prec == precision ? 2.0 * expected_macs : 0.0;
    expect_near(c, what.c_str(), got, want, 0.0);
  }
  if (!found) {
    c.ok = false;
    c.failures.push_back("the profile '" + p.name + "' has no tensor path of precision " +
                         precision);
  }
  return c;
}

std::string CountCheck::summary() const {
  if (ok)
    return "ok";
  std::string s;
  for (const auto &f : failures)
    s += (s.empty() ? "" : "; ") + f;
  return s;
}

CountCheck check_fp64_nofma(const json &metrics, double expected_dmul, double expected_dadd,
                            double tolerance_cells) {
  CountCheck c;
  const double dfma = count(metrics, metric::dfma, c);
  const double dmul = count(metrics, metric::dmul, c);
  const double dadd = count(metrics, metric::dadd, c);
  // Zero means zero: one contracted multiply-add is the fault this check exists to catch.
  expect_near(c, "DFMA", dfma, 0.0, 0.0);
  expect_near(c, "DMUL", dmul, expected_dmul, tolerance_cells);
  expect_near(c, "DADD", dadd, expected_dadd, tolerance_cells);
  return c;
}

CountCheck check_no_fp64(const json &metrics) {
  CountCheck c;
  const double dadd = count(metrics, metric::dadd, c);
  const double dmul = count(metrics, metric::dmul, c);
  const double dfma = count(metrics, metric::dfma, c);
  expect_near(c, "DADD", dadd, 0.0, 0.0);
  expect_near(c, "DMUL", dmul, 0.0, 0.0);
  expect_near(c, "DFMA", dfma, 0.0, 0.0);
  const double f32 = count(metrics, metric::fadd, c) + count(metrics, metric::fmul, c) +
                     count(metrics, metric::ffma, c);
  if (!std::isnan(f32) && f32 <= 0) {
    c.ok = false;
    c.failures.push_back("no fp32 instruction at all (FADD + FMUL + FFMA = 0): did the work run?");
  }
  return c;
}

CountCheck check_f32_fma_only(const json &metrics, double expected_ffma) {
  CountCheck c;
  expect_near(c, "FFMA", count(metrics, metric::ffma, c), expected_ffma, 0.0);
  expect_near(c, "FADD", count(metrics, metric::fadd, c), 0.0, 0.0);
  expect_near(c, "FMUL", count(metrics, metric::fmul, c), 0.0, 0.0);
  expect_near(c, "DADD", count(metrics, metric::dadd, c), 0.0, 0.0);
  expect_near(c, "DMUL", count(metrics, metric::dmul, c), 0.0, 0.0);
  expect_near(c, "DFMA", count(metrics, metric::dfma, c), 0.0, 0.0);
  return c;
}

} // namespace convbench::profiles
