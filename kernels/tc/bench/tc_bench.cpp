// tc_bench: a tiny timing mode for the tensor-core arms on the H200, outside bench_conv (no
// lease, no probes: bench_conv is the instrument). For every upsample stage of
// bigvgan_v2_44khz_128band_512x at each frames count: device-resident buffers; the output of
// cuda-tf32 and cuda-f64-dmma is first checked against the f64 reference (exit 3 on a wrong
// result), then each arm gets warm-up launches and `reps` launches timed one by one with CUDA
// events; prints median and min in us and TFLOP/s of the median (FLOPs = 2 cin cout K l_in).
//
//   tc_bench [--frames 96,384,1536] [--stages all|up0,up1] [--reps 20] [--warmup 5]
//
// The reference is the cuda-f64 arm (fast polyphase kernel, byte-identical to cpu-f64 by its
// own memcmp gates); at frames <= 96 it is itself checked against conv_cpu_f64 by memcmp first,
// so every number printed stands on a host-verified reference chain.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "convbench/cpu_conv.hpp"
#include "convbench/cuda_conv.hpp"
#include "convbench/tc_conv.hpp"
#include "device_support.hpp"
#include "fast_support.hpp"
#include "tc_support.hpp"

namespace {

using namespace convbench;
using peer_testing::DeviceFloats;

struct Options {
  std::vector<int64_t> frames{96, 384, 1536};
  std::vector<std::string> stages; // empty: all
  int reps = 20, warmup = 5;
};

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string t; std::getline(in, t, ',');)
    if (!t.empty())
      out.push_back(t);
  return out;
}

int64_t positive(const std::string &flag, const std::string &v) {
  size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != v.size() || n <= 0)
    throw std::invalid_argument(flag + " wants a positive integer, got '" + v + "'");
  return n;
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc)
      throw std::invalid_argument("unknown or incomplete argument '" + a + "' (see the header)");
    const std::string v = argv[++i];
    if (a == "--frames") {
      o.frames.clear();
      for (const auto &f : split(v))
        o.frames.push_back(positive(a, f));
    } else if (a == "--stages") {
      o.stages = v == "all" ? std::vector<std::string>{} : split(v);
    } else if (a == "--reps") {
      o.reps = int(positive(a, v));
    } else if (a == "--warmup") {
      o.warmup = int(positive(a, v));
    } else {
      throw std::invalid_argument("unknown argument '" + a + "'");
    }
  }
  return o;
}

using Launch = void (*)(const ConvShape &, const float *, const float *, const float *, float *,
                        void *, void *, size_t);

struct Workspace {
  DeviceFloats buf;
  size_t bytes;
};

double median_us(const ConvShape &s, Launch f, const float *x, const float *w, const float *b,
                 float *y, cudaStream_t st, Workspace &ws, const Options &o, double *min_us) {
  for (int i = 0; i < o.warmup; ++i)
    f(s, x, w, b, y, st, ws.buf.get(), ws.bytes);
  cudaEvent_t e0, e1;
  CB_TEST_CUDA(cudaEventCreate(&e0));
  CB_TEST_CUDA(cudaEventCreate(&e1));
  std::vector<double> us;
  for (int i = 0; i < o.reps; ++i) {
    CB_TEST_CUDA(cudaEventRecord(e0, st));
    f(s, x, w, b, y, st, ws.buf.get(), ws.bytes);
    CB_TEST_CUDA(cudaEventRecord(e1, st));
    CB_TEST_CUDA(cudaEventSynchronize(e1));
    float ms = 0;
    CB_TEST_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    us.push_back(1e3 * ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(us.begin(), us.end());
  *min_us = us.front();
  return us.size() % 2 ? us[us.size() / 2] : 0.5 * (us[us.size() / 2 - 1] + us[us.size() / 2]);
}

int run(const Options &o) {
  std::string why;
  if (!cuda::device_available(&why)) {
    std::fprintf(stderr, "tc_bench: no usable GPU: %s\n", why.c_str());
    return 2;
  }
  ThreadPool pool(int(std::max(1u, std::thread::hardware_concurrency())));
  const auto model = peer_testing::model_families()[0]; // bigvgan_v2_44khz_128band_512x
  std::printf("%-6s %6s %-9s %10s %10s %9s  %s\n", "stage", "frames", "arm", "median_us", "min_us",
              "TFLOP/s", "check");
  int wrong = 0;
  for (int64_t frames : o.frames)
    for (const auto &stage : peer_testing::model_stages(model, frames)) {
      if (!o.stages.empty() &&
          std::find(o.stages.begin(), o.stages.end(), stage.name) == o.stages.end())
        continue;
      const ConvShape &s = stage.shape;
      const auto pr = peer_testing::random_problem(s, 42);
      peer_testing::Stream st;
      DeviceFloats x(pr.x), w(pr.w), b(pr.b), y(size_t(s.output_elems()));
      // The reference: cuda-f64 (resident, byte-identical to cpu-f64).
      cuda::ResidentConv ref_conv(s, cuda::Accum::f64, pr.w.data(), pr.b.data());
      ref_conv.launch(x.get(), y.get());
      CB_TEST_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(ref_conv.stream())));
      const std::vector<float> ref = y.download();
      if (frames <= 96) {
        std::vector<float> host(ref.size());
        conv_cpu_f64(s, pr.x.data(), pr.w.data(), pr.b.data(), host.data(), pool);
        if (peer_testing::differing_cells(host, ref) != 0) {
          std::fprintf(stderr, "tc_bench: %s @%lld: the cuda-f64 reference differs from cpu-f64\n",
                       stage.name.c_str(), (long long)frames);
          return 3;
        }
      }
      for (tc::Precision p : {tc::Precision::tf32, tc::Precision::f64}) {
        const Launch f = p == tc::Precision::tf32 ? tc::launch_tc_tf32 : tc::launch_tc_f64;
        // The workspace a resident arm holds (split-K for shapes with few tiles).
        const size_t ws_bytes = tc::tc_workspace_bytes(s, p);
        Workspace ws{DeviceFloats((ws_bytes + sizeof(float) - 1) / sizeof(float)), ws_bytes};
        y.poison(st.get());
        f(s, x.get(), w.get(), b.get(), y.get(), st.get(), ws.buf.get(), ws.bytes);
        st.sync();
        const auto out = y.download();
        std::string check;
        bool ok;
        if (p == tc::Precision::tf32) {
          const double e = tc::testing::relative_l2(out, ref);
          ok = e <= tc::testing::kTf32RelL2;
          check = "rel-L2 " + std::to_string(e);
        } else {
          const auto c = tc::testing::check_f64(out, ref);
          ok = c.ok(ref.size());
          check = "rel-L2 " + std::to_string(c.rel_l2) + ", " + std::to_string(c.differing) +
                  " cells 1 ulp off" + (c.beyond_ulp ? ", BEYOND: " + c.first_bad : "");
        }
        if (!ok) {
          std::fprintf(stderr, "tc_bench: %s @%lld cuda-%s WRONG: %s\n", stage.name.c_str(),
                       (long long)frames, tc::to_string(p).c_str(), check.c_str());
          ++wrong;
          continue;
        }
        double min_us = 0;
        const double med =
            median_us(s, f, x.get(), w.get(), b.get(), y.get(), st.get(), ws, o, &min_us);
        std::printf("%-6s %6lld %-9s %10.1f %10.1f %9.2f  %s  [%s]\n", stage.name.c_str(),
                    (long long)frames, tc::to_string(p).c_str(), med, min_us,
                    s.flops() / (med * 1e-6) / 1e12, check.c_str(),
                    tc::tc_kernel_name(s, p).c_str());
        std::fflush(stdout);
      }
    }
  return wrong ? 3 : 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::invalid_argument &e) {
    std::fprintf(stderr, "tc_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tc_bench: %s\n", e.what());
    return 1;
  }
}
