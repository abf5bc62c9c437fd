#include "record/report.hpp"

#include "core/stats.hpp"
#include "plan/floors.hpp"

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
      bool right = i >= 4 && head[i] != "precision";
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

std::string format_table(const std::vector<Case> &cases,
                         const std::optional<DeviceFloors> &floors) {
  // "+-95% median": the half-width of the median's order-statistic interval (the stopping
  // rule's); "precision": whether it reached the case's target, and if not, by how much it is
  // short. Spread is not a verdict: the analysis states every ratio with its interval.
  std::vector<std::string> head{"stage",  "frames",    "arm",     "staging", "best",
                                "median", "+-95% med", "GFLOP/s", "% floor", "precision"};
  std::vector<Row> rows;
  std::map<std::string, double> best; // per stage/frames/arm/staging, for the chain sums
  auto key = [](const std::string &stage, const Case &c) {
    return stage + "/" + std::to_string(c.problem->frames) + "/" + c.arm->name() + "/" + c.staging;
  };
  for (const auto &c : cases) {
    Row r;
    r.cells = {c.problem->stage, std::to_string(c.problem->frames), c.arm->name(), c.staging};
    if (!c.gate.pass) {
      r.cells.push_back("GATE FAILED: " + std::to_string(c.gate.mismatches) +
                        " cells differ, max abs err " +
                        (std::isfinite(c.gate.max_abs_err) ? fmt("%.3g", c.gate.max_abs_err)
                                                           : std::string("non-finite")));
      rows.push_back(r);
      continue;
    }
    if (c.samples.empty()) {
      r.cells.push_back("no sample taken");
      rows.push_back(r);
      continue;
    }
    const Stats st = compute_stats(c.seconds());
    best[key(c.problem->stage, c)] = st.best;
    r.cells.push_back(format_seconds(st.best));
    r.cells.push_back(format_seconds(st.median));
    const auto &hw = c.stop.half_width;
    r.cells.push_back(hw ? fmt("%.2f%%", *hw * 100.0) : "-");
    r.cells.push_back(fmt("%.1f", c.problem->flops() / st.best / 1e9));
    const auto floor = case_floor(c, floors);
    r.cells.push_back(floor ? fmt("%.1f", floor->arm / st.best * 100.0) : "-");
    const double target = c.stop.target;
    if (target <= 0)
      r.cells.push_back(hw ? "fixed count" : "fixed count, no interval");
    else if (hw && *hw <= target)
      r.cells.push_back("ok");
    else
      r.cells.push_back("imprecise (target " + fmt("%.2g%%", target * 100.0) + ")");
    rows.push_back(r);
  }
  std::string out = render(head, rows);
  // Chain versus its stages run alone: the sum is what calling the stages one by one costs.
  std::vector<Row> sums;
  for (const auto &c : cases) {
    if ((c.problem->stage != "chain" && c.problem->stage != "generator") || !c.gate.pass ||
        c.samples.empty())
      continue;
    double sum = 0;
    bool all = true;
    for (const auto &name : c.problem->stage_names) {
      auto it = best.find(key(name, c));
      if (it == best.end()) {
        all = false;
        break;
      }
      sum += it->second;
    }
    if (!all)
      continue;
    const double chain = compute_stats(c.seconds()).best;
    sums.push_back(
        {{"sum(" + c.problem->stage_names.front() + ".." + c.problem->stage_names.back() + ")",
          std::to_string(c.problem->frames), c.arm->name(), c.staging, format_seconds(sum),
          format_seconds(chain), fmt("%.3f", chain / sum)}});
  }
  if (!sums.empty())
    out += "\nsum of the per-stage bests (the stages run alone) next to the chain's best:\n" +
           render({"stages", "frames", "arm", "staging", "sum of bests", "chain best", "chain/sum"},
                  sums);
  return out;
}

} // namespace convbench::bench
