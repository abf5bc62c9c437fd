#include "plan/dry_run.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "probes/sysinfo.hpp"

namespace convbench::bench {

namespace {
// Conservative rates of this project's host arms per thread, not measured by the dry run (it
// computes nothing): the estimate is an order of magnitude, said as such.
constexpr double kHostF64FlopsPerThread = 4e9, kHostF32FlopsPerThread = 16e9;
constexpr double kDevicePrepareS = 0.5, kSpeedCalibrationS = 1.0;

std::string bytes_text(double b) {
  char buf[32];
  if (b >= double(1ull << 30))
    snprintf(buf, sizeof buf, "%.2f GiB", b / double(1ull << 30));
  else if (b >= double(1ull << 20))
    snprintf(buf, sizeof buf, "%.1f MiB", b / double(1ull << 20));
  else if (b >= 1024)
    snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else
    snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

// One call of a case, in seconds: a host arm at the rates above, a device arm as nothing.
double call_seconds(const Case &c, int threads) {
  if (c.arm->device())
    return 0;
  const bool f64 = c.arm->name().find("f64") != std::string::npos;
  return c.problem->flops() /
         ((f64 ? kHostF64FlopsPerThread : kHostF32FlopsPerThread) * std::max(threads, 1));
}

// Each case's host bytes: its own outputs plus an equal share of its problem's (inputs, weights,
// the reference), so that the column sums to what the memory check counts.
std::map<const Case *, double> host_shares(const Plan &p) {
  std::map<const Problem *, int> per_problem;
  for (const auto &c : p.cases)
    ++per_problem[c.problem];
  std::map<const Case *, double> out;
  for (const auto &c : p.cases)
    out[&c] = case_host_bytes(c) + problem_host_bytes(*c.problem) / per_problem[c.problem];
  return out;
}

// `text` in lines of at most 100 columns, the later ones indented by two.
std::string wrapped(const std::string &text) {
  std::string out, line;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string::npos)
      end = text.size();
    const std::string word = text.substr(at, end - at);
    if (!line.empty() && line.size() + 1 + word.size() > 100) {
      out += line + "\n";
      line = "  ";
    }
    line += (line.empty() || line == "  " ? "" : " ") + word;
    at = end + 1;
  }
  return out + line + "\n";
}

bool any_causal(const Plan &p) {
  return std::any_of(p.problems.begin(), p.problems.end(),
                     [](auto &pr) { return bool(pr->causal); });
}
bool all_causal(const Plan &p) {
  return std::all_of(p.problems.begin(), p.problems.end(),
                     [](auto &pr) { return bool(pr->causal); });
}
} // namespace

TimeEstimate estimate_time(const Plan &p) {
  TimeEstimate t;
  double round = 0;
  for (const auto &c : p.cases) {
    const double call = call_seconds(c, p.threads);
    round += std::max(p.opt.min_time, call) + call; // Google Benchmark's first call calibrates
    if (c.arm != &reference_arm()) // the reference's output is computed once per problem
      t.gate_s += call + (c.arm->device() ? kDevicePrepareS : 0);
  }
  for (const auto &pr : p.problems) // the reference, once per problem, at the f64 rate
    t.gate_s += pr->flops() / (kHostF64FlopsPerThread * std::max(p.threads, 1));
  t.gate_s += kSpeedCalibrationS;
  const bool fixed = p.opt.target_ci_percent && *p.opt.target_ci_percent == 0;
  const double at_least = p.opt.reps * round;
  char buf[512];
  if (fixed) {
    t.rounds_s = at_least;
    snprintf(buf, sizeof buf, "rounds: --reps %d rounds of one sample per case", p.opt.reps);
  } else {
    t.rounds_s = std::max(at_least, std::min(p.opt.max_time + round, p.opt.max_rounds * round));
    snprintf(buf, sizeof buf,
             "rounds: at most the --max-time budget (%g s) and the round under way; less when "
             "every case's interval reaches its target sooner, more when --reps %d rounds take "
             "longer",
             p.opt.max_time, p.opt.reps);
  }
  t.how = std::string(buf) +
          "; a sample: max(--min-time, one call) plus the call Google Benchmark calibrates "
          "with; gate and preparation: each case's call once (host arms at ~4 GFLOP/s in f64, "
          "~16 in f32 per thread, not measured), 0.5 s per device case, 1 s for the CPU speed "
          "calibration";
  return t;
}

namespace {
// The dry run's facts, once: the JSON view prints them as they are, the text view from them.
nlohmann::json dry_run_json(const Plan &p) {
  using nlohmann::json;
  const auto host = host_shares(p);
  const double ram = physical_memory_bytes();
  const TimeEstimate t = estimate_time(p);
  const std::string refusal = memory_refusal(p);
  json cases = json::array();
  for (const auto &c : p.cases)
    cases.push_back({{"id", c.id},
                     {"stage", c.problem->stage},
                     {c.problem->causal ? "length" : "frames", c.problem->frames},
                     {"arm", c.arm->name()},
                     {"staging", c.staging},
                     {"twin_of", c.twin_of.empty() ? json() : json(c.twin_of)},
                     {"host_bytes", host.at(&c)},
                     {"device_bytes", c.arm->device_bytes(*c.problem, c.staging)}});
  return {{"model", p.model.name},
          {"host_threads", p.threads},
          {"pinned", p.placement.pinned},
          {"cases", cases},
          {"memory",
           {{"host_bytes", host_bytes_needed(p)},
            {"host_limit_bytes", ram > 0 ? json(0.5 * ram) : json()},
            {"device_bytes", device_bytes_needed(p)},
            {"refused", refusal.empty() ? json() : json(refusal)}}},
          {"time",
           {{"rounds_s", t.rounds_s},
            {"gate_s", t.gate_s},
            {"total_s", t.rounds_s + t.gate_s},
            {"how", t.how}}}};
}

void write_text(const nlohmann::json &j, const char *length_head, std::ostream &out) {
  out << "dry run: the plan of " << j["model"].get<std::string>() << ", " << j["cases"].size()
      << " cases, " << j["host_threads"] << (j["pinned"].get<bool>() ? " pinned" : "")
      << " host threads; no lease, no GPU, no record\n";
  std::vector<std::vector<std::string>> rows{
      {"stage", length_head, "arm", "staging", "twin of", "host", "device"}};
  for (const auto &c : j["cases"]) {
    const std::string twin = c["twin_of"].is_null() ? "-" : c["twin_of"].get<std::string>();
    rows.push_back({c["stage"], std::to_string(c.value("frames", c.value("length", 0))), c["arm"],
                    c["staging"],
                    twin == "-" ? twin : twin.substr(twin.find('/', twin.find('/') + 1) + 1),
                    bytes_text(c["host_bytes"]), bytes_text(c["device_bytes"])});
  }
  std::vector<size_t> w(rows[0].size());
  for (const auto &r : rows)
    for (size_t i = 0; i < r.size(); ++i)
      w[i] = std::max(w[i], r[i].size());
  for (const auto &r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      const std::string pad(w[i] - r[i].size(), ' ');
      line += (i >= 5 ? pad + r[i] : r[i] + pad) + (i + 1 < r.size() ? "  " : "");
    }
    out << line << "\n";
  }
  const auto &m = j["memory"];
  const std::string limit =
      m["host_limit_bytes"].is_null()
          ? ""
          : " of the " + bytes_text(m["host_limit_bytes"]) + " allowed (half of RAM)";
  out << wrapped("memory: host " + bytes_text(m["host_bytes"]) + limit + ", device " +
                 bytes_text(m["device_bytes"]) +
                 " (a case's host bytes: its outputs and an equal share of its problem's inputs, "
                 "weights and reference)");
  const auto &t = j["time"];
  char buf[128];
  snprintf(buf, sizeof buf, "time: about %.0f s: %.0f s of rounds, %.0f s of gate and preparation",
           t["total_s"].get<double>(), t["rounds_s"].get<double>(), t["gate_s"].get<double>());
  out << wrapped(std::string(buf) + " (" + t["how"].get<std::string>() + ")");
}
} // namespace

int write_dry_run(const Plan &p, std::ostream &out) {
  const nlohmann::json j = dry_run_json(p);
  if (p.opt.json)
    out << j.dump(2) << "\n";
  else
    write_text(j, all_causal(p) ? "L" : any_causal(p) ? "frames|L" : "frames", out);
  if (j["memory"]["refused"].is_null())
    return 0;
  std::cerr << "bench_conv: refused: " << j["memory"]["refused"].get<std::string>() << "\n";
  return 2;
}

} // namespace convbench::bench
