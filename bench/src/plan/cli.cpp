#include "plan/cli.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <tuple>

#include <CLI/CLI.hpp>

namespace convbench::bench {

namespace {
// The synopsis and what to run: stages, model, frames, arms, stagings, twins.
const char *help_stages() {
  return R"(usage: bench_conv [flags]

Times every arm available on this machine for the chosen stages of a vocoder, in interleaved
rounds (best-of-N), checks each arm against the cpu-f64 reference first, records host and GPU
state around every sample, writes one JSON result and prints a table (stdout; progress on stderr).

  --stage LIST      stages, comma-separated. Default: up0. Every convolution of the generator
                    (data/models.json), each name one case:
                      pre          Conv1d(num_mels -> C, 7, padding 3)
                      up0, up1..   the ConvTranspose1d upsample layers
                      ampI.kK.dD   the AMP block's Conv1d after upI: kernel K (3, 7, 11),
                                   dilation D (1, 3, 5), padding D(K-1)/2 (e.g. amp0.k7.d3)
                      post         Conv1d(channels -> 1, 7, padding 3)
                    groups: ampI (the AMP block after upI: its 9 distinct convs), amp (every
                    AMP block), chain (the upsample stages in order as one case; the upI run
                    too, so their summed bests are shown beside it), all (every upI and chain),
                    generator (every convolution of the generator in order as one case:
                    pre, then per upsample upI and its AMP block's 18 convs, then post; the
                    activations and residual sums are not convolutions and are left out; its
                    distinct stages run too, their bests summed with multiplicity beside it).
                    The causal depthwise conv1d (its own length; --frames does not apply):
                      causal.cC.lL[.bB][.kK][.state][.none]  C channels, L positions, batch B
                                   (1), width K (4), an initial state for every even sequence,
                                   no activation (default SiLU); e.g. causal.c1024.l64.b8.state
                      causal       the family: C 1024..8192, L 1, 64, 1024, 8192, batch 1 and 8,
                                   with and without state (64 cases; at once they need
                                   tens of GiB of host memory: a refusal names the cases
                                   that fit, --dry-run each case's need)
  --model NAME      model family from data/models.json (aliases accepted). Default:
                    bigvgan_v2_44khz_128band_512x
  --frames LIST     mel frames, comma-separated, for a sweep (e.g. 96,384,1536). Default: 96
  --arms LIST       arms, comma-separated: cpu-f64, cpu-f32, cuda-f64, cuda-f64-fma, cuda-f32,
                    cuda-tf32, cuda-f32x3, cuda-f64-dmma, cudnn-f32, cudnn-tf32, cudnn-f64, and
                    for the causal op cuda-causal-register, cuda-causal-tiled and their -bf16
                    output twins (cpu-f64 and cpu-f32 run it too) (those this build has; an arm
                    runs the cases it computes and says which it leaves out; a pattern such as
                    cuda-f32@* names every block-shape variant of an arm). Default: every arm
                    available on this machine. A device arm without a GPU is an error. An arm
                    named twice runs again as its A/A twin (cuda-f32#2): the instrument's noise.
  --staging MODE    device arms: per-call, resident or both. Default: both
  --twins MODE      A/A twins the run adds, so that it measures its own error: kinds (one per
                    kind of case it times: host, per-call and resident, each on the cheapest
                    case of its kind), all (every case timed twice), none. A twin is the same
                    arm prepared and timed again as <arm>#2, interleaved like any case; the
                    analysis widens every interval by what the twins of its kind disagree.
                    Default: kinds
)";
}

// How long and where: rounds, stopping, seed, threads and CPUs, timing.
const char *help_rounds() {
  return R"(  --reps N          the fewest interleaved rounds (samples per case; best = min over rounds);
                    with --target-ci 0, exactly N. Default: 3
  --target-ci P     keep adding interleaved rounds until the 95% interval of each case's median
                    is within P percent of it (a case that reached it stops being scheduled; the
                    others go on interleaved), or --max-time or --max-rounds is reached. 0: the
                    fixed count of --reps. Default: 0.5 for resident device cases, 1 for host and
                    per-call cases (an interval needs 6 rounds at least)
  --max-time S      seconds the timed rounds may take in all when --target-ci is on; the round
                    under way finishes. Default: 27 (the main job, `--stage up0 --reps 3`, then
                    ends within 30 s on the H200)
  --max-rounds N    the most rounds a case takes. Default: 1000
  --seed S          seed of the inputs and of each round's case order (unsigned 64-bit). Default: 1
  --threads N       threads of the host arms. Default: the number of CPUs this process may use
  --cpus LIST       CPUs the host arms' workers are pinned to, one worker per CPU, in the
                    kernel's list form (0-7,12); at least --threads of them. Default: the CPUs
                    this process may use
  --no-pin          leave the workers where the scheduler puts them (to measure what pinning
                    does); the record still says where each ran
  --min-time S      Google Benchmark minimum time per sample, in seconds; iterations are
                    calibrated to reach it (at least one). Default: 0.05
  --device-timing MODE
                    resident device arms: launched (CUDA events around each call as the host
                    launches it: the host's launch latency and any gap between a provider's
                    kernels count) or queued (the stream is held while the call is enqueued, as
                    nvbench does, so the events time the GPU's work only). Default: queued (its
                    spread is several times smaller, most of all for cuDNN's multi-kernel calls)
)";
}

// What the run writes and holds: outputs, lease, counters, plugins, listings.
const char *help_outputs() {
  return R"(  --out PATH        result file. Default: results/<utc>-<host>-<model>-<stages>.json
  --dump DIR        write each case's shape/parameters (JSON) and its input, weights, bias and
                    every arm's output (.npy, float32) under DIR
  --gpus LIST|all   run the plan on each listed GPU of this node at once (indices as NVML
                    numbers them, e.g. 0,1; all: every GPU NVML lists): one bench_conv process
                    per GPU under its own lease, released together once all hold their lease
                    and passed the gate; records <out>.gpu<i>.json, each sample naming the
                    other GPUs' load (neighbours), and the node summary <out>
  --no-lease        run without a lease; the result says "outside-lease"
  --lease-wait S    wait up to S seconds for a busy lease instead of refusing at once; nothing
                    touches the GPU while waiting. Default: 0
  --profile NAME    counter profile (name in profiles/ or a path). Default: fp-throughput when a
                    GPU is present
  --no-counters     skip the counter pass
  --resume JOURNAL  write the result of a run that was killed from its journal (<result>.journal,
                    one line per finished round): status "recovered", the rounds it has. With
                    --out PATH; default: the journal's result path
  --cudnn-algo SPEC run this cuDNN algorithm instead of the one cuDNN's Find picks (Find skipped;
                    the case's kernel block says "algorithm_source": "pinned"), so two runs time
                    the same kernel. SPEC: an algorithm as a record spells it (bwd_data_algo_0
                    for every ConvTranspose1d cuDNN case, fwd_algo_1 for every Conv1d one;
                    optionally with its math, 'bwd_data_algo_1 (tensor-op math)'), or
                    CASE_ID=ALGO,... (e.g. up0/96/cudnn-tf32/resident=bwd_data_algo_1), or
                    @RECORD.json: every cuDNN case replays the algorithm it chose in that run
                    (by case id; a case the record lacks runs Find). An algorithm cuDNN does not
                    run for the shape fails that case's gate (never timed), saying why
  --plugin PATH     load arms from a shared library (repeatable); its arms join the registry
                    before the plan is made, and are gated and timed as built-in arms are
  --plugin-timeout S
                    the longest one plugin call (or a host arm's trial run) may take: a trial
                    past it is killed and its case refused; a call past it (or still running 3 s
                    after a signal) ends the run, naming the call and the journal. Default: 600
  --list WHAT       print WHAT instead of running, one line each, and exit: arms (every
                    registered arm with its precision, math and role; hidden variants and
                    arms this machine lacks marked), stages (the model's stages and the
                    groups --stage takes), models (models.json's generators), cases (each
                    stage x frames the --model/--stage/--frames selection plans, with its
                    shapes as the record spells them). Takes only --model, --stage, --frames,
                    --json and --plugin
  --json            with --list or --dry-run: one JSON document on stdout instead of lines
  --dry-run         print the plan (each case: stage, frames or L, arm, staging, twin), the host
                    and device memory each case needs and an estimate of the time the run takes
                    (the --max-time budget, or --reps rounds, plus the gate and preparation),
                    then exit 0 (2, the reason on stderr, when the run would be refused for its
                    memory): no lease taken, no GPU touched, no record written
  -q, --quiet       only errors, the table and the result path on the terminal
  -v, --verbose     every sample's and every round's line on stderr (the default: one updating
                    line on a terminal; in a log, a line per case as it stops and a heartbeat
                    at most every 5 s)
  --version         the build's version (git describe, the project version, CUDA on or off)
  --completion SHELL
                    print a completion script for SHELL (bash): source <(bench_conv
                    --completion bash)
  -h, --help        this text

)";
}

// Where the data come from, NVTX ranges, exit statuses, the journal.
const char *help_footer() {
  return R"(Data files: $CONVBENCH_DATA_DIR, else <prefix>/share/convbench, else the source tree's bench/data.
NVTX: domain "convbench"; each timed sample is the nested push/pop ranges stage > frames > arm >
staging > r<round>, so ncu --nvtx --nvtx-include "convbench@up0/96/cuda-f32/" selects one case.
Exit status: 0 ok; 1 runtime error (CUDA failure, result not written); 2 bad usage (nothing run,
no result); 3 lease refused (no result) or lease void (result written); 4 correctness gate failed
(result written; the failing arm is not timed); 130 / 143 / 129 interrupted by SIGINT / SIGTERM /
SIGHUP (the result is written with status "interrupted" and the samples taken, the lease
released).
Every finished round is appended to <result>.journal first, so a run killed outright (SIGKILL)
loses at most the round under way: bench_conv --resume <result>.journal writes its result.
)";
}

} // namespace

std::string help_text() {
  return std::string(help_stages()) + help_rounds() + help_outputs() + help_footer();
}

namespace {

// allow_repeats: --arms may name an arm again, which runs its A/A twin ("cuda-f32#2").
std::vector<std::string> split_list(const std::string &flag, const std::string &v,
                                    bool allow_repeats = false) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = v.find(',', start);
    std::string item =
        v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty())
      throw UsageError(flag + ": empty item in list '" + v + "'");
    out.push_back(item);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  std::set<std::string> seen;
  for (const auto &s : out)
    if (!seen.insert(s).second && !allow_repeats)
      throw UsageError(flag + ": '" + s + "' listed twice");
  return out;
}

int64_t parse_int(const std::string &flag, const std::string &v, int64_t lo, int64_t hi) {
  errno = 0;
  char *end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || v[0] == ' ' || v[0] == '+' || x < lo ||
      x > hi)
    throw UsageError(flag + ": expected an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got '" + v + "'");
  return x;
}

uint64_t parse_u64(const std::string &flag, const std::string &v) {
  errno = 0;
  char *end = nullptr;
  if (v.empty() || v[0] == '-' || v[0] == '+' || v[0] == ' ')
    throw UsageError(flag + ": expected an unsigned 64-bit integer, got '" + v + "'");
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE)
    throw UsageError(flag + ": expected an unsigned 64-bit integer, got '" + v + "'");
  return x;
}

double parse_seconds(const std::string &flag, const std::string &v, bool zero_ok, double hi) {
  errno = 0;
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x) || x < 0 ||
      (!zero_ok && x == 0) || x > hi)
    throw UsageError(flag + ": expected " + (zero_ok ? "a non-negative" : "a positive") +
                     " number of seconds up to " + std::to_string(int(hi)) + ", got '" + v + "'");
  return x;
}

double parse_percent(const std::string &flag, const std::string &v) {
  errno = 0;
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(x) || x < 0 || x >= 100)
    throw UsageError(flag + ": expected a percentage in [0, 100), got '" + v + "'");
  return x;
}

// Only the spelling is checked here; the names themselves are the model's (expand_stages).
bool is_stage_word(const std::string &s) {
  for (char ch : s)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.'))
      return false;
  return !s.empty() && s.size() <= 64;
}

} // namespace

namespace {

// CLI11 parses; the values are checked here so each bad one gets the same one-line message.
struct RawOptions {
  std::string stage, model, frames, arms, staging, reps, seed, threads, min_time, device_timing,
      out, dump, lease_wait, plugin_timeout, profile, target_ci, max_time, max_rounds, cpus, resume,
      cudnn_algo, gpus, twins, list, completion;
  std::vector<std::string> plugins;
  bool help = false, no_lease = false, no_counters = false, no_pin = false, json = false,
       quiet = false, verbose = false, dry_run = false, version = false;
};

// Every option with its one-line description (help_text() says each at length; --completion and
// cli_options() read these).
void add_options(CLI::App &app, RawOptions &r) {
  app.set_help_flag(); // help_text() is ours: it says more than a list of flags
  app.allow_extras();  // reported below in our words
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  for (auto [name, field, what] :
       std::initializer_list<std::tuple<const char *, bool *, const char *>>{
           {"-h,--help", &r.help, "this text"},
           {"--no-lease", &r.no_lease, "run without a lease; the result says outside-lease"},
           {"--no-counters", &r.no_counters, "skip the counter pass"},
           {"--no-pin", &r.no_pin, "leave the host arms' workers where the scheduler puts them"},
           {"--json", &r.json, "with --list or --dry-run: one JSON document on stdout"},
           {"-q,--quiet", &r.quiet, "only errors, the table and the result path"},
           {"-v,--verbose", &r.verbose, "every sample's and every round's line on stderr"},
           {"--dry-run", &r.dry_run,
            "print the plan, the memory and the time it needs, then exit: no lease, no GPU"},
           {"--version", &r.version, "the build's version (git describe), CUDA on or off"}})
    app.add_flag(name, *field, what)->disable_flag_override();
  for (auto [name, field, what] :
       std::initializer_list<std::tuple<const char *, std::string *, const char *>>{
           {"--stage", &r.stage, "stages, comma-separated (up0, amp0.k7.d3, chain, causal, ...)"},
           {"--model", &r.model, "model family from data/models.json"},
           {"--frames", &r.frames, "mel frames, comma-separated, for a sweep"},
           {"--arms", &r.arms, "arms, comma-separated; an arm named twice runs its A/A twin"},
           {"--staging", &r.staging, "device arms: per-call, resident or both"},
           {"--reps", &r.reps, "the fewest interleaved rounds (exactly N with --target-ci 0)"},
           {"--seed", &r.seed, "seed of the inputs and of each round's case order"},
           {"--threads", &r.threads, "threads of the host arms"},
           {"--min-time", &r.min_time, "Google Benchmark minimum time per sample, in seconds"},
           {"--device-timing", &r.device_timing, "resident device arms: launched or queued"},
           {"--out", &r.out, "result file"},
           {"--dump", &r.dump, "write each case's inputs and every arm's output under DIR"},
           {"--lease-wait", &r.lease_wait, "wait up to S seconds for a busy lease"},
           {"--plugin-timeout", &r.plugin_timeout, "the longest one plugin call may take, in s"},
           {"--profile", &r.profile, "counter profile (a name in profiles/ or a path)"},
           {"--target-ci", &r.target_ci, "the 95% interval of each median asked, in percent"},
           {"--max-time", &r.max_time, "seconds the timed rounds may take in all"},
           {"--max-rounds", &r.max_rounds, "the most rounds a case takes"},
           {"--cpus", &r.cpus, "CPUs the host arms' workers are pinned to (0-7,12)"},
           {"--resume", &r.resume, "write the result of a killed run from its journal"},
           {"--cudnn-algo", &r.cudnn_algo, "run this cuDNN algorithm instead of Find's choice"},
           {"--gpus", &r.gpus, "run the plan on each listed GPU of this node at once"},
           {"--twins", &r.twins, "A/A twins the run adds: kinds, all or none"},
           {"--list", &r.list, "print arms, stages, models or cases instead of running"},
           {"--completion", &r.completion, "print a completion script for SHELL (bash)"}})
    app.add_option(name, *field, what);
  app.add_option("--plugin", r.plugins, "load arms from a shared library (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
}

// Each option given at most once (--plugin: any number), with a value that is not the next flag.
void check_given(const CLI::App &app) {
  for (const CLI::Option *o : app.get_options()) {
    if (o->count() == 0)
      continue;
    const std::string name = o->get_name();
    if (o->count() > 1 && name != "--plugin")
      throw UsageError(name + " given twice");
    for (const auto &v : o->results()) {
      // "--reps --model x" is a forgotten value, not a value "--model".
      if (v.rfind("--", 0) == 0)
        throw UsageError(name + " needs a value");
      if (v.empty())
        throw UsageError(name + ": empty value");
    }
  }
  for (const auto &extra : app.remaining())
    throw UsageError((extra.rfind("-", 0) == 0 ? "unknown flag '" : "unexpected argument '") +
                     extra + "' (see --help)");
}

// --list WHAT [--json]: a listing takes the selection flags only; --json needs --list.
void check_listing(const CLI::App &app, const RawOptions &r, Options &o) {
  o.json = r.json;
  if (app.count("--list") == 0) {
    if (r.json && !r.dry_run)
      throw UsageError("--json needs --list arms|stages|models|cases, or --dry-run");
    return;
  }
  if (r.list != "arms" && r.list != "stages" && r.list != "models" && r.list != "cases")
    throw UsageError("--list: expected arms, stages, models or cases, got '" + r.list + "'");
  o.list = r.list;
  for (const CLI::Option *opt : app.get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() && name != "--list" && name != "--json" && name != "--help" &&
        name != "--model" && name != "--stage" && name != "--frames" && name != "--plugin")
      throw UsageError("--list takes only --model, --stage, --frames, --json and --plugin (" +
                       name + " given)");
  }
}

template <class T> bool given(const CLI::App &app, const char *name, T &&use) {
  if (app.count(name) == 0)
    return false;
  use();
  return true;
}

// How loudly, and what instead of a run: -q, -v, --dry-run, --version, --completion.
void convert_modes(const CLI::App &app, const RawOptions &r, Options &o) {
  o.quiet = r.quiet;
  o.verbose = r.verbose;
  o.dry_run = r.dry_run;
  o.version = r.version;
  if (o.quiet && o.verbose)
    throw UsageError("--quiet and --verbose exclude each other");
  if (app.count("--completion")) {
    if (r.completion != "bash")
      throw UsageError("--completion: expected bash, got '" + r.completion + "'");
    o.completion = r.completion;
  }
  if (o.dry_run && (app.count("--resume") || app.count("--gpus") || app.count("--list")))
    throw UsageError("--dry-run takes a run's flags, not --resume, --gpus or --list");
}

Options convert(const CLI::App &app, const RawOptions &r) {
  Options o;
  o.help = r.help;
  o.no_lease = r.no_lease;
  o.no_counters = r.no_counters;
  o.plugins = r.plugins;
  convert_modes(app, r, o);
  given(app, "--stage", [&] {
    o.stages = split_list("--stage", r.stage);
    for (const auto &s : o.stages)
      if (!is_stage_word(s))
        throw UsageError("--stage: unknown stage '" + s + "' (see --help for the stage names)");
  });
  given(app, "--model", [&] { o.model = r.model; });
  given(app, "--frames", [&] {
    o.frames.clear();
    for (const auto &f : split_list("--frames", r.frames))
      o.frames.push_back(parse_int("--frames", f, 1, 1000000000));
  });
  given(app, "--arms", [&] { o.arms = split_list("--arms", r.arms, true); });
  given(app, "--staging", [&] {
    if (r.staging != "per-call" && r.staging != "resident" && r.staging != "both")
      throw UsageError("--staging: expected per-call, resident or both, got '" + r.staging + "'");
    o.staging = r.staging;
  });
  given(app, "--twins", [&] {
    if (r.twins != "kinds" && r.twins != "all" && r.twins != "none")
      throw UsageError("--twins: expected kinds, all or none, got '" + r.twins + "'");
    o.twins = r.twins;
  });
  given(app, "--reps", [&] { o.reps = int(parse_int("--reps", r.reps, 1, 10000)); });
  given(app, "--seed", [&] { o.seed = parse_u64("--seed", r.seed); });
  given(app, "--threads", [&] { o.threads = int(parse_int("--threads", r.threads, 1, 4096)); });
  given(app, "--min-time",
        [&] { o.min_time = parse_seconds("--min-time", r.min_time, false, 3600); });
  given(app, "--device-timing", [&] {
    if (r.device_timing != "launched" && r.device_timing != "queued")
      throw UsageError("--device-timing: expected launched or queued, got '" + r.device_timing +
                       "'");
    o.device_timing = r.device_timing;
  });
  given(app, "--out", [&] { o.out = r.out; });
  given(app, "--dump", [&] { o.dump = r.dump; });
  given(app, "--plugin-timeout", [&] {
    o.plugin_timeout = parse_seconds("--plugin-timeout", r.plugin_timeout, false, 86400);
  });
  given(app, "--lease-wait",
        [&] { o.lease_wait = parse_seconds("--lease-wait", r.lease_wait, true, 86400); });
  given(app, "--profile", [&] { o.profile = r.profile; });
  given(app, "--target-ci",
        [&] { o.target_ci_percent = parse_percent("--target-ci", r.target_ci); });
  given(app, "--max-time",
        [&] { o.max_time = parse_seconds("--max-time", r.max_time, false, 86400); });
  given(app, "--max-rounds",
        [&] { o.max_rounds = int(parse_int("--max-rounds", r.max_rounds, 1, 1000000)); });
  given(app, "--cpus", [&] { o.cpus = r.cpus; });
  o.no_pin = r.no_pin;
  given(app, "--resume", [&] { o.resume = r.resume; });
  given(app, "--cudnn-algo", [&] { o.cudnn_algo = r.cudnn_algo; });
  given(app, "--gpus", [&] { o.gpus = r.gpus; });
  if (!o.gpus.empty() && !o.resume.empty())
    throw UsageError("--gpus and --resume exclude each other: resume each GPU's journal alone");
  if (o.no_pin && !o.cpus.empty())
    throw UsageError("--cpus and --no-pin exclude each other");
  if (o.max_rounds < o.reps)
    throw UsageError("--max-rounds " + std::to_string(o.max_rounds) + " is below --reps " +
                     std::to_string(o.reps));
  if (!o.resume.empty())
    for (const CLI::Option *opt : app.get_options())
      if (opt->count() && opt->get_name() != "--resume" && opt->get_name() != "--out")
        throw UsageError("--resume takes only --out: the journal holds the plan (" +
                         opt->get_name() + " given)");
  if (o.no_counters && o.profile)
    throw UsageError("--profile and --no-counters exclude each other");
  if (o.no_lease && app.count("--lease-wait"))
    throw UsageError("--lease-wait and --no-lease exclude each other");
  return o;
}

} // namespace

std::vector<OptionInfo> cli_options() {
  CLI::App app{"", "bench_conv"};
  RawOptions raw;
  add_options(app, raw);
  std::vector<OptionInfo> out;
  for (const CLI::Option *o : app.get_options()) {
    OptionInfo i;
    for (const auto &n : o->get_snames())
      i.names += (i.names.empty() ? "-" : ",-") + n;
    for (const auto &n : o->get_lnames()) {
      i.names += (i.names.empty() ? "--" : ",--") + n;
      i.long_name = "--" + n;
    }
    i.description = o->get_description();
    i.takes_value = o->get_type_size() != 0;
    out.push_back(i);
  }
  return out;
}

Options parse_cli(int argc, const char *const *argv) {
  CLI::App app{"", "bench_conv"};
  RawOptions raw;
  add_options(app, raw);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    std::string what = e.what();
    // CLI11's "help was given a disallowed flag override": say it as the flag's rule.
    if (auto at = what.find(" was given a disallowed flag override"); at != std::string::npos)
      what = "--" + what.substr(0, at) + " takes no value";
    throw UsageError(what);
  }
  check_given(app);
  Options o = convert(app, raw);
  check_listing(app, raw, o);
  return o;
}

} // namespace convbench::bench
