// fast_kernels_bench: a tiny timing mode for the H200, outside bench_conv. For every selected
// vocoder stage and arm: device-resident buffers, warm-up launches, then `reps` launches each
// timed alone with CUDA events; prints the median and min in us, TFLOP/s, and the ratio to the
// floor (facts.md: fp32 FMA 60.8 TFLOP/s, fp64 FMA 31.7 TFLOP/s; the no-FMA fp64 floor is 2x the
// FMA one). Not a result record: no lease, no probes; bench_conv is the instrument.
//
//   fast_kernels_bench [--frames 96,384,1536] [--model all|<name>] [--stages all|up0,up1]
//                      [--arms fast-f32,fast-f64,cudnn-f32,cudnn-tf32,cudnn-f64] [--reps 20]
//                      [--warmup 5]
//
// --sweep (issue 7): for every selected stage and frames count, every compiled block
// configuration of the fast kernels (fast_configs(); for fast-f32 also the cluster splits of
// fast_f32_configs()) on the arms fast-f32, fast-f64 (dmul+dadd),
// fast-f64-fma: timed as above, and its output checked on the device against the default
// configuration's output on the same inputs (f64 arms: memcmp, every byte; f32: relative L2
// <= 1e-5), plus a NaN-poison check that every cell was written. One row per (stage, arm,
// config), then the fastest correct config per (stage, arm) and each config's geomean speedup
// over the default; --json PATH writes all of it. Exit 3 when any config was wrong.
//
//   fast_kernels_bench --sweep --frames 96,384,1536 --reps 20 --json sweep.json
//                      [--configs t64-c16-k16-u8,...] [--arms fast-f32,fast-f64,fast-f64-fma]
#include <cuda_runtime.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "convbench/cuda_conv.hpp"
#include "convbench/fast_conv.hpp"
#include "device_support.hpp"
#include "fast_support.hpp"
#if CONVBENCH_BENCH_WITH_CUDNN
#include "convbench/cudnn_conv.hpp"
#endif

namespace {

using namespace convbench;
using peer_testing::DeviceFloats;

constexpr double kF32FmaFloor = 60.8e12; // FLOP/s, measured on the H200
constexpr double kF64FmaFloor = 31.7e12;

struct Options {
  std::vector<int64_t> frames{96};
  std::string model = "all";
  std::vector<std::string> stages; // empty = all
  std::vector<std::string> arms{"fast-f32", "fast-f64", "cudnn-f32", "cudnn-tf32", "cudnn-f64"};
  bool arms_given = false;
  int reps = 20;
  int warmup = 5;
  bool sweep = false;
  std::string json_path;            // --json, sweep only
  std::vector<std::string> configs; // --configs, empty = all compiled
};

const std::vector<std::string> kSweepArms{"fast-f32", "fast-f64", "fast-f64-fma"};

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

[[noreturn]] void usage_error(const std::string &msg) {
  std::fprintf(stderr, "fast_kernels_bench: %s\n", msg.c_str());
  std::exit(2);
}

int64_t parse_int(const std::string &flag, const std::string &v, int64_t lo) {
  char *end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < lo)
    usage_error(flag + " needs an integer >= " + std::to_string(lo) + ", got '" + v + "'");
  return x;
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--frames") {
      o.frames.clear();
      for (const auto &f : split(value()))
        o.frames.push_back(parse_int(a, f, 1));
    } else if (a == "--model") {
      o.model = value();
    } else if (a == "--stages") {
      const std::string v = value();
      o.stages = v == "all" ? std::vector<std::string>{} : split(v);
    } else if (a == "--arms") {
      o.arms = split(value());
      o.arms_given = true;
    } else if (a == "--sweep") {
      o.sweep = true;
    } else if (a == "--json") {
      o.json_path = value();
    } else if (a == "--configs") {
      o.configs = split(value());
    } else if (a == "--reps") {
      o.reps = static_cast<int>(parse_int(a, value(), 1));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(parse_int(a, value(), 0));
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: fast_kernels_bench [--frames 96,384] [--model all|NAME] "
                  "[--stages all|up0,..] [--arms fast-f32,fast-f64,cudnn-f32,cudnn-tf32,"
                  "cudnn-f64] [--reps 20] [--warmup 5]\n"
                  "       fast_kernels_bench --sweep [--frames 96,384,1536] [--model ..] "
                  "[--stages ..] [--arms fast-f32,fast-f64,fast-f64-fma] [--configs NAME,..] "
                  "[--reps 20] [--warmup 5] [--json PATH]\n"
                  "compiled block configurations:");
      for (const auto &c : convbench::fast::fast_f32_configs())
        std::printf(" %s", c.name().c_str());
      std::printf("\n");
      std::exit(0);
    } else {
      usage_error("unknown argument '" + a + "' (try --help)");
    }
  }
  bool known_model = o.model == "all";
  for (const auto &m : peer_testing::model_families())
    known_model |= m.model == o.model;
  if (!known_model)
    usage_error("unknown model '" + o.model + "'");
  if (o.sweep) {
    if (!o.arms_given)
      o.arms = kSweepArms;
    for (const auto &arm : o.arms)
      if (std::find(kSweepArms.begin(), kSweepArms.end(), arm) == kSweepArms.end())
        usage_error("--sweep times fast-f32, fast-f64, fast-f64-fma only, not '" + arm + "'");
    for (const auto &name : o.configs) {
      bool known = false;
      for (const auto &c : convbench::fast::fast_f32_configs())
        known |= c.name() == name;
      if (!known)
        usage_error("unknown block configuration '" + name + "' (see --help)");
    }
    return o;
  }
  if (!o.json_path.empty() || !o.configs.empty())
    usage_error("--json and --configs go with --sweep");
  for (const auto &arm : o.arms)
    if (arm != "fast-f32" && arm != "fast-f64" && arm != "cudnn-f32" && arm != "cudnn-tf32" &&
        arm != "cudnn-f64")
      usage_error("unknown arm '" + arm + "'");
  return o;
}

// Times `launch` alone, `reps` times, after `warmup` untimed launches; returns sorted us.
std::vector<double> time_launches(const std::function<void()> &launch, cudaStream_t st, int warmup,
                                  int reps) {
  cudaEvent_t a, b;
  CB_TEST_CUDA(cudaEventCreate(&a));
  CB_TEST_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i)
    launch();
  CB_TEST_CUDA(cudaStreamSynchronize(st));
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    CB_TEST_CUDA(cudaEventRecord(a, st));
    launch();
    CB_TEST_CUDA(cudaEventRecord(b, st));
    CB_TEST_CUDA(cudaEventSynchronize(b));
    float ms = 0.0f;
    CB_TEST_CUDA(cudaEventElapsedTime(&ms, a, b));
    us.push_back(1e3 * ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(us.begin(), us.end());
  return us;
}

double median(const std::vector<double> &v) {
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void print_row(const peer_testing::Stage &st, int64_t frames, const std::string &arm,
               const std::vector<double> &us, const std::string &note) {
  const double flops = st.shape.flops();
  const double med = median(us);
  double floor_us = 0.0;
  if (arm.find("f32") != std::string::npos && arm.find("tf32") == std::string::npos)
    floor_us = 1e6 * flops / kF32FmaFloor;
  if (arm.find("f64") != std::string::npos)
    floor_us = 1e6 * flops / kF64FmaFloor;
  char floor_txt[64] = "-";
  if (floor_us > 0)
    std::snprintf(floor_txt, sizeof floor_txt, "%9.1f %6.2fx", floor_us, med / floor_us);
  std::printf("%-30s %6lld %-4s %-11s %10.1f %10.1f %8.2f %17s  %s\n", st.model.c_str(),
              static_cast<long long>(frames), st.name.c_str(), arm.c_str(), med, us.front(),
              flops / (med * 1e-6) / 1e12, floor_txt, note.c_str());
  std::fflush(stdout);
}

void run_stage(const peer_testing::Stage &st, int64_t frames, const Options &o) {
  const auto pr = peer_testing::random_problem(st.shape, 1);
  for (const auto &arm : o.arms) {
    if (arm == "fast-f32" || arm == "fast-f64") {
      const bool f64 = arm == "fast-f64";
      if (!fast::fast_supported(st.shape, f64)) {
        std::printf("%-30s %6lld %-4s %-11s  not supported\n", st.model.c_str(),
                    static_cast<long long>(frames), st.name.c_str(), arm.c_str());
        continue;
      }
      peer_testing::Stream s;
      DeviceFloats x(pr.x), w(pr.w), b(pr.b), y(static_cast<size_t>(st.shape.output_elems()));
      y.poison(s.get());
      // Resolved once (config, checks, plan), so the timed launches only enqueue.
      const fast::FastLaunch fl(st.shape, f64, false);
      auto launch = [&] { fl.launch(x.get(), w.get(), b.get(), y.get(), s.get()); };
      const auto us = time_launches(launch, s.get(), o.warmup, o.reps);
      const int64_t unwritten = peer_testing::nan_cells(y.download());
      print_row(st, frames, arm, us,
                unwritten ? "ERROR: " + std::to_string(unwritten) + " cells unwritten"
                          : (f64 ? "no-FMA floor = 2x FMA floor" : ""));
    } else {
#if CONVBENCH_BENCH_WITH_CUDNN
      const cudnn::Mode m = arm == "cudnn-f32"    ? cudnn::Mode::f32
                            : arm == "cudnn-tf32" ? cudnn::Mode::tf32
                                                  : cudnn::Mode::f64;
      cudnn::CudnnConv conv(st.shape, m, pr.w.data(), pr.bias());
      conv.upload_input(pr.x.data());
      const auto us = time_launches([&] { conv.launch(); },
                                    static_cast<cudaStream_t>(conv.stream()), o.warmup, o.reps);
      print_row(st, frames, arm, us, conv.algorithm());
#else
      std::printf("%-30s %6lld %-4s %-11s  not built (no cuDNN)\n", st.model.c_str(),
                  static_cast<long long>(frames), st.name.c_str(), arm.c_str());
#endif
    }
  }
}

// ---- --sweep: every compiled block configuration, checked against the default's output ----

struct SweepRow {
  std::string model, stage, arm, config;
  int64_t frames = 0;
  double median_us = 0, min_us = 0, floor_us = 0;
  int64_t issued_macs = 0;
  bool correct = false;
  std::string check; // what the correctness check found
};

bool not_run(const SweepRow &r) { return r.check.rfind("not run", 0) == 0; }

// Runs one arm of one stage for every selected config; the default config runs first and its
// output is the yardstick of the others.
void sweep_arm(const peer_testing::Stage &st, int64_t frames, const std::string &arm,
               const std::vector<fast::FastConfig> &configs, const Options &o,
               const DeviceFloats &x, const DeviceFloats &w, const DeviceFloats &b,
               std::vector<SweepRow> &rows) {
  const bool f64 = arm != "fast-f32";
  const bool fused = arm == "fast-f64-fma";
  peer_testing::Stream s;
  DeviceFloats y(static_cast<size_t>(st.shape.output_elems()));
  std::vector<float> yardstick;
  const double flops = st.shape.flops();
  const double floor_us =
      1e6 * flops / (f64 ? (fused ? kF64FmaFloor : kF64FmaFloor / 2) : kF32FmaFloor);
  for (const auto &cfg : configs) {
    SweepRow r;
    r.model = st.model;
    r.stage = st.name;
    r.arm = arm;
    r.config = cfg.name();
    r.frames = frames;
    r.floor_us = floor_us;
    if (f64 && cfg.f32_only())
      continue;
    const std::string why = fast::fast_config_unsupported_reason(st.shape, cfg, f64);
    if (!why.empty()) {
      r.check = "not run: " + why;
      std::printf("%-30s %6lld %-4s %-12s %-16s  %s\n", st.model.c_str(),
                  static_cast<long long>(frames), st.name.c_str(), arm.c_str(), cfg.name().c_str(),
                  r.check.c_str());
      rows.push_back(r);
      continue;
    }
    r.issued_macs = fast::fast_issued_macs(st.shape, cfg);
    std::vector<float> out;
    try { // one config's failure is a row, not the end of the sweep (and of its JSON)
      y.poison(s.get());
      const fast::FastLaunch fl(st.shape, f64, fused, cfg); // resolved outside the timing
      auto launch = [&] { fl.launch(x.get(), w.get(), b.get(), y.get(), s.get()); };
      const auto us = time_launches(launch, s.get(), o.warmup, o.reps);
      r.median_us = median(us);
      r.min_us = us.front();
      out = y.download();
    } catch (const std::exception &e) {
      r.check = std::string("failed: ") + e.what();
      std::printf("%-30s %6lld %-4s %-12s %-16s  WRONG: %s\n", st.model.c_str(),
                  static_cast<long long>(frames), st.name.c_str(), arm.c_str(), cfg.name().c_str(),
                  r.check.c_str());
      rows.push_back(r);
      continue;
    }
    const int64_t unwritten = peer_testing::nan_cells(out);
    const bool is_default = cfg == fast::default_fast_config();
    if (unwritten) {
      r.check = std::to_string(unwritten) + " cells unwritten (NaN)";
    } else if (is_default) {
      yardstick = out;
      r.correct = true;
      r.check = "yardstick (default config; gated against cpu-f64 by fast_gpu_tests)";
    } else if (yardstick.empty()) {
      r.check = "no yardstick: the default config did not run or failed";
    } else if (f64) {
      const int64_t diff = peer_testing::differing_cells(out, yardstick);
      r.correct = diff == 0;
      r.check = "memcmp vs default: " + std::to_string(diff) + " cells differ";
    } else {
      const double err = peer_testing::relative_l2(out, yardstick);
      r.correct = err <= peer_testing::kF32RelativeL2Bound;
      char buf[96];
      std::snprintf(buf, sizeof buf, "rel-L2 vs default %.3g (bound %.0e)", err,
                    peer_testing::kF32RelativeL2Bound);
      r.check = buf;
    }
    std::printf("%-30s %6lld %-4s %-12s %-16s %10.1f %10.1f %8.2f %9.1f %6.2fx  %s%s\n",
                st.model.c_str(), static_cast<long long>(frames), st.name.c_str(), arm.c_str(),
                cfg.name().c_str(), r.median_us, r.min_us, flops / (r.median_us * 1e-6) / 1e12,
                floor_us, r.median_us / floor_us, r.correct ? "" : "WRONG: ", r.check.c_str());
    std::fflush(stdout);
    rows.push_back(r);
  }
}

std::string case_key(const SweepRow &r) {
  return r.model + "|" + r.stage + "|" + std::to_string(r.frames) + "|" + r.arm;
}

// f(stage, frames) for every stage --model and --stage select, at each of --frames.
template <class F> void for_each_stage(const Options &o, F &&f) {
  for (int64_t frames : o.frames)
    for (const auto &fam : peer_testing::model_families()) {
      if (o.model != "all" && o.model != fam.model)
        continue;
      for (const auto &st : peer_testing::model_stages(fam, frames))
        if (o.stages.empty() ||
            std::find(o.stages.begin(), o.stages.end(), st.name) != o.stages.end())
          f(st, frames);
    }
}

int run_sweep(const Options &o) {
  std::vector<fast::FastConfig> configs;
  for (const auto &c : fast::fast_f32_configs()) // default first: it is the yardstick
    if (o.configs.empty() || c == fast::default_fast_config() ||
        std::find(o.configs.begin(), o.configs.end(), c.name()) != o.configs.end())
      configs.push_back(c);
  cudaDeviceProp prop{};
  CB_TEST_CUDA(cudaGetDeviceProperties(&prop, 0));
  const auto t0 = std::chrono::steady_clock::now();
  std::printf("%-30s %6s %-4s %-12s %-16s %10s %10s %8s %9s %7s  %s\n", "model", "frames", "stage",
              "arm", "config", "median_us", "min_us", "TFLOP/s", "floor_us", "x_floor", "check");
  std::vector<SweepRow> rows;
  for_each_stage(o, [&](const peer_testing::Stage &st, int64_t frames) {
    const auto pr = peer_testing::random_problem(st.shape, 1);
    const DeviceFloats x(pr.x), w(pr.w), b(pr.b);
    for (const auto &arm : o.arms)
      sweep_arm(st, frames, arm, configs, o, x, w, b, rows);
  });
  // The fastest correct config per (model, stage, frames, arm), by median.
  std::map<std::string, size_t> best, dflt;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto &r = rows[i];
    if (r.config == fast::default_fast_config().name())
      dflt[case_key(r)] = i;
    if (r.correct && (!best.count(case_key(r)) || r.median_us < rows[best[case_key(r)]].median_us))
      best[case_key(r)] = i;
  }
  int wrong = 0;
  for (const auto &r : rows)
    wrong += !r.correct && !not_run(r);
  std::printf("\nbest correct config per stage (median; speedup over the default %s)\n",
              fast::default_fast_config().name().c_str());
  nlohmann::json jbest = nlohmann::json::array();
  for (const auto &[key, i] : best) {
    const auto &r = rows[i];
    const double d = dflt.count(key) ? rows[dflt[key]].median_us : 0.0;
    const double speedup = d > 0 ? d / r.median_us : 0.0;
    std::printf("%-30s %6lld %-4s %-12s %-16s %10.1f us  default %10.1f us  %5.2fx  %5.2fx floor\n",
                r.model.c_str(), static_cast<long long>(r.frames), r.stage.c_str(), r.arm.c_str(),
                r.config.c_str(), r.median_us, d, speedup, r.median_us / r.floor_us);
    jbest.push_back({{"model", r.model},
                     {"stage", r.stage},
                     {"frames", r.frames},
                     {"arm", r.arm},
                     {"config", r.config},
                     {"median_us", r.median_us},
                     {"default_median_us", d},
                     {"speedup_over_default", speedup},
                     {"x_floor", r.median_us / r.floor_us}});
  }
  // One config for all stages (a new default?): geometric mean of the speedup over the default,
  // over the cases where both ran correctly; a config wrong anywhere says where.
  std::printf("\nper arm and config: geomean speedup over the default across stages x frames\n");
  nlohmann::json joverall = nlohmann::json::array();
  for (const auto &arm : o.arms)
    for (const auto &c : configs) {
      double log_sum = 0.0;
      int n = 0, bad = 0;
      for (const auto &r : rows) {
        if (r.arm != arm || r.config != c.name())
          continue;
        if (!r.correct) {
          bad += !not_run(r);
          continue;
        }
        const auto d = dflt.find(case_key(r));
        if (d != dflt.end() && rows[d->second].correct) {
          log_sum += std::log(rows[d->second].median_us / r.median_us);
          ++n;
        }
      }
      const double g = n ? std::exp(log_sum / n) : 0.0;
      std::printf("%-12s %-16s %6.3fx over %d cases, WRONG in %d\n", arm.c_str(), c.name().c_str(),
                  g, n, bad);
      joverall.push_back({{"arm", arm},
                          {"config", c.name()},
                          {"geomean_speedup", g},
                          {"cases", n},
                          {"wrong", bad}});
    }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("\n%zu rows, %d WRONG, %.1f s\n", rows.size(), wrong, secs);
  if (!o.json_path.empty()) {
    nlohmann::json j;
    j["tool"] = "fast_kernels_bench --sweep";
    j["device"] = prop.name;
    j["reps"] = o.reps;
    j["warmup"] = o.warmup;
    j["seconds"] = secs;
    j["floors_flops"] = {
        {"f32_fma", kF32FmaFloor}, {"f64_fma", kF64FmaFloor}, {"f64_no_fma", kF64FmaFloor / 2}};
    j["configs"] = nlohmann::json::array();
    for (const auto &c : configs)
      j["configs"].push_back({{"name", c.name()},
                              {"threads", c.threads},
                              {"cells_per_thread", c.cells_per_thread},
                              {"chunk", c.chunk},
                              {"u_groups", c.u_groups},
                              {"rows_per_thread", c.rows_per_thread},
                              {"min_blocks", c.min_blocks},
                              {"split", c.split}});
    // Rows as arrays (row_fields names the columns) and the check text only where a row is not
    // a plain pass: a sweep has ~2000 rows, and this keeps its JSON small enough to commit.
    j["row_fields"] = {"model",    "stage",   "frames",   "arm",         "config",
                       "median_us", "min_us", "floor_us", "issued_macs", "correct"};
    j["rows"] = nlohmann::json::array();
    j["checks"] = nlohmann::json::object();
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto &r = rows[i];
      j["rows"].push_back({r.model, r.stage, r.frames, r.arm, r.config, r.median_us, r.min_us,
                           r.floor_us, r.issued_macs, r.correct});
      if (!r.correct)
        j["checks"][std::to_string(i)] = r.check;
    }
    j["best"] = jbest;
    j["overall"] = joverall;
    j["wrong"] = wrong;
    std::ofstream f(o.json_path);
    f << j.dump() << "\n";
    if (!f) {
      std::fprintf(stderr, "fast_kernels_bench: cannot write %s\n", o.json_path.c_str());
      return 1;
    }
  }
  return wrong ? 3 : 0;
}

} // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  std::string why;
  if (!convbench::cuda::device_available(&why)) {
    std::fprintf(stderr, "fast_kernels_bench: no usable GPU: %s\n", why.c_str());
    return 1;
  }
  try {
    if (o.sweep)
      return run_sweep(o);
    std::printf("%-30s %6s %-4s %-11s %10s %10s %8s %17s  %s\n", "model", "frames", "stage", "arm",
                "median_us", "min_us", "TFLOP/s", "floor_us x_floor", "note");
    for_each_stage(o, [&](const peer_testing::Stage &st, int64_t frames) { run_stage(st, frames, o); });
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fast_kernels_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
