#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

namespace convbench::bench {

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 1.0)
    snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3)
    snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

namespace {
struct Row {
  std::vector<std::string> cells;
};

std::string render(const std::vector<std::string> &head, const std::vector<Row> &rows) {
  std::vector<size_t> w(head.size());
  for (size_t i = 0; i < head.size(); ++i)
    w[i] = head[i].size();
  for (const auto &r : rows)
    for (size_t i = 0; i < r.cells.size() && i < w.size(); ++i)
      w[i] = std::max(w[i], r.cells[i].size());
  std::ostringstream out;
  auto line = [&](const std::vector<std::string> &cells) {
    std::string s;
    for (size_t i = 0; i < cells.size(); ++i) {
      std::string c = cells[i];
      // Text left, numbers right.
      bool right = i >= 4;
      std::string pad(w[i] > c.size() ? w[i] - c.size() : 0, ' ');
      s += right ? pad + c : c + pad;
      if (i + 1 < cells.size())
        s += "  ";
    }
    while (!s.empty() && s.back() == ' ')
      s.pop_back();
    out << s << "\n";
  };
  line(head);
  for (const auto &r : rows)
    line(r.cells);
  return out.str();
}

std::string fmt(const char *f, double v) {
  char buf[32];
  snprintf(buf, sizeof buf, f, v);
  return buf;
}
} // namespace

std::string format_table(const nlohmann::json &cases) {
  std::vector<std::string> head{"stage",  "frames",   "arm",     "staging",   "best",
                                "median", "spread %", "GFLOP/s", "% of floor"};
  std::vector<Row> rows;
  // best per (stage, frames, arm, staging), for the chain sums
  std::map<std::string, double> best;
  for (const auto &c : cases) {
    Row r;
    r.cells = {c["stage"].get<std::string>(), std::to_string(c["frames"].get<long long>()),
               c["arm"].get<std::string>(), c["staging"].get<std::string>()};
    if (c["gate"]["result"] != "pass") {
      std::string why = "GATE FAILED: " + std::to_string(c["gate"]["mismatches"].get<long long>()) +
                        " cells differ, max abs err ";
      why += c["gate"]["max_abs_err"].is_number()
                 ? fmt("%.3g", c["gate"]["max_abs_err"].get<double>())
                 : std::string("non-finite");
      r.cells.push_back(why);
      rows.push_back(r);
      continue;
    }
    const auto &st = c["stats"];
    double b = st["best"].get<double>();
    best[c["stage"].get<std::string>() + "/" + std::to_string(c["frames"].get<long long>()) + "/" +
         c["arm"].get<std::string>() + "/" + c["staging"].get<std::string>()] = b;
    r.cells.push_back(format_seconds(b));
    r.cells.push_back(format_seconds(st["median"].get<double>()));
    r.cells.push_back(fmt("%.1f", (st["spread"].get<double>() - 1.0) * 100.0));
    r.cells.push_back(fmt("%.1f", c["flops"].get<double>() / b / 1e9));
    if (c["floor_s"].is_object())
      r.cells.push_back(fmt("%.1f", c["floor_s"]["arm"].get<double>() / b * 100.0));
    else
      r.cells.push_back("-");
    rows.push_back(r);
  }
  std::string out = render(head, rows);
  // Chain versus its stages run alone: the sum is what calling the stages one by one costs.
  std::vector<Row> sums;
  for (const auto &c : cases) {
    if ((c["stage"] != "chain" && c["stage"] != "generator") || c["gate"]["result"] != "pass")
      continue;
    std::string tail = "/"; // appended, not "/" + ...: GCC 12 -Wrestrict false positive (105329)
    tail.append(std::to_string(c["frames"].get<long long>()))
        .append("/")
        .append(c["arm"].get<std::string>())
        .append("/")
        .append(c["staging"].get<std::string>());
    double sum = 0;
    bool all = true;
    std::string first, last;
    for (const auto &s : c["shape"]["stages"]) {
      std::string name = s["stage"].get<std::string>();
      if (first.empty())
        first = name;
      last = name;
      auto it = best.find(name + tail);
      if (it == best.end()) {
        all = false;
        break;
      }
      sum += it->second;
    }
    if (!all)
      continue;
    double chain = c["stats"]["best"].get<double>();
    sums.push_back(
        {{"sum(" + first + ".." + last + ")", std::to_string(c["frames"].get<long long>()),
          c["arm"].get<std::string>(), c["staging"].get<std::string>(), format_seconds(sum),
          format_seconds(chain), fmt("%.3f", chain / sum)}});
  }
  if (!sums.empty())
    out += "\nsum of the per-stage bests (the stages run alone) next to the chain's best:\n" +
           render({"stages", "frames", "arm", "staging", "sum of bests", "chain best", "chain/sum"},
                  sums);
  return out;
}

nlohmann::json benchmarks_view(const nlohmann::json &cases, int reps) {
  nlohmann::json out = nlohmann::json::array();
  int family = 0;
  for (const auto &c : cases) {
    if (c["samples"].empty())
      continue;
    std::string id = c["id"].get<std::string>();
    auto base = [&](const std::string &name) {
      return nlohmann::json{
          {"name", name},     {"family_index", family}, {"per_family_instance_index", 0},
          {"run_name", id},   {"repetitions", reps},    {"threads", 1},
          {"time_unit", "us"}};
    };
    std::vector<double> us;
    for (const auto &s : c["samples"]) {
      auto e = base(id);
      e["run_type"] = "iteration";
      e["repetition_index"] = s["round"];
      e["iterations"] = s["iterations"];
      double t = s["seconds"].get<double>() * 1e6;
      e["real_time"] = t;
      e["cpu_time"] = t;
      us.push_back(t);
      out.push_back(e);
    }
    double n = double(us.size()), mean = 0;
    for (double t : us)
      mean += t / n;
    std::vector<double> sorted = us;
    std::sort(sorted.begin(), sorted.end());
    size_t m = sorted.size() / 2;
    double median = sorted.size() % 2 ? sorted[m] : 0.5 * (sorted[m - 1] + sorted[m]);
    double ss = 0;
    for (double t : us)
      ss += (t - mean) * (t - mean);
    double sd = us.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
    auto agg = [&](const char *name, double v, const char *unit) {
      auto e = base(id + "_" + name);
      e["run_type"] = "aggregate";
      e["aggregate_name"] = name;
      e["aggregate_unit"] = unit;
      e["iterations"] = us.size();
      e["real_time"] = v;
      e["cpu_time"] = v;
      out.push_back(e);
    };
    agg("mean", mean, "time");
    agg("median", median, "time");
    agg("stddev", sd, "time");
    agg("cv", mean > 0 ? sd / mean : 0.0, "percentage");
    ++family;
  }
  return out;
}

} // namespace convbench::bench
