// cpu_f32_bench: times cpu-f32 on the transposed stages up0..up3 of
// bigvgan_v2_44khz_128band_512x (facts.md) and prints GFLOP/s next to PyTorch's
// CPU f32 time on the GPU machine (16 threads). Not a test: a measuring tool
// for issue 7's host-arm target.
//   cpu_f32_bench [--threads N] [--frames F] [--reps R] [--isa
//   generic|avx2|avx512] [--stage up0,up1,...] [--check]
// --check also runs cpu-f64 once per stage and prints cpu-f32's relative L2
// against it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "convbench/cpu_conv.hpp"
#include "cpu_f32_conv.hpp"

namespace {

using convbench::ConvOp;
using convbench::ConvShape;
namespace f32 = convbench::cpu_f32;

struct Stage {
  const char *name;
  int64_t cin, cout, k, stride, l_in_per_frame;
  double torch_us_16t_96f; // facts.md, PyTorch CPU f32, 16 threads, 96 frames
};
// C = 1536, strides 8,4,2,2, kernels 16,8,4,4, padding (K - s) / 2.
const Stage kStages[] = {{"up0", 1536, 768, 16, 8, 1, 18117},
                         {"up1", 768, 384, 8, 4, 8, 4105},
                         {"up2", 384, 192, 4, 2, 32, 2560},
                         {"up3", 192, 96, 4, 2, 64, 2694}};

[[noreturn]] void usage_error(const std::string &what) {
  std::fprintf(stderr,
               "cpu_f32_bench: %s (usage: cpu_f32_bench [--threads N] [--frames F] "
               "[--reps R] [--isa generic|avx2|avx512] [--stage up0,up1,...] "
               "[--check])\n",
               what.c_str());
  std::exit(2);
}

int64_t parse_positive(const char *flag, const char *text) {
  char *end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > 1000000)
    usage_error(std::string(flag) + " needs a positive integer, got '" + text + "'");
  return v;
}

// CPU time of the whole process; per thread (divided by --threads) it is the
// time the work had on a core, which a box shared with other jobs makes differ
// from the wall time.
double process_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto &e : v)
    e = dist(rng);
  return v;
}

} // namespace

int main(int argc, char **argv) {
  int64_t threads = 2, frames = 96, reps = 5;
  bool check = false;
  std::string stages; // comma-separated names; empty = all (a profiler looks at
                      // one stage)
  f32::Isa isa = f32::best_isa();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--threads")
      threads = parse_positive("--threads", value());
    else if (a == "--frames")
      frames = parse_positive("--frames", value());
    else if (a == "--reps")
      reps = parse_positive("--reps", value());
    else if (a == "--stage") {
      const std::string list = value();
      stages.clear();
      size_t from = 0;
      for (;;) {
        const size_t comma = list.find(',', from);
        const std::string name = list.substr(from, comma - from);
        if (std::none_of(std::begin(kStages), std::end(kStages),
                         [&](const Stage &st) { return name == st.name; }))
          usage_error("unknown stage '" + name + "' in --stage (known: up0,up1,up2,up3)");
        stages += "," + name + ",";
        if (comma == std::string::npos)
          break;
        from = comma + 1;
      }
    } else if (a == "--check")
      check = true;
    else if (a == "--isa") {
      const std::string v = value();
      if (v == "generic")
        isa = f32::Isa::generic;
      else if (v == "avx2")
        isa = f32::Isa::avx2;
      else if (v == "avx512")
        isa = f32::Isa::avx512;
      else
        usage_error("unknown --isa '" + v + "'");
      if (!f32::isa_supported(isa))
        usage_error("this CPU cannot run --isa " + v);
    } else
      usage_error("unknown argument '" + a + "'");
  }

  convbench::ThreadPool pool{int(threads)};
  std::printf("cpu-f32 (%s tile), %lld threads, %lld frames, median of %lld reps\n",
              f32::isa_name(isa), (long long)threads, (long long)frames, (long long)reps);
  std::printf("%-5s %5s %5s %3s %2s %6s %7s %10s %10s %10s %8s %10s %8s%s\n", "stage", "cin",
              "cout", "K", "s", "l_in", "GFLOP", "median_us", "min_us", "cpu_us", "GFLOP/s",
              "torch16_us", "vs_torch", check ? "  rel_l2_vs_f64" : "");
  for (const Stage &st : kStages) {
    if (!stages.empty() && stages.find(std::string(",") + st.name + ",") == std::string::npos)
      continue;
    ConvShape s;
    s.op = ConvOp::transposed;
    s.cin = st.cin;
    s.cout = st.cout;
    s.k = st.k;
    s.stride = st.stride;
    s.padding = (st.k - st.stride) / 2;
    s.l_in = frames * st.l_in_per_frame;
    s.validate();
    const auto x = random_values(s.input_elems(), 1), w = random_values(s.weight_elems(), 2),
               b = random_values(s.cout, 3);
    std::vector<float> y(size_t(s.output_elems()));
    std::vector<double> us, cpu_us;
    for (int64_t r = 0; r <= reps; ++r) { // rep 0 warms caches and pages, not counted
      const double c0 = process_cpu_us();
      const auto t0 = std::chrono::steady_clock::now();
      f32::conv(isa, s, x.data(), w.data(), b.data(), y.data(), pool);
      const auto t1 = std::chrono::steady_clock::now();
      const double c1 = process_cpu_us();
      if (r > 0) {
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        cpu_us.push_back((c1 - c0) / double(threads));
      }
    }
    std::sort(us.begin(), us.end());
    const double med = us[us.size() / 2];
    std::sort(cpu_us.begin(), cpu_us.end());
    const double gflop = s.flops() * 1e-9;
    // PyTorch's time was measured at 96 frames and 16 threads only.
    const bool comparable = frames == 96;
    std::printf("%-5s %5lld %5lld %3lld %2lld %6lld %7.3f %10.0f %10.0f %10.0f %8.1f "
                "%10.0f "
                "%8s",
                st.name, (long long)s.cin, (long long)s.cout, (long long)s.k, (long long)s.stride,
                (long long)s.l_in, gflop, med, us.front(), cpu_us[cpu_us.size() / 2],
                gflop / (med * 1e-6), st.torch_us_16t_96f,
                comparable ? (std::to_string(st.torch_us_16t_96f / med).substr(0, 5) + "x").c_str()
                           : "-");
    if (check) {
      std::vector<float> ref(y.size());
      convbench::conv_cpu_f64(s, x.data(), w.data(), b.data(), ref.data(), pool);
      double num = 0, den = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        num += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
        den += double(ref[i]) * ref[i];
      }
      std::printf("  %.3g", std::sqrt(num / den));
    }
    std::printf("\n");
  }
  std::printf("vs_torch = PyTorch CPU f32 time (16 threads of the GPU machine) / this "
              "median: >= 1 "
              "means at least as fast; only meaningful at --threads 16 there. cpu_us = "
              "median\n"
              "process CPU time per rep / threads (robust to other jobs taking cores; "
              "the wall\n"
              "time is what counts on a quiet machine).\n");
  return 0;
}
