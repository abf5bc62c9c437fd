#include "measurement/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/console.hpp"
#include "measurement/stopping.hpp"
#include "plan/case.hpp"
#include "plan/cli.hpp"
#include "record/report.hpp"

namespace convbench::bench {

namespace {
std::string seconds_text(double s) {
  char buf[32];
  snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
  return buf;
}

// Today's line per sample (--verbose).
void sample_line(const Options &opt, int r, size_t pos, size_t n, const Case &c, size_t converging,
                 size_t cases, double elapsed, const std::string &eta) {
  char buf[512];
  if (opt.target_ci_percent && *opt.target_ci_percent == 0)
    snprintf(buf, sizeof buf, "round %d/%d  case %zu/%zu  %s  (%s)", r + 1, opt.reps, pos + 1, n,
             c.id.c_str(), eta.c_str());
  else
    snprintf(buf, sizeof buf, "round %d  case %zu/%zu  %s  (%zu of %zu cases converging, %s of %s)",
             r + 1, pos + 1, n, c.id.c_str(), converging, cases, format_seconds(elapsed).c_str(),
             format_seconds(opt.max_time).c_str());
  say(buf, Verbosity::verbose);
}

// Which cases go on, and how far each is from its target (the four widest named; --verbose).
void converging_line(const std::vector<Case *> &still, int r) {
  if (still.empty() || still.front()->rule.target <= 0)
    return;
  std::vector<const Case *> v(still.begin(), still.end());
  auto width = [](const Case *c) { return c->stop.half_width.value_or(1e9); };
  std::sort(v.begin(), v.end(), [&](auto *a, auto *b) { return width(a) > width(b); });
  std::string names;
  for (size_t i = 0; i < v.size() && i < 4; ++i) {
    char buf[48] = "no interval yet";
    if (v[i]->stop.half_width)
      snprintf(buf, sizeof buf, "+-%.2f%% of %.2f%%", width(v[i]) * 100, v[i]->rule.target * 100);
    names += (i ? ", " : "") + v[i]->id + " (" + buf + ")";
  }
  say("after round " + std::to_string(r + 1) + ", " + std::to_string(v.size()) +
          " still converging: " + names + (v.size() > 4 ? ", ..." : ""),
      Verbosity::verbose);
}

// A case that stopped by its rule (not a fixed count): in a log and with --verbose.
void stopped_line(const Case &c, int r) {
  char width[32] = "none";
  if (c.stop.half_width)
    snprintf(width, sizeof width, "+-%.2f%%", *c.stop.half_width * 100);
  char buf[256];
  snprintf(buf, sizeof buf, "%s: %s after %d rounds (median's interval %s, target %.2f%%)",
           c.id.c_str(), to_string(c.stop.reason), r + 1, width, c.rule.target * 100);
  say(buf, stderr_is_terminal() ? Verbosity::verbose : Verbosity::normal);
}
} // namespace

RoundsProgress::RoundsProgress(const Options &opt, size_t cases, double heartbeat_s)
    : opt_(opt), cases_(cases), converging_(cases), heartbeat_s_(heartbeat_s) {
  rule_.target = opt.target_ci_percent && *opt.target_ci_percent == 0 ? 0 : 1;
  rule_.min_rounds = opt.reps;
  rule_.max_rounds = rule_.target > 0 ? opt.max_rounds : opt.reps;
  rule_.time_budget_s = opt.max_time;
}

RoundsProgress::~RoundsProgress() { clear_status(); }

std::string RoundsProgress::eta_text(double elapsed) const {
  char buf[32];
  if (!eta_at_) {
    if (rule_.target <= 0)
      return "ETA ?";
    // Before any interval the budget bounds it.
    snprintf(buf, sizeof buf, "ETA ~%.0fs (budget)", std::max(0.0, opt_.max_time - elapsed));
    return buf;
  }
  snprintf(buf, sizeof buf, "ETA ~%.0fs", std::max(0.0, *eta_at_ - (elapsed - eta_when_)));
  return buf;
}

void RoundsProgress::estimate(const std::vector<Case *> &still, double elapsed) {
  double total = 0;
  int count = 0;
  for (const auto &[c, w] : wall_) {
    total += w.first;
    count += w.second;
  }
  const double mean = count ? total / count : 0;
  std::vector<RunningCase> running;
  for (const Case *c : still) {
    auto it = wall_.find(c);
    const double wall =
        it != wall_.end() && it->second.second ? it->second.first / it->second.second : mean;
    running.push_back({rounds_left(int(c->samples.size()), c->stop.half_width, c->rule), wall});
  }
  StoppingRule rule = still.empty() ? rule_ : still.front()->rule;
  eta_at_ = eta_seconds(running, rule, elapsed);
  eta_when_ = elapsed;
}

void RoundsProgress::before_sample(int round, size_t pos, size_t in_round, const Case &c,
                                   size_t converging, double elapsed) {
  round_ = round;
  converging_ = converging;
  const std::string eta = eta_text(elapsed);
  sample_line(opt_, round, pos, in_round, c, converging, cases_, elapsed, eta);
  const std::string r = rule_.target > 0
                            ? std::to_string(round + 1)
                            : std::to_string(round + 1) + "/" + std::to_string(opt_.reps);
  const std::string state = "round " + r + "  " + std::to_string(converging) + " converging, " +
                            std::to_string(done_) + " done  " + seconds_text(elapsed) + "  " + eta;
  show_status(state + "  " + c.id);
  if (!stderr_is_terminal() && elapsed - last_heartbeat_ >= heartbeat_s_) {
    last_heartbeat_ = elapsed;
    say(state);
  }
}

void RoundsProgress::after_sample(const Case &c, double wall_s) {
  auto &w = wall_[&c];
  w.first += wall_s;
  w.second += 1;
}

void RoundsProgress::after_round(int round, const std::vector<Case *> &stopped,
                                 const std::vector<Case *> &still, double elapsed) {
  for (const Case *c : stopped) {
    ++done_;
    if (c->stop.reason != StopReason::fixed_count)
      stopped_line(*c, round);
  }
  converging_line(still, round);
  estimate(still, elapsed);
}

void RoundsProgress::finish(int rounds, double elapsed) {
  clear_status();
  say("rounds done: " + std::to_string(rounds) + " round" + (rounds == 1 ? "" : "s") + " in " +
      seconds_text(elapsed));
}

} // namespace convbench::bench
