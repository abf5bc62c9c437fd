// fast_kernels_bench: a tiny timing mode for the H200, outside bench_conv. For every selected
// vocoder stage and arm: device-resident buffers, warm-up launches, then `reps` launches each
// timed alone with CUDA events; prints the median and min in us, TFLOP/s, and the ratio to the
// floor (facts.md: fp32 FMA 60.8 TFLOP/s, fp64 FMA 31.7 TFLOP/s; the no-FMA fp64 floor is 2x the
// FMA one). Not a result record: no lease, no probes; bench_conv is the instrument.
//
//   fast_kernels_bench [--frames 96,384,1536] [--model all|<name>] [--stages all|up0,up1]
//                      [--arms fast-f32,fast-f64,cudnn-f32,cudnn-tf32,cudnn-f64] [--reps 20]
//                      [--warmup 5]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
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
  int reps = 20;
  int warmup = 5;
};

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
    } else if (a == "--reps") {
      o.reps = static_cast<int>(parse_int(a, value(), 1));
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(parse_int(a, value(), 0));
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: fast_kernels_bench [--frames 96,384] [--model all|NAME] "
                  "[--stages all|up0,..] [--arms fast-f32,fast-f64,cudnn-f32,cudnn-tf32,"
                  "cudnn-f64] [--reps 20] [--warmup 5]\n");
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
      auto launch = [&] {
        if (f64)
          fast::launch_fast_f64(st.shape, x.get(), w.get(), b.get(), y.get(), s.get());
        else
          fast::launch_fast_f32(st.shape, x.get(), w.get(), b.get(), y.get(), s.get());
      };
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

} // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  std::string why;
  if (!convbench::cuda::device_available(&why)) {
    std::fprintf(stderr, "fast_kernels_bench: no usable GPU: %s\n", why.c_str());
    return 1;
  }
  try {
    std::printf("%-30s %6s %-4s %-11s %10s %10s %8s %17s  %s\n", "model", "frames", "stage", "arm",
                "median_us", "min_us", "TFLOP/s", "floor_us x_floor", "note");
    for (int64_t frames : o.frames)
      for (const auto &fam : peer_testing::model_families()) {
        if (o.model != "all" && o.model != fam.model)
          continue;
        for (const auto &st : peer_testing::model_stages(fam, frames)) {
          if (!o.stages.empty() &&
              std::find(o.stages.begin(), o.stages.end(), st.name) == o.stages.end())
            continue;
          run_stage(st, frames, o);
        }
      }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fast_kernels_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
