// Derived figures (pure arithmetic over one capture's metric values) and the analytic count
// checks that give the instrument its teeth.
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

Value number_in(const json &metrics, const std::string &name) {
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
                double best_seconds, double flops_hint) {
  Value x;
  if (t.contains("metric")) {
    x = number_in(metrics, t.at("metric").get<std::string>());
  } else if (t.contains("derived")) {
    const std::string n = t.at("derived").get<std::string>();
    auto it = done.find(n);
    x = it == done.end() ? Value{std::nullopt, n + " not computed"} : it->second;
    if (!x.v)
      x.why = n + " is null";
  } else if (t.contains("input")) {
    const std::string n = t.at("input").get<std::string>();
    const double v = n == "best_seconds" ? best_seconds : flops_hint;
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

json derive(const Profile &p, const json &metrics, double best_seconds, double flops_hint) {
  json out = json::object();
  json unavailable = json::object();
  std::map<std::string, Value> done;
  for (const json &d : p.derived) {
    const std::string name = d.at("name").get<std::string>();
    Value r;
    auto eval = [&](const json &t) {
      return eval_term(t, metrics, done, best_seconds, flops_hint);
    };
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
