#include "cli.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace convbench::bench {

std::string help_text() {
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
                                   with and without state (64 cases)
  --model NAME      model family from data/models.json (aliases accepted). Default:
                    bigvgan_v2_44khz_128band_512x
  --frames LIST     mel frames, comma-separated, for a sweep (e.g. 96,384,1536). Default: 96
  --arms LIST       arms, comma-separated: cpu-f64, cpu-f32, cuda-f64, cuda-f64-fma, cuda-f32,
                    cuda-tf32, cuda-f64-dmma, cudnn-f32, cudnn-tf32, cudnn-f64, and for the
                    causal op cuda-causal-register, cuda-causal-tiled and their -bf16 output
                    twins (cpu-f64 and cpu-f32 run it too) (those this build has; an arm runs
                    the cases it computes and says which it leaves out). Default: every arm
                    available on this machine. A device arm without a GPU is an error. An arm
                    named twice runs again as its A/A twin (cuda-f32#2): the instrument's noise.
  --staging MODE    device arms: per-call, resident or both. Default: both
  --reps N          interleaved rounds (samples per case; best = min over rounds). Default: 3
  --seed S          seed of the inputs and of each round's case order (unsigned 64-bit). Default: 1
  --threads N       threads of the host arms. Default: the number of online CPUs
  --min-time S      Google Benchmark minimum time per sample, in seconds; iterations are
                    calibrated to reach it (at least one). Default: 0.05
  --device-timing MODE
                    resident device arms: launched (CUDA events around each call as the host
                    launches it: the host's launch latency and any gap between a provider's
                    kernels count) or queued (the stream is held while the call is enqueued, as
                    nvbench does, so the events time the GPU's work only). Default: queued (on the
                    H200: CV 0.07-0.29% against launched's 0.25-4.6%, cuDNN's the widest)
  --out PATH        result file. Default: results/<utc>-<host>-<model>-<stages>.json
  --dump DIR        write each case's shape/parameters (JSON) and its input, weights, bias and
                    every arm's output (.npy, float32) under DIR
  --no-lease        run without a lease; the result says "outside-lease"
  --lease-wait S    wait up to S seconds for a busy lease instead of refusing at once. Default: 0
  --profile NAME    counter profile (name in profiles/ or a path). Default: fp-throughput when a
                    GPU is present
  --no-counters     skip the counter pass
  --plugin PATH     load a plugin's arms (a shared library built against convbench/arm_plugin.h;
                    repeatable; also $CONVBENCH_PLUGIN_PATH, colon-separated); see docs/plugins.md
  -h, --help        this text

Data files: $CONVBENCH_DATA_DIR, else <prefix>/share/convbench, else the source tree's bench/data.
NVTX: domain "convbench"; each timed sample is the nested push/pop ranges stage > frames > arm >
staging > r<round>, so ncu --nvtx --nvtx-include "convbench@up0/96/cuda-f32/" selects one case.
Exit status: 0 ok; 1 runtime error (CUDA failure, result not written); 2 bad usage (nothing run,
no result); 3 lease refused (no result) or lease void (result written); 4 correctness gate failed
(result written; the failing arm is not timed).
)";
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

// Only the spelling is checked here; the names themselves are the model's (expand_stages).
bool is_stage_word(const std::string &s) {
  for (char ch : s)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.'))
      return false;
  return !s.empty() && s.size() <= 64;
}

} // namespace

Options parse_cli(int argc, const char *const *argv) {
  Options o;
  std::set<std::string> given;
  const std::set<std::string> with_value{
      "--stage",   "--model",    "--frames", "--arms", "--staging",    "--reps",   "--seed",
      "--threads", "--min-time", "--device-timing", "--out",    "--dump", "--lease-wait", "--profile",
      "--plugin"};
  const std::set<std::string> switches{"--no-lease", "--no-counters", "--help", "-h"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string flag = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (switches.count(flag)) {
      if (has_value)
        throw UsageError(flag + " takes no value");
      if (flag == "-h" || flag == "--help") {
        o.help = true;
        continue;
      }
    } else if (with_value.count(flag)) {
      if (!has_value) {
        // "--reps --model x" is a forgotten value, not a value "--model".
        if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
          throw UsageError(flag + " needs a value");
        value = argv[++i];
      }
      if (value.empty())
        throw UsageError(flag + ": empty value");
    } else if (arg.rfind("-", 0) == 0) {
      throw UsageError("unknown flag '" + arg + "' (see --help)");
    } else {
      throw UsageError("unexpected argument '" + arg + "' (see --help)");
    }
    if (flag == "--plugin")
      continue; // repeatable; loaded before parsing (plugin/plugin_args.hpp)
    if (!given.insert(flag).second)
      throw UsageError(flag + " given twice");

    if (flag == "--stage") {
      o.stages = split_list(flag, value);
      for (const auto &s : o.stages)
        if (!is_stage_word(s))
          throw UsageError("--stage: unknown stage '" + s + "' (see --help for the stage names)");
    } else if (flag == "--model") {
      o.model = value;
    } else if (flag == "--frames") {
      o.frames.clear();
      for (const auto &f : split_list(flag, value))
        o.frames.push_back(parse_int(flag, f, 1, 1000000000));
    } else if (flag == "--arms") {
      o.arms = split_list(flag, value, true);
    } else if (flag == "--staging") {
      if (value != "per-call" && value != "resident" && value != "both")
        throw UsageError("--staging: expected per-call, resident or both, got '" + value + "'");
      o.staging = value;
    } else if (flag == "--reps") {
      o.reps = int(parse_int(flag, value, 1, 10000));
    } else if (flag == "--seed") {
      o.seed = parse_u64(flag, value);
    } else if (flag == "--threads") {
      o.threads = int(parse_int(flag, value, 1, 4096));
    } else if (flag == "--min-time") {
      o.min_time = parse_seconds(flag, value, false, 3600);
    } else if (flag == "--device-timing") {
      if (value != "launched" && value != "queued")
        throw UsageError("--device-timing: expected launched or queued, got '" + value + "'");
      o.device_timing = value;
    } else if (flag == "--out") {
      o.out = value;
    } else if (flag == "--dump") {
      o.dump = value;
    } else if (flag == "--no-lease") {
      o.no_lease = true;
    } else if (flag == "--lease-wait") {
      o.lease_wait = parse_seconds(flag, value, true, 86400);
    } else if (flag == "--profile") {
      o.profile = value;
    } else if (flag == "--no-counters") {
      o.no_counters = true;
    }
  }
  if (o.no_counters && o.profile)
    throw UsageError("--profile and --no-counters exclude each other");
  if (o.no_lease && given.count("--lease-wait"))
    throw UsageError("--lease-wait and --no-lease exclude each other");
  return o;
}

} // namespace convbench::bench
