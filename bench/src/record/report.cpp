#include "record/report.hpp"

#include "core/stats.hpp"
#include "plan/floors.hpp"
#include "probes/gpu_probe.hpp"

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
      bool right = i >= 4 && head[i] != "verdict";
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

namespace {
std::string percent(double fraction) { return fmt("%.2g%%", fraction * 100.0); }

// A time in four significant digits, so that the table keeps within 100 columns: 160.1 ms, 47.37
// ms, 8.217 ms, 1.053 s (the interval's width is said beside it, and it is never that small).
std::string time_cell(double s) {
  const char *unit = s >= 1 ? "s" : s >= 1e-3 ? "ms" : "us";
  const double v = s >= 1 ? s : s >= 1e-3 ? s * 1e3 : s * 1e6;
  return fmt(v >= 100 ? "%.1f " : v >= 10 ? "%.2f " : "%.3f ", v) + unit;
}

// A foreign process on the GPU during a sample: the analysis refuses the case for it (foreign-gpu).
std::string foreign_gpu(const Case &c) {
  int most = 0, round = -1;
  for (const auto &s : c.samples) {
    if (!s.device)
      continue;
    const int n = std::max(foreign_processes_of(s.gpu_before), foreign_processes_of(s.gpu_after));
    if (n > most) {
      most = n;
      round = s.round;
    }
  }
  if (most == 0)
    return "";
  return "refused: foreign-gpu (" + std::to_string(most) + " process" + (most > 1 ? "es" : "") +
         ", round " + std::to_string(round) + ")";
}
} // namespace

std::string case_verdict(const Case &c) {
  if (!c.gate.pass && c.gate.kind == GateKind::self) // bytes or words, no values
    return "refused: gate-failed (" + std::to_string(c.gate.mismatches) + " of " +
           std::to_string(c.gate.cells) + " checked differ)";
  if (!c.gate.pass)
    return "refused: gate-failed (" + std::to_string(c.gate.mismatches) +
           " cells differ, max err " +
           (std::isfinite(c.gate.max_abs_err) ? fmt("%.3g", c.gate.max_abs_err)
                                              : std::string("non-finite")) +
           ")";
  if (c.samples.empty())
    return "refused: cut-short (never timed)";
  if (const std::string why = foreign_gpu(c); !why.empty())
    return why;
  const auto &hw = c.stop.half_width;
  const double target = c.stop.target;
  if (target <= 0)
    return "ok (fixed count)";
  if (hw && *hw <= target)
    return "ok";
  const std::string tail = c.cut_short ? ", cut short" : "";
  if (!hw)
    return "imprecise: no interval yet (" + std::to_string(c.samples.size()) + " rounds < 6)" +
           tail;
  return "imprecise: +-" + fmt("%.2f%%", *hw * 100.0) + " > " + percent(target) + tail;
}

std::string twin_lines(const std::vector<Case> &cases) {
  std::string out;
  for (const auto &t : cases) {
    if (t.twin_of.empty() || t.samples.empty())
      continue;
    const Case *arm = nullptr;
    for (const auto &c : cases)
      if (c.id == t.twin_of)
        arm = &c;
    if (!arm || arm->samples.empty())
      continue;
    const double a = arm->stop.interval.median, b = t.stop.interval.median;
    if (!(a > 0))
      continue;
    const std::string off = fmt("%+.2f%%", (b / a - 1) * 100.0);
    // The two medians each carry an interval; their difference is judged against the two
    // half-widths combined (independent errors add in quadrature). The analysis judges the pair
    // itself, paired round by round (aa-unstable).
    std::string where;
    if (!arm->stop.half_width || !t.stop.half_width) {
      where = "no interval to hold it (fewer than 6 rounds)";
    } else {
      const double h = std::hypot(*arm->stop.half_width, *t.stop.half_width);
      const bool within = std::fabs(b / a - 1) <= h;
      where = std::string(within ? "within" : "BEYOND") + " the two medians' combined +-" +
              fmt("%.2f%%", h * 100.0) +
              (within ? "" : ": the report judges the pair round by round (aa-unstable)");
    }
    const std::string twin_id = t.id.substr(0, t.id.find('/', t.id.find('/') + 1));
    out += "A/A " + twin_id + " " + t.arm->name() + "/" + t.staging + ": median " + off + " from " +
           arm->arm->name() + "'s, " + where + "\n";
  }
  return out;
}

std::string format_table(const std::vector<Case> &cases,
                         const std::optional<DeviceFloors> &floors) {
  // "+-95% med": the half-width of the median's order-statistic interval (the stopping rule's);
  // "verdict": the case's own verdict in the analysis' words: ok, imprecise (the interval short of
  // its target), refused for a cause the run saw itself (a failed gate, a foreign GPU process).
  // Spread alone is not a refusal: the analysis states every ratio with its interval.
  bool causal = false, conv = false, any_floor = false;
  for (const auto &c : cases) {
    (c.problem->causal ? causal : conv) = true;
    any_floor = any_floor || (case_floor(c, floors) && !c.samples.empty());
  }
  std::vector<std::string> head{"stage",     causal ? (conv ? "frames|L" : "L") : "frames",
                                "arm",       "staging",
                                "best",      "median",
                                "+-95% med", "GFLOP/s"};
  if (any_floor)
    head.push_back("% floor");
  head.push_back("verdict");
  std::vector<Row> rows;
  std::map<std::string, double> best; // per stage/frames/arm/staging, for the chain sums
  auto key = [](const std::string &stage, const Case &c) {
    return stage + "/" + std::to_string(c.problem->frames) + "/" + c.arm->name() + "/" + c.staging;
  };
  for (const auto &c : cases) {
    Row r;
    r.cells = {c.problem->stage, std::to_string(c.problem->frames), c.arm->name(), c.staging};
    if (c.samples.empty() || !c.gate.pass) {
      while (r.cells.size() + 1 < head.size())
        r.cells.push_back("-");
      r.cells.push_back(case_verdict(c));
      rows.push_back(r);
      continue;
    }
    const Stats st = compute_stats(c.seconds());
    best[key(c.problem->stage, c)] = st.best;
    r.cells.push_back(time_cell(st.best));
    r.cells.push_back(time_cell(st.median));
    const auto &hw = c.stop.half_width;
    r.cells.push_back(hw ? fmt("%.2f%%", *hw * 100.0) : "-");
    r.cells.push_back(fmt("%.1f", c.problem->flops() / st.best / 1e9));
    const auto floor = case_floor(c, floors);
    if (any_floor)
      r.cells.push_back(floor ? fmt("%.1f", floor->arm / st.best * 100.0) : "-");
    r.cells.push_back(case_verdict(c));
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
