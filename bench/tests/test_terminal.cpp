// What bench_conv tells a person: the ETA from the stopping rule, every option described and
// completed, the table's verdicts, the causal family's memory remedy. Each check was seen failing
// once with the planted fault noted beside it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "measurement/stopping.hpp"
#include "plan/cli.hpp"
#include "plan/completion.hpp"
#include "plan/dry_run.hpp"
#include "plan/plan.hpp"
#include "record/report.hpp"

namespace fs = std::filesystem;
using namespace convbench::bench;

namespace {
StoppingRule rule(double target, int reps = 3, int max_rounds = 1000, double budget = 27) {
  StoppingRule r;
  r.target = target;
  r.min_rounds = reps;
  r.max_rounds = max_rounds;
  r.time_budget_s = budget;
  return r;
}

Plan plan_of(std::vector<std::string> stages, std::vector<std::string> arms, bool dry = true) {
  static const fs::path dir = fs::temp_directory_path() / ("terminal_" + std::to_string(getpid()));
  fs::create_directories(dir);
  Options o;
  o.stages = std::move(stages);
  o.arms = std::move(arms);
  o.no_counters = true;
  o.dry_run = dry;
  o.out = (dir / "r.json").string();
  return make_plan(o, {"bench_conv"}, "2026-12-07T00:00:00Z");
}
} // namespace

// ---- the ETA ----

// Planted, seen failing: the square dropped from rounds_left (hw / target, not its square).
TEST(Eta, RoundsLeftFollowTheIntervalsNarrowingAsOneOverRootN) {
  EXPECT_EQ(rounds_left(1, std::nullopt, rule(0)), 2); // a fixed count: its remainder
  EXPECT_EQ(rounds_left(3, std::nullopt, rule(0)), 0);
  EXPECT_EQ(rounds_left(3, std::nullopt, rule(0.01)), std::nullopt); // no interval: cannot tell
  EXPECT_EQ(rounds_left(10, 0.02, rule(0.01)), 30);                  // twice the target: 4 n in all
  EXPECT_EQ(rounds_left(10, 0.005, rule(0.01)), 0);                  // met
  EXPECT_EQ(rounds_left(10, 0.02, rule(0.01, 3, 20)), 10);           // capped by --max-rounds
}

// Planted, seen failing: eta_seconds without the budget's bound (a case far from its target
// gave an ETA of minutes under a 27 s budget).
TEST(Eta, WithATargetTheBudgetBoundsItAndAFixedCountIsItsRemainder) {
  const std::vector<RunningCase> far{{1000, 0.1}, {std::nullopt, 0.2}};
  const auto eta = eta_seconds(far, rule(0.01), 10);
  ASSERT_TRUE(eta);
  EXPECT_LE(*eta, 27 - 10 + 0.3 + 1e-9); // what is left of the budget plus the round under way
  EXPECT_GE(*eta, 27 - 10);
  const auto slow = eta_seconds({{1000, 0.1}, {500, 0.2}}, rule(0.01), 10); // 200 s by the rule
  ASSERT_TRUE(slow);
  EXPECT_LE(*slow, 27 - 10 + 0.3 + 1e-9);
  const auto near = eta_seconds({{2, 0.1}, {1, 0.2}}, rule(0.01), 1);
  ASSERT_TRUE(near);
  EXPECT_NEAR(*near, 0.4, 1e-9); // the rule's own rounds, well inside the budget
  EXPECT_NEAR(*eta_seconds({{2, 0.5}}, rule(0, 3), 100), 1.0, 1e-9); // no budget on a count
  EXPECT_FALSE(eta_seconds({{2, 0}}, rule(0), 0));                   // nothing timed yet: unknown
}

// ---- the options ----

// Planted, seen failing: --twins added with an empty description.
TEST(Options, EveryOptionHasAOneLineDescriptionAndIsInTheHelp) {
  const auto opts = cli_options();
  ASSERT_GT(opts.size(), 30u);
  const std::string help = help_text();
  for (const auto &o : opts) {
    EXPECT_FALSE(o.description.empty()) << o.names << " has no description";
    EXPECT_EQ(o.description.find('\n'), std::string::npos) << o.names;
    EXPECT_NE(help.find(o.long_name), std::string::npos) << o.long_name << " is not in --help";
  }
}

// Planted, seen failing: bash_completion skipping the options that take no value (--dry-run
// missing); --stage's values left out (no amp0).
TEST(Completion, TheScriptIsBashAndNamesEveryOption) {
  const std::string script = bash_completion();
  for (const auto &o : cli_options())
    for (size_t at = 0; at < o.names.size();) {
      const size_t comma = o.names.find(',', at);
      const std::string name = o.names.substr(at, comma - at);
      const std::regex word("(^|[ \"])" + name + "([ \"]|$)");
      EXPECT_TRUE(std::regex_search(script, word)) << name << " is not completed";
      at = comma == std::string::npos ? o.names.size() : comma + 1;
    }
  EXPECT_NE(script.find("per-call resident both"), std::string::npos);
  EXPECT_NE(script.find("cpu-f32"), std::string::npos); // the registry's arms
  EXPECT_NE(script.find("amp0"), std::string::npos);    // the model's stage groups
  const fs::path f = fs::temp_directory_path() / ("completion_" + std::to_string(getpid()));
  std::ofstream(f) << script;
  EXPECT_EQ(std::system(("bash -n " + f.string()).c_str()), 0) << script;
  fs::remove(f);
}

// ---- the table ----

// Planted, seen failing: foreign GPU processes not looked at (the case read "ok (fixed count)").
TEST(Verdict, OkImpreciseAndRefusedInTheAnalysisWords) {
  Plan p = plan_of({"up3"}, {"cpu-f32"});
  Case &c = p.cases.front();
  c.samples.resize(8);
  c.stop.target = 0.01;
  c.stop.half_width = 0.005;
  EXPECT_EQ(case_verdict(c), "ok");
  c.stop.half_width = 0.0207;
  EXPECT_EQ(case_verdict(c), "imprecise: +-2.07% > 1%");
  c.stop.target = 0;
  EXPECT_EQ(case_verdict(c), "ok (fixed count)");
  c.samples[3].device = true;
  c.samples[3].round = 3;
  c.samples[3].gpu_after.foreign_processes = 2;
  EXPECT_EQ(case_verdict(c), "refused: foreign-gpu (2 processes, round 3)");
  c.gate.pass = false;
  c.gate.mismatches = 12;
  EXPECT_EQ(case_verdict(c).rfind("refused: gate-failed (12 cells differ", 0), 0u);
  // A self-checked ceiling compares bytes: no error value to quote. Planted (seen failing): the
  // self case removed from case_verdict ("12 cells differ, max err 0").
  c.gate.kind = GateKind::self;
  c.gate.cells = 4096;
  EXPECT_EQ(case_verdict(c), "refused: gate-failed (12 of 4096 checked differ)");
  c.gate.pass = true;
  c.samples.clear();
  EXPECT_EQ(case_verdict(c), "refused: cut-short (never timed)");
}

namespace {
// The table of a plan whose every case took six samples 2% apart (an imprecise +-5% median).
std::string timed_table(Plan &p, double seconds) {
  for (auto &c : p.cases) {
    for (int r = 0; r < 6; ++r) {
      Sample s;
      s.round = r;
      s.timing.seconds = seconds * (1 + 0.02 * r);
      c.samples.push_back(s);
    }
    c.stop = decide_stop(c.seconds(), rule(0.01), 1);
  }
  return format_table(p.cases, std::nullopt);
}
} // namespace

// Planted, seen failing: the header left "frames" for causal cases; the times in format_seconds'
// seven digits and the verdict's " target" word (the main job's host table then 110 columns).
TEST(Table, CausalCasesSayLAndTheMainJobsHostTableFitsIn100Columns) {
  Plan causal = plan_of({"causal.c1024.l64.b1"}, {"cpu-f32"});
  std::istringstream table(timed_table(causal, 1e-3));
  std::string head, line;
  std::getline(table, head);
  EXPECT_EQ(head.rfind("stage", 0), 0u);
  EXPECT_NE(head.find("  L  "), std::string::npos) << head;
  EXPECT_EQ(head.find("frames"), std::string::npos) << head;
  Plan up0 = plan_of({"up0"}, {"cpu-f64", "cpu-f32"});
  std::istringstream main_job(timed_table(up0, 0.160126));
  std::getline(main_job, head);
  EXPECT_NE(head.find("frames"), std::string::npos) << head;
  EXPECT_EQ(head.find("% floor"), std::string::npos) << head; // no floors known: no column
  int rows = 0;
  while (std::getline(main_job, line) && ++rows)
    EXPECT_LE(line.size(), 100u) << line;
  EXPECT_EQ(rows, 3);
}

// Planted, seen failing: the twin compared with itself (always within); the twin's own interval
// left out of the combined half-width (a twin 0.6% off with two +-0.5% intervals is within).
TEST(Table, ATwinLineSaysWhetherItsMedianIsWithinTheCombinedIntervals) {
  Plan p = plan_of({"up3"}, {"cpu-f32", "cpu-f32"});
  ASSERT_EQ(p.cases.size(), 2u);
  auto fill = [](Case &c, double base) {
    for (int r = 0; r < 8; ++r) {
      Sample s;
      s.timing.seconds = base * (1 + 0.001 * r);
      c.samples.push_back(s);
    }
    c.stop = decide_stop(c.seconds(), rule(0.01), 1);
  };
  fill(p.cases[0], 1e-3);
  fill(p.cases[1], 1.0005e-3);
  EXPECT_NE(twin_lines(p.cases).find("within"), std::string::npos) << twin_lines(p.cases);
  // just beyond the arm's own half-width, within the two combined
  const double h = *p.cases[0].stop.half_width;
  p.cases[1].samples.clear();
  fill(p.cases[1], 1e-3 * (1 + 1.2 * h));
  EXPECT_NE(twin_lines(p.cases).find("within the two"), std::string::npos) << twin_lines(p.cases);
  p.cases[1].samples.clear();
  fill(p.cases[1], 1.2e-3);
  const std::string far = twin_lines(p.cases);
  EXPECT_NE(far.find("BEYOND"), std::string::npos) << far;
  EXPECT_NE(far.find("+20."), std::string::npos) << far;
}

// ---- the causal family's memory ----

// Planted, seen failing: the remedy "fewer frames or stages" for causal cases (no case named).
TEST(Memory, TheCausalFamilysRefusalNamesCasesThatFit) {
  const Plan p = plan_of({"causal"}, {"cpu-f64", "cpu-f32"});
  const double need = host_bytes_needed(p);
  const std::string why = host_memory_refusal(p, need / 8);
  EXPECT_EQ(why.find("fewer frames"), std::string::npos) << why;
  EXPECT_NE(why.find("--frames does not apply"), std::string::npos) << why;
  EXPECT_NE(why.find("fit together (up to causal."), std::string::npos) << why;
  EXPECT_NE(why.find("the largest, causal.c8192.l8192.b8"), std::string::npos) << why;
  EXPECT_NE(why.find("more than fits here"), std::string::npos) << why; // 57 / 8 GiB < 10 GiB
  EXPECT_NE(host_memory_refusal(p, need - 1).find("run it alone (--stage causal.c8192"),
            std::string::npos);
  const std::string one_arm = host_memory_refusal(p, 11.0 * (1ull << 30)); // 12 GiB, 10 alone
  EXPECT_NE(one_arm.find("run it alone with one arm (--stage causal.c8192.l8192.b8.state --arms"),
            std::string::npos)
      << one_arm;
  EXPECT_EQ(host_memory_refusal(p, need), ""); // it fits
  const Plan conv = plan_of({"up0"}, {"cpu-f32"});
  EXPECT_NE(host_memory_refusal(conv, 1).find("fewer frames or stages"), std::string::npos);
}

// The dry run counts what the refusal counts, and sums the cases to the plan's need.
// Planted, seen failing: the problem's share left out of each case's bytes.
TEST(DryRun, TheCasesBytesSumToThePlansAndTheEstimateHoldsTheBudget) {
  const Plan p = plan_of({"up3", "up2"}, {"cpu-f64", "cpu-f32"});
  std::ostringstream out;
  Plan q = plan_of({"up3", "up2"}, {"cpu-f64", "cpu-f32"});
  q.opt.json = true;
  ASSERT_EQ(write_dry_run(q, out), 0);
  const auto j = nlohmann::json::parse(out.str());
  double sum = 0;
  for (const auto &c : j["cases"])
    sum += c["host_bytes"].get<double>();
  EXPECT_NEAR(sum, host_bytes_needed(p), 1.0);
  const TimeEstimate t = estimate_time(p);
  EXPECT_GE(t.rounds_s, p.opt.max_time);
  EXPECT_GT(t.gate_s, 0);
  EXPECT_FALSE(t.how.empty());
}
