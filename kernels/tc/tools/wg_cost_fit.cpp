// wg_cost_fit: the wgmma plan's fitted terms (cost_model::WgFit) against a tile sweep's records
// (bench_conv --arms 'cuda-tf32,cuda-tf32@*' / 'cuda-f32x3,cuda-f32x3@*', scripts/device/steps/
// tune.sh). For each (stage shape, math) of the records, every forced variant with a passing gate
// and samples is a measured point (its best round); the plan under a set of terms picks the
// variant of least modelled cost among them; the loss of the set is the sum over cases of
// log(picked's time / best variant's time). Prints the committed terms' picks and loss, then the
// best sets of a grid around them, so that the constants in cost_model.hpp are the tool's output,
// not a hand edit. The device's facts come from the record (SMs, SM clock, memory clock; the bus
// width from --bus-bits). Exit 2 on a bad record or option, 1 with --check when the committed
// terms' pick is more than --tolerance slower than the best variant on any case.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "convbench/shape_json.hpp"
#include "wg_plan.hpp"

namespace {

using convbench::ConvShape;
using convbench::DeviceFacts;
using namespace convbench::tc::wg;
using convbench::tc::cost_model::WgFit;

struct Point {
  Forced forced;
  std::string variant;
  double seconds;
};
struct Case {
  ConvShape shape;
  Math math;
  std::string name; // stage/frames math
  DeviceFacts device;
  std::vector<Point> points;
};

struct BadInput {
  std::string what;
};

DeviceFacts device_of(const nlohmann::json &run, int bus_bits) {
  const auto &g = run.at("gpus").at(0);
  const double sm_hz = g.at("sm_clock_max_mhz").get<double>() * 1e6;
  const double mem_hz = g.at("mem_clock_max_mhz").get<double>() * 1e6;
  return {g.at("sm_count").get<int>(), sm_hz,
          convbench::kSustainedDramShare * 2.0 * mem_hz * bus_bits / 8.0,
          convbench::kPlanningDevice.smem_per_sm};
}

// Reads one record's tile-arm cases into `cases` (keyed by stage, frames and math).
void read_record(const std::string &path, int bus_bits, std::map<std::string, Case> &cases) {
  std::ifstream in(path);
  if (!in)
    throw BadInput{path + ": cannot be read"};
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(in);
    const DeviceFacts device = device_of(run, bus_bits);
    static const std::regex arm(R"(^cuda-(tf32|f32x3)@(rows|pos)-n(\d+)-([sg])(\d+)$)");
    for (const auto &c : run.at("cases")) {
      std::smatch m;
      const std::string name = c.at("arm");
      if (!std::regex_match(name, m, arm) || c.value("staging", "") != "resident" ||
          c.at("gate").value("result", "") != "pass" || c.at("samples").empty())
        continue;
      double best = INFINITY;
      for (const auto &s : c.at("samples"))
        best = std::min(best, s.at("seconds").get<double>());
      const Math math = m[1] == "f32x3" ? Math::f32x3 : Math::tf32;
      const std::string key = c.at("stage").get<std::string>() + "/" +
                              std::to_string(c.at("frames").get<int64_t>()) + " " +
                              std::string(m[1]);
      Case &k = cases[key];
      k.shape = convbench::shape_from_json(c.at("shape"));
      k.math = math;
      k.name = key;
      k.device = device;
      Forced f;
      f.along = m[2] == "rows" ? 1 : 2;
      f.n = std::stoi(m[3]);
      (m[4] == "s" ? f.split : f.gpb) = std::stoi(m[5]);
      k.points.push_back({f,
                          std::string(m[2]) + "-n" + std::string(m[3]) + "-" + std::string(m[4]) +
                              std::string(m[5]),
                          best});
    }
  } catch (const nlohmann::json::exception &e) {
    throw BadInput{path + ": not a bench_conv record with tile arms (" + e.what() + ")"};
  } catch (const convbench::ShapeError &e) {
    throw BadInput{path + ": a case's shape is invalid (" + e.what() + ")"};
  }
}

// The measured point the plan picks under `fit`: the least modelled cost among the variants the
// sweep timed (a variant the shape does not take exactly is left out).
const Point *pick(const Case &c, const WgFit &fit) {
  const Point *best = nullptr;
  double best_cost = INFINITY;
  for (const Point &p : c.points) {
    Forced f = p.forced;
    f.stages = 8; // the tile as cost() picks it, before the plan cuts buffers for another block
    const Plan q = plan(c.shape, c.math, c.device, f, fit);
    const bool exact = int(q.along) + 1 == p.forced.along && q.n == p.forced.n &&
                       (p.forced.along == 1 ? q.split == p.forced.split : q.gpb == p.forced.gpb);
    if (!exact)
      continue;
    const double k = cost(q, c.device, fit);
    if (k < best_cost) {
      best_cost = k;
      best = &p;
    }
  }
  return best;
}

std::string terms(const WgFit &f) {
  char b[160];
  std::snprintf(b, sizeof b, "x3_fragments %g split_rank_cycles %g overlap_loss %g", f.x3_fragments,
                f.split_rank_cycles, f.overlap_loss);
  return b;
}

double fastest(const Case &c) {
  double t = INFINITY;
  for (const Point &p : c.points)
    t = std::min(t, p.seconds);
  return t;
}

double loss(const std::map<std::string, Case> &cases, const WgFit &fit) {
  double l = 0.0;
  for (const auto &[_, c] : cases)
    if (const Point *p = pick(c, fit))
      l += std::log(p->seconds / fastest(c));
  return l;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"The wgmma plan's fitted terms against tile-sweep records"};
  std::vector<std::string> records;
  int bus_bits = 5120;
  bool check = false;
  double tolerance = 0.10;
  int show = 5;
  app.add_option("records", records, "bench_conv records with tile arms (cuda-tf32@*, ...)")
      ->required();
  app.add_option("--bus-bits", bus_bits, "device-memory bus width (H100, H200: 5120)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--check", check,
               "exit 1 when the committed terms pick a variant over --tolerance slower than the "
               "best on any case");
  app.add_option("--tolerance", tolerance, "the slowdown --check allows (0.10: 10%)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--show", show, "how many of the grid's best sets to print")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0)
      return app.exit(e);
    std::cerr << "wg_cost_fit: " << e.what() << "\n";
    return 2;
  }

  std::map<std::string, Case> cases;
  try {
    for (const auto &r : records)
      read_record(r, bus_bits, cases);
  } catch (const BadInput &e) {
    std::cerr << "wg_cost_fit: " << e.what << "\n";
    return 2;
  }
  if (cases.empty()) {
    std::cerr << "wg_cost_fit: no tile arms (cuda-tf32@..., cuda-f32x3@...) with samples in the "
                 "records\n";
    return 2;
  }

  const WgFit committed = convbench::tc::cost_model::kWgFit;
  std::printf("%-18s %-16s %9s %-16s %9s %6s\n", "case", "pick", "pick us", "best", "best us",
              "ratio");
  bool off = false;
  for (const auto &[key, c] : cases) {
    const Point *p = pick(c, committed);
    const auto b =
        std::min_element(c.points.begin(), c.points.end(),
                         [](const Point &x, const Point &y) { return x.seconds < y.seconds; });
    const double ratio = p ? p->seconds / b->seconds : NAN;
    off = off || !p || ratio > 1.0 + tolerance;
    std::printf("%-18s %-16s %9.1f %-16s %9.1f %6.3f\n", key.c_str(), p ? p->variant.c_str() : "-",
                p ? p->seconds * 1e6 : NAN, b->variant.c_str(), b->seconds * 1e6, ratio);
  }
  std::printf("committed terms: %s: loss %.3f over %zu cases\n", terms(committed).c_str(),
              loss(cases, committed), cases.size());

  struct Scored {
    double loss;
    WgFit fit;
  };
  std::vector<Scored> grid;
  for (double x3 : {2.0, 2.5, 3.0, 4.0, 5.0})
    for (double split : {0.0, 500.0, 1000.0, 2000.0, 4000.0})
      for (double overlap : {0.0, 0.125, 0.25, 0.5, 0.75, 1.0}) {
        const WgFit f{x3, split, overlap};
        grid.push_back({loss(cases, f), f});
      }
  std::stable_sort(grid.begin(), grid.end(),
                   [](const Scored &a, const Scored &b) { return a.loss < b.loss; });
  for (int i = 0; i < show && i < int(grid.size()); ++i)
    std::printf("grid %d: %s: loss %.3f\n", i + 1, terms(grid[size_t(i)].fit).c_str(),
                grid[size_t(i)].loss);
  return check && off ? 1 : 0;
}
