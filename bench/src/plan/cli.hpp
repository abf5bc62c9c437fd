// bench_conv's command line. Parsing checks syntax and ranges; names of stages, models and arms
// are checked against the data files and the registry afterwards (still exit 2).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace convbench::bench {

// Bad usage: bench_conv prints "bench_conv: <what()>" on one line and exits 2.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct Options {
  bool help = false;
  std::vector<std::string> stages{"up0"}; // as typed: upN, chain, all
  std::string model;                      // empty: the data file's default
  std::vector<int64_t> frames{96};
  std::vector<std::string> arms; // empty: every arm available here
  std::string staging = "both";  // per-call | resident | both
  // A/A twins the run adds by itself: "kinds" (one per kind of case it times: host, per-call,
  // resident, on the cheapest case of the kind), "all" (every case), "none". Twins named in
  // --arms (an arm listed twice) run whatever this says.
  std::string twins = "kinds";
  int reps = 3; // the fewest rounds; exactly this many with target_ci_percent 0
  // Relative half-width asked of each case's 95% interval, in percent; unset: 0.5 for resident
  // device cases, 1 for host and per-call cases; 0: the fixed count of --reps.
  std::optional<double> target_ci_percent;
  double max_time = 27; // seconds for the timed rounds when a target is on
  int max_rounds = 1000;
  std::string cpus; // --cpus LIST; empty: every CPU this process may use
  bool no_pin = false;
  std::string resume; // --resume JOURNAL
  std::string gpus;   // --gpus LIST|all: one child run per GPU of the node (multi_gpu.hpp)
  uint64_t seed = 1;
  int threads = 0;                      // 0: hardware concurrency
  double min_time = 0.05;               // Google Benchmark's minimum time per sample
  std::string device_timing = "queued"; // queued | launched (resident device arms)
  std::string out;                      // empty: results/<utc>-<host>-<model>-<stages>.json
  std::string dump;                     // empty: no dump
  bool no_lease = false;
  double lease_wait = 0;
  double plugin_timeout = 600; // --plugin-timeout S: the longest a plugin call or trial may run
  std::optional<std::string> profile; // unset: fp-throughput when a GPU is present
  bool no_counters = false;
  std::vector<std::string> plugins; // --plugin PATH, repeatable, in order (main.cpp loads them)
  std::string cudnn_algo;           // --cudnn-algo SPEC (cudnn_algo.hpp); empty: Find chooses
  std::string list;  // --list arms|stages|models|cases: print it (listing.hpp) instead of a run
  bool json = false; // --json: the listing (or the --dry-run plan) as one JSON document
  bool quiet = false, verbose = false; // -q: errors, the table, the result path; -v: every round
  bool dry_run = false;                // --dry-run: the plan, its memory and time, then exit
  bool version = false;                // --version: the build's version, then exit
  std::string completion;              // --completion bash: a completion script, then exit
};

// One option of the command line as the parser knows it: its names ("-q,--quiet"), the one-line
// description, whether it takes a value. For --completion and the test that every option is
// described.
struct OptionInfo {
  std::string names, long_name, description;
  bool takes_value = false;
};
std::vector<OptionInfo> cli_options();

Options parse_cli(int argc, const char *const *argv); // throws UsageError
std::string help_text();

} // namespace convbench::bench
