// Device gates of the tensor-core arms (label "gpu"): cuda-f64-dmma within one f32 ulp per cell
// of conv_cpu_f64 (relative L2 <= 1e-9), cuda-tf32 within relative L2 5e-3 and above 1e-5 (the
// tensor cores really ran on tf32 operands), cuda-f32x3 within relative L2 1e-4 (cuda-f32's
// bound) and at least 10x under cuda-tf32 on the same data (the lo parts really ran), every
// output cell written (NaN poison before each launch), on every upsample stage of the three
// model families at 1 and 96 frames and on random odd shapes; each arm as it runs here (on an
// H100/H200 tf32 and f32x3 run the wgmma kernels) and the WMMA kernels with and without their
// workspace. The Wgmma tests hold the wgmma kernels on their own: the forward Conv1d stages,
// every column tile and split, determinism, random shapes of both ops, and two planted faults;
// the Dmma tests the f64 DMMA kernels likewise (every tile and split, determinism, random shapes
// of both ops, two planted faults).
// Without a GPU each test SKIPS with the reason (the Wgmma and Dmma ones also without an sm_90
// device).
// The bounds and why they hold are in tc_support.hpp; the host twins of these gates are
// tc_emulation_test.cpp and wg_emulation_test.cpp.
//
// Teeth: the faults planted in the shared tile code (x window one column right, slot without
// the phase offset, wrong c_lo, last chunk dropped, a phase's last cell not stored) each fail
// the emulation twin on CI, which runs the same functions (see tc_emulation_test.cpp). What only
// these device gates hold -- the bias add, the WMMA fragment pointers and pitches, the epilogue
// through shared memory, f32x3's hi and lo planes -- is seen failing only on the GPU. Seen on
// the H200: f32x3 summed in one MMA accumulator over all of K (the MMA's truncating f32
// accumulation) failed the 10x gain at 96 frames on up0 of both 44 kHz models (4.3e-5 against
// tf32's 2.6e-4), and would fail the cuda-f32 comparison by ~20x; with the chunk sums f32x3 is
// 3.2e-7 against cuda-f32's 7.0e-7. Still owed there: plant (1) `v += E(bias[...])` removed,
// (2) `+ delta` removed from the B-fragment slot, (3) the lo plane offset `p * L::kX` dropped
// from the B-fragment load (f32x3 then runs as tf32) in tc_kernel.cuh, and see
// EveryVocoderStageAt1Frame and RandomOddShapes fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "convbench/cpu_conv.hpp"
#include "convbench/cuda_conv.hpp"
#include "convbench/tc_conv.hpp"
#include "device_support.hpp"
#include "fast_support.hpp"
#include "tc_support.hpp"
#include "wg_launch.hpp"

namespace convbench::tc {
namespace {

using peer_testing::DeviceFloats;
using peer_testing::Problem;

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!convbench::cuda::device_available(&why))                                                  \
      GTEST_SKIP() << "no usable GPU, tensor-core kernels not run: " << why;                       \
  } while (0)

using convbench::testing::describe;
using convbench::testing::reference_f64;

// One call of the arm's kernel with options o, output NaN-poisoned before the launch (and the
// WMMA workspace, through the kernel's own poison-free contract: a slice the reduction reads but
// no block wrote shows up as a wrong cell).
std::vector<float> run_tc(const Problem &pr, Precision p, const TcOptions &o = {}) {
  peer_testing::Stream st;
  DeviceFloats x(pr.x), w(pr.w), b(pr.shape.bias ? pr.b : std::vector<float>{0.0f});
  DeviceFloats y(size_t(pr.shape.output_elems()));
  TcConv conv(pr.shape, p, w.get(), b.get(), st.get(), o);
  y.poison(st.get());
  conv.launch(x.get(), y.get());
  st.sync();
  return y.download();
}

// The runs of one problem: each arm as it runs on this device (on an H100/H200 tf32 and f32x3 run
// the wgmma kernels, f64 the DMMA kernels; elsewhere the WMMA kernels with their workspace), then
// the WMMA kernels with the workspace (where the arm did not already run them) and without it.
enum class Run { arm, wmma_workspace, wmma_unsplit };
constexpr Run kRuns[] = {Run::arm, Run::wmma_workspace, Run::wmma_unsplit};
const char *run_name(Run r) {
  return r == Run::arm ? "arm" : r == Run::wmma_workspace ? "wmma workspace" : "wmma unsplit";
}
// Whether tf32 and f32x3 run the wgmma kernels for s here.
bool wgmma_here(const ConvShape &s) {
  return tc_supported(s, Precision::tf32, nullptr) &&
         tc_kernel_name(s, Precision::tf32).rfind("wgmma", 0) == 0;
}
// Whether f64 runs the DMMA kernels for s here.
bool dmma_here(const ConvShape &s) {
  return tc_supported(s, Precision::f64, nullptr) &&
         tc_kernel_name(s, Precision::f64).rfind("dmma", 0) == 0;
}
// The checks check_all makes on a problem of shape s.
int checks_per_problem(const ConvShape &s) {
  return 6 + (wgmma_here(s) ? 2 : 0) + (dmma_here(s) ? 1 : 0);
}

// f64 through the tensor-core arm with options o against the reference (check_f64: every cell
// within one f32 ulp, few cells off, relative L2 <= 1e-9) and every cell written. Returns whether
// it held.
bool check_f64_run(const Problem &pr, const std::vector<float> &ref, const TcOptions &o,
                   const std::string &where, int64_t *differing) {
  const auto y = run_tc(pr, Precision::f64, o);
  EXPECT_EQ(peer_testing::nan_cells(y), 0) << "f64-dmma left cells unwritten, " << where;
  const auto c = testing::check_f64(y, ref);
  EXPECT_TRUE(c.ok(ref.size())) << "f64-dmma " << where << ": " << c.differing << " differing, "
                                << c.beyond_ulp << " beyond one ulp (" << c.first_bad
                                << "), rel-L2 " << c.rel_l2;
  *differing += c.differing;
  return c.ok(ref.size()) && peer_testing::nan_cells(y) == 0;
}

int check_run(const Problem &pr, const std::vector<float> &ref, Run r, const std::string &what,
              double *worst_tf32, double *worst_f32x3, double *worst_f32, int64_t *f64_differing) {
  const std::string where = what + " (" + run_name(r) + "): " + describe(pr.shape);
  TcOptions o;
  o.wmma = r != Run::arm;
  o.workspace = r != Run::wmma_unsplit;
  int checks = 0;
  // Off Hopper the f64 arm is the WMMA kernel with its workspace: that run is the arm's.
  if (r != Run::wmma_workspace || dmma_here(pr.shape)) {
    check_f64_run(pr, ref, o, where, f64_differing);
    ++checks;
  }
  if (r == Run::wmma_workspace && !wgmma_here(pr.shape))
    return checks; // the arm run was this one
  const auto y32 = run_tc(pr, Precision::tf32, o);
  EXPECT_EQ(peer_testing::nan_cells(y32), 0) << "tf32 left cells unwritten, " << where;
  const double e = testing::relative_l2(y32, ref);
  EXPECT_LE(e, testing::kTf32RelL2) << "tf32 " << where;
  // Every cell here has products of tf32-rounded operands (up to 2^-11 relative each): over a few
  // hundred cells their error cannot average below 1e-5 unless the operands were not rounded,
  // i.e. unless this ran as f32 math. (A handful of cells could by chance, so small outputs
  // are exempt.)
  if (ref.size() >= 256) {
    EXPECT_GE(e, testing::kTf32MinRelL2) << "tf32 looks like f32 math, " << where;
  }
  *worst_tf32 = std::max(*worst_tf32, e);
  const auto yx3 = run_tc(pr, Precision::f32x3, o);
  EXPECT_EQ(peer_testing::nan_cells(yx3), 0) << "f32x3 left cells unwritten, " << where;
  const double ex3 = testing::relative_l2(yx3, ref);
  EXPECT_LE(ex3, testing::kF32x3RelL2) << "f32x3 " << where;
  // The lo parts ran: plain tf32 on the same data is at least 10x worse (small outputs exempt,
  // as above).
  if (ref.size() >= 256) {
    EXPECT_LE(ex3 * testing::kF32x3MinGain, e)
        << "f32x3 not 10x under tf32 (" << ex3 << " vs " << e << "), " << where;
  }
  *worst_f32x3 = std::max(*worst_f32x3, ex3);
  // f32 results at tensor-core speed: no worse than cuda-f32 (FFMA, f32 accumulate) on the same
  // data, with 2x slack for the order of the sums, or under the split's own floor where the
  // reduction is too short for the sums to matter (small outputs exempt, as above).
  std::vector<float> yf(ref.size());
  convbench::cuda::per_call_conv(pr.shape, convbench::cuda::Accum::f32, pr.x.data(), pr.w.data(),
                                 pr.shape.bias ? pr.b.data() : nullptr, yf.data());
  const double ef = testing::relative_l2(yf, ref);
  if (ref.size() >= 256) {
    EXPECT_LE(ex3, std::max(testing::kF32x3VsF32 * ef, testing::kF32x3Floor))
        << "f32x3 less accurate than cuda-f32 (" << ex3 << " vs " << ef << "), " << where;
  }
  *worst_f32 = std::max(*worst_f32, ef);
  return checks + 2;
}

// Every run on one problem against one reference; returns the checks made.
int check_all(const Problem &pr, const std::string &what, double *worst_tf32, double *worst_f32x3,
              double *worst_f32, int64_t *f64_differing) {
  const auto ref = reference_f64(pr);
  int checks = 0;
  for (Run r : kRuns)
    checks += check_run(pr, ref, r, what, worst_tf32, worst_f32x3, worst_f32, f64_differing);
  return checks;
}

void vocoder_stages(int64_t frames) {
  int checks = 0, expected = 0;
  double worst = 0.0, worst_x3 = 0.0, worst_f32 = 0.0;
  int64_t differing = 0;
  for (const auto &st : peer_testing::all_stages(frames)) {
    checks += check_all(peer_testing::random_problem(st.shape, 42),
                        st.model + " " + st.name + " @" + std::to_string(frames), &worst, &worst_x3,
                        &worst_f32, &differing);
    expected += checks_per_problem(st.shape);
  }
  EXPECT_EQ(checks, expected);
  EXPECT_GE(checks, 6 * 16);
  std::printf("%lld frames: worst rel-L2 tf32 %.3g, f32x3 %.3g, cuda-f32 %.3g; f64-dmma cells one "
              "ulp off: %lld\n",
              (long long)frames, worst, worst_x3, worst_f32, (long long)differing);
}

TEST(TcGpu, EveryVocoderStageAt1Frame) {
  SKIP_WITHOUT_GPU();
  vocoder_stages(1);
}

TEST(TcGpu, EveryVocoderStageAt96Frames) {
  SKIP_WITHOUT_GPU();
  vocoder_stages(96);
}

// Odd channels, lengths, padding (also beyond K), output_padding, batch, strides 1..8, M 1..4,
// bias on and off; shapes with several oc, u and chunk tiles and ragged tails in each.
TEST(TcGpu, RandomOddShapes) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(7);
  int checks = 0, expected = 0, drawn = 0;
  double worst = 0.0, worst_x3 = 0.0, worst_f32 = 0.0;
  int64_t differing = 0;
  while (drawn < 60) {
    const ConvShape s = peer_testing::random_transposed_shape(
        rng, {3, 300, 200, 400, 8, 3},
        [](const ConvShape &c) { return wmma_supported(c, nullptr); });
    ++drawn;
    checks += check_all(peer_testing::random_problem(s, uint64_t(drawn)), "random", &worst,
                        &worst_x3, &worst_f32, &differing);
    expected += checks_per_problem(s);
  }
  EXPECT_EQ(checks, expected);
  EXPECT_GE(checks, 6 * 60);
}

TEST(TcGpu, RefusesUnsupportedShapes) {
  SKIP_WITHOUT_GPU();
  ConvShape s = peer_testing::all_stages(96)[0].shape;
  s.op = ConvOp::forward;
  s.stride = 2; // no kernel takes a strided Conv1d
  DeviceFloats x(1), w(1), b(1), y(1);
  EXPECT_THROW(launch_wmma_tf32(s, x.get(), w.get(), b.get(), y.get(), nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_wmma_f32x3(s, x.get(), w.get(), b.get(), y.get(), nullptr),
               std::invalid_argument);
  EXPECT_THROW(launch_wmma_f64(s, x.get(), w.get(), b.get(), y.get(), nullptr),
               std::invalid_argument);
  for (Precision p : {Precision::tf32, Precision::f32x3, Precision::f64}) {
    std::string why;
    EXPECT_FALSE(tc_supported(s, p, &why));
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(TcConv(s, p, w.get(), b.get(), nullptr), std::invalid_argument);
  }
}

// ---- the wgmma kernels (sm_90a) on their own ----

// Skips unless `here` (wgmma_here, dmma_here) holds for up0 at one frame on this device.
#define SKIP_WITHOUT_HOPPER(here, precision, kernels)                                              \
  do {                                                                                             \
    SKIP_WITHOUT_GPU();                                                                            \
    const ConvShape probe_ = peer_testing::all_stages(1)[0].shape;                                 \
    if (!here(probe_))                                                                             \
      GTEST_SKIP() << "the " kernels " kernels do not run on this device: "                        \
                   << tc_kernel_name(probe_, precision);                                           \
  } while (0)
#define SKIP_WITHOUT_WGMMA() SKIP_WITHOUT_HOPPER(wgmma_here, Precision::tf32, "wgmma")
#define SKIP_WITHOUT_DMMA() SKIP_WITHOUT_HOPPER(dmma_here, Precision::f64, "DMMA")

// A random shape of either op the Hopper kernels take: forward stride 1 (kernels 1-9, dilations
// 1-3, any padding) or transposed (strides 1-9, dilation 1, any K, padding and output_padding),
// batch 1-2, channel counts that are not multiples of a chunk.
ConvShape random_hopper_shape(std::mt19937_64 &rng, ConvOp op) {
  ConvShape s = convbench::testing::random_shape(rng, op, 300, 400, 1, 300);
  if (op == ConvOp::forward) {
    s.stride = 1;
  } else {
    s.dilation = 1;
    s.stride = std::uniform_int_distribution<int64_t>(1, 9)(rng);
    s.output_padding = std::min<int64_t>(s.output_padding, s.stride - 1);
  }
  return s;
}

// tf32 and f32x3 through the wgmma kernels with options o against the reference: the arms' bounds
// (as check_run), every cell written, f32x3 at least 10x under tf32. Returns 2 (the checks).
int check_wgmma(const Problem &pr, const std::vector<float> &ref, const TcOptions &o,
                const std::string &where, double *worst_tf32, double *worst_f32x3) {
  TcOptions x3 = o;
  if (x3.along == 1 && x3.n > 128)
    x3.n = 0; // f32x3 has no rows-on-M tile wider than 128: its plan's own
  if (x3.along == 2 && x3.gpb * x3.n > 48)
    x3 = {}; // nor positions-on-M accumulators beyond 96: the arm's plan
  const auto y32 = run_tc(pr, Precision::tf32, o);
  const auto yx3 = run_tc(pr, Precision::f32x3, x3);
  EXPECT_EQ(peer_testing::nan_cells(y32) + peer_testing::nan_cells(yx3), 0)
      << "cells left unwritten, " << where;
  const double e = testing::relative_l2(y32, ref), ex3 = testing::relative_l2(yx3, ref);
  EXPECT_LE(e, testing::kTf32RelL2) << "tf32 " << where;
  EXPECT_LE(ex3, testing::kF32x3RelL2) << "f32x3 " << where;
  if (ref.size() >= 256) {
    EXPECT_GE(e, testing::kTf32MinRelL2) << "tf32 looks like f32 math, " << where;
    EXPECT_LE(ex3 * testing::kF32x3MinGain, e)
        << "f32x3 not 10x under tf32 (" << ex3 << " vs " << e << "), " << where;
  }
  *worst_tf32 = std::max(*worst_tf32, e);
  *worst_f32x3 = std::max(*worst_f32x3, ex3);
  return 2;
}

std::string kernel_of(const Problem &pr, Precision p, const TcOptions &o) {
  DeviceFloats w(pr.w), b(pr.shape.bias ? pr.b : std::vector<float>{0.0f});
  return TcConv(pr.shape, p, w.get(), b.get(), nullptr, o).kernel_name();
}

// The wgmma variants a test runs for precision p: rows on M at every column tile with the given
// splits, positions on M at every row width with one group per block (and two where `pairs`),
// each with one input window per chunk (where the taps' span fits) and with one per tap.
std::vector<TcOptions> wgmma_variants(Precision p, std::initializer_list<int> splits, bool pairs) {
  std::vector<TcOptions> v;
  for (int n : {64, 96, 128, 192, 256})
    for (int split : splits)
      if (p == Precision::tf32 || n <= 128) {
        TcOptions o;
        o.along = 1;
        o.n = n;
        o.split = split;
        v.push_back(o);
      }
  for (int n : {8, 16, 24, 32, 48, 64, 96, 128, 192})
    for (int gpb : {1, 2}) {
      const int acc = gpb * n / 2 * (p == Precision::f32x3 ? 2 : 1);
      if ((gpb == 2 && !pairs) || acc > 96)
        continue;
      for (int window : {0, 1}) {
        TcOptions o;
        o.along = 2;
        o.n = n;
        o.gpb = gpb;
        o.window = window;
        v.push_back(o);
      }
    }
  return v;
}
std::string variant_name(const TcOptions &o) {
  return o.along == 1 ? "rows n" + std::to_string(o.n) + " split " + std::to_string(o.split)
                      : "positions n" + std::to_string(o.n) + " groups " + std::to_string(o.gpb) +
                            (o.window == 1 ? " window per tap" : "");
}

// A Conv1d of K = 1 (a plain GEMM) whose weight picks one input channel per output channel,
// w[oc][ic] = (ic == oc), over x[ic][n] = (ic % 32) * 64 + n (integers below 2048: exact in tf32,
// with zero lo parts), so every output cell is exactly one input cell and names where it came
// from: a wrong cell prints the (channel mod 32, column) it read, which tells a tile layout,
// descriptor or shift fault apart. 256 channels (8 chunks) and 192 columns, every variant of both
// orientations (rows on M with the splits 1 and 4); exact equality.
TEST(Wgmma, IdentityGemmDecodesEveryCell) {
  SKIP_WITHOUT_WGMMA();
  ConvShape s = convbench::testing::amp_shape(1, 1, 1, 192);
  s.cin = 256;
  s.cout = 128;
  s.bias = false;
  Problem pr{s,
             std::vector<float>(size_t(s.input_elems())),
             std::vector<float>(size_t(s.weight_elems()), 0.0f),
             {}};
  for (int ic = 0; ic < 256; ++ic)
    for (int n = 0; n < 192; ++n)
      pr.x[size_t(ic) * 192 + n] = float((ic % 32) * 64 + n % 64);
  for (int oc = 0; oc < 128; ++oc)
    pr.w[size_t(oc) * 256 + oc] = 1.0f;
  int runs = 0, expected = 0;
  for (Precision p : {Precision::tf32, Precision::f32x3})
    for (const TcOptions &o : wgmma_variants(p, {1, 4}, false)) {
      ++expected;
      const std::string k = kernel_of(pr, p, o) + " [" + variant_name(o) + "]";
      const auto y = run_tc(pr, p, o);
      int bad = 0;
      for (int oc = 0; oc < 128; ++oc)
        for (int n = 0; n < 192; ++n) {
          const float want = float((oc % 32) * 64 + n % 64), got = y[size_t(oc) * 192 + n];
          if (got == want)
            continue;
          if (bad++ < 8)
            ADD_FAILURE() << k << ": y[" << oc << "][" << n << "] = " << got << " (channel%32 "
                          << int(got) / 64 << ", column%64 " << int(got) % 64
                          << "), want channel%32 " << oc % 32 << ", column%64 " << n % 64;
        }
      EXPECT_EQ(bad, 0) << k;
      ++runs;
    }
  EXPECT_EQ(runs, expected);
  EXPECT_GE(runs, 2 * (5 + 9));
}

// The forward Conv1d stages of the default model at 96 frames (every AMP convolution of block 0:
// 768 channels, kernels 3/7/11, dilations 1/3/5; conv_pre; conv_post), each against cuda-f32 too:
// f32x3 no less accurate than it (as check_run).
TEST(Wgmma, ForwardStagesOfTheGenerator) {
  SKIP_WITHOUT_WGMMA();
  std::vector<std::pair<std::string, ConvShape>> shapes;
  for (int64_t k : {3, 7, 11})
    for (int64_t d : {1, 3, 5})
      shapes.push_back({"amp0.k" + std::to_string(k) + ".d" + std::to_string(d),
                        convbench::testing::amp_shape(768, k, d, 768)});
  ConvShape pre = convbench::testing::amp_shape(1, 7, 1, 96);
  pre.cin = 128;
  pre.cout = 1536;
  shapes.push_back({"pre", pre});
  ConvShape post = convbench::testing::amp_shape(1, 7, 1, 96 * 512);
  post.cin = 24;
  post.cout = 1;
  shapes.push_back({"post", post});
  if (convbench::testing::sanitizer_small())
    shapes.resize(2);
  int checks = 0;
  double worst = 0.0, worst_x3 = 0.0;
  for (const auto &[name, s] : shapes) {
    const Problem pr = peer_testing::random_problem(s, 17);
    const auto ref = reference_f64(pr);
    checks += check_wgmma(pr, ref, {}, name, &worst, &worst_x3);
    std::vector<float> yf(ref.size());
    convbench::cuda::per_call_conv(s, convbench::cuda::Accum::f32, pr.x.data(), pr.w.data(),
                                   pr.b.data(), yf.data());
    const double ef = testing::relative_l2(yf, ref);
    const double ex3 = testing::relative_l2(run_tc(pr, Precision::f32x3), ref);
    EXPECT_LE(ex3, std::max(testing::kF32x3VsF32 * ef, testing::kF32x3Floor))
        << name << ": f32x3 " << ex3 << " vs cuda-f32 " << ef;
    std::printf("%s [%s]: rel-L2 f32x3 %.3g, cuda-f32 %.3g\n", name.c_str(),
                kernel_of(pr, Precision::tf32, {}).c_str(), ex3, ef);
  }
  EXPECT_EQ(checks, 2 * int(shapes.size()));
  std::printf("forward stages: worst rel-L2 tf32 %.3g, f32x3 %.3g\n", worst, worst_x3);
}

// Every variant of both orientations (rows on M with splits 1, 2, 3 and 8; positions on M with one
// group per block, and two on the transposed shape) on a transposed and a forward shape (a stage of
// each kind, small enough for every variant), and each run twice: the bits must not move (the
// cluster reduction adds the ranks in a fixed order).
TEST(Wgmma, EveryVariantWithinToleranceAndDeterministic) {
  SKIP_WITHOUT_WGMMA();
  const ConvShape up1 = peer_testing::model_stages(peer_testing::model_families()[0], 8)[1].shape;
  const ConvShape amp = convbench::testing::amp_shape(256, 7, 3, 300); // 56 iterations: 8 ranks
  int checks = 0, runs = 0, expected = 0;
  double worst = 0.0, worst_x3 = 0.0;
  for (int which = 0; which < 2; ++which) {
    const ConvShape &s = which == 0 ? up1 : amp;
    const Problem pr = peer_testing::random_problem(s, 23);
    const auto ref = reference_f64(pr);
    for (const TcOptions &o : wgmma_variants(Precision::tf32, {1, 2, 3, 8}, which == 0)) {
      const std::string k = kernel_of(pr, Precision::tf32, o) + " [" + variant_name(o) + "]";
      EXPECT_NE(k.find("m64n" + std::to_string(o.n) + "k8"), std::string::npos) << k;
      EXPECT_NE(k.find(o.along == 1 ? "rows-on-M" : "positions-on-M"), std::string::npos) << k;
      checks += check_wgmma(pr, ref, o, k, &worst, &worst_x3);
      expected += 2;
      for (Precision p : {Precision::tf32, Precision::f32x3}) {
        TcOptions q = o;
        if (p == Precision::f32x3 &&
            ((q.along == 1 && q.n > 128) || (q.along == 2 && q.gpb * q.n > 48)))
          q = {};
        const auto a = run_tc(pr, p, q), b = run_tc(pr, p, q);
        EXPECT_EQ(convbench::testing::differing_cells(a, b), 0) << "not deterministic: " << k;
        ++runs;
      }
    }
  }
  EXPECT_EQ(checks, expected);
  EXPECT_EQ(runs, expected);
  EXPECT_GE(runs, 2 * 2 * (5 * 4 + 9));
  std::printf("every variant: worst rel-L2 tf32 %.3g, f32x3 %.3g\n", worst, worst_x3);
}

// Positions on M at each window width: AMP convolutions whose taps span 2, 18 and 50 positions
// (one window of 136, 168 and 232 per chunk), and the same with one window per tap; 40 channels:
// two chunks, the second partly past the input's channels.
TEST(Wgmma, EveryWindowWidth) {
  SKIP_WITHOUT_WGMMA();
  int checks = 0;
  double worst = 0.0, worst_x3 = 0.0;
  const int widths[][3] = {{3, 1, 136}, {7, 3, 168}, {11, 5, 232}};
  for (const auto &[k, d, width] : widths) {
    const ConvShape s = convbench::testing::amp_shape(40, k, d, 300);
    const Problem pr = peer_testing::random_problem(s, uint64_t(k * 10 + d));
    const auto ref = reference_f64(pr);
    for (int window : {0, 1}) {
      TcOptions o;
      o.along = 2;
      o.n = 48;
      o.gpb = 1;
      o.window = window;
      const std::string name = kernel_of(pr, Precision::tf32, o);
      const std::string per_chunk = "window " + std::to_string(width) + " per chunk";
      EXPECT_EQ(name.find(per_chunk) != std::string::npos, window == 0) << name;
      checks += check_wgmma(pr, ref, o, name + " [" + variant_name(o) + "]", &worst, &worst_x3);
    }
  }
  EXPECT_EQ(checks, 2 * 3 * 2);
  std::printf("window widths: worst rel-L2 tf32 %.3g, f32x3 %.3g\n", worst, worst_x3);
}

// Random shapes of both ops the wgmma kernels take (random_hopper_shape).
TEST(Wgmma, RandomShapesOfBothOps) {
  SKIP_WITHOUT_WGMMA();
  std::mt19937_64 rng(31);
  int checks = 0, drawn = 0;
  double worst = 0.0, worst_x3 = 0.0;
  const int n = convbench::testing::sanitizer_small() ? 4 : 60;
  while (drawn < n) {
    const ConvOp op = drawn % 2 ? ConvOp::forward : ConvOp::transposed;
    const ConvShape s = random_hopper_shape(rng, op);
    if (!tc_supported(s, Precision::tf32, nullptr) || !wgmma_here(s))
      continue;
    ++drawn;
    const Problem pr = peer_testing::random_problem(s, uint64_t(drawn));
    checks += check_wgmma(pr, reference_f64(pr), {}, describe(s), &worst, &worst_x3);
  }
  EXPECT_EQ(checks, 2 * n);
  std::printf("random shapes: worst rel-L2 tf32 %.3g, f32x3 %.3g\n", worst, worst_x3);
}

// The checks above have teeth: a cluster reduction that leaves out the last rank (rows on M, split
// 3), and a kernel that skips the last tap of every chunk (both orientations), must each fail them
// (on both arms).
TEST(Wgmma, PlantedFaultsAreCaught) {
  SKIP_WITHOUT_WGMMA();
  const ConvShape s = convbench::testing::amp_shape(96, 3, 1, 200);
  const Problem pr = peer_testing::random_problem(s, 5);
  const auto ref = reference_f64(pr);
  int caught = 0;
  for (int along : {1, 2})
    for (int planted : {1, 2})
      for (Precision p : {Precision::tf32, Precision::f32x3}) {
        if (along == 2 && planted == 1)
          continue; // no split with positions on M
        TcOptions o;
        o.along = along;
        o.split = along == 1 ? 3 : 0; // 3 chunks x 3 taps: three ranks of three
        o.planted = planted;
        // The variant ran as forced (a forced variant the shape cannot take falls back to the
        // plan's choice, where the fault may not apply).
        EXPECT_NE(kernel_of(pr, p, o).find(along == 1 ? "rows-on-M" : "positions-on-M"),
                  std::string::npos);
        if (along == 1) {
          EXPECT_NE(kernel_of(pr, p, o).find("split 3"), std::string::npos);
        }
        const double e = testing::relative_l2(run_tc(pr, p, o), ref);
        EXPECT_GT(e, testing::kTf32RelL2)
            << "planted fault " << planted << " not caught by " << to_string(p) << " "
            << kernel_of(pr, p, o) << " (rel-L2 " << e << ")";
        caught += e > testing::kTf32RelL2;
        o.planted = 0;
        EXPECT_LE(testing::relative_l2(run_tc(pr, p, o), ref), testing::kTf32RelL2);
      }
  EXPECT_EQ(caught, 6);
}

// Persistent blocks give the bits of one-tile blocks (each tile's arithmetic in the same order),
// on Conv1d long enough that the device's blocks take several tiles each (401 tiles of 128
// positions; kernels 3, 7 and 11: every window width; 40 channels: two chunks, the second partly
// past the input's), both maths, within the arms' bounds. The device test of the persistent
// walk: a block that stepped one tile too far leaves cells unwritten (NaN) and fails here.
TEST(Wgmma, PersistentBlocksEqualOneTileBlocks) {
  SKIP_WITHOUT_WGMMA();
  int compared = 0;
  const int shapes = convbench::testing::sanitizer_small() ? 1 : 3;
  const int widths[][2] = {{3, 1}, {7, 3}, {11, 5}};
  for (int i = 0; i < shapes; ++i) {
    const auto [k, d] = widths[i];
    const ConvShape s = convbench::testing::amp_shape(40, k, d, 128 * 400 + 4);
    const Problem pr = peer_testing::random_problem(s, uint64_t(k));
    const auto ref = reference_f64(pr);
    for (Precision p : {Precision::tf32, Precision::f32x3}) {
      if (convbench::testing::sanitizer_small() && p == Precision::tf32)
        continue; // f32x3's grid is the smaller (one block a multiprocessor): more tiles a block
      TcOptions one, per;
      one.persist = 1;
      per.persist = 2;
      const std::string kp = kernel_of(pr, p, per), k1 = kernel_of(pr, p, one);
      ASSERT_NE(kp.find("persistent"), std::string::npos) << kp;
      ASSERT_EQ(k1.find("persistent"), std::string::npos) << k1;
      const auto a = run_tc(pr, p, one), b = run_tc(pr, p, per);
      EXPECT_EQ(peer_testing::nan_cells(b), 0) << "cells left unwritten, " << kp;
      EXPECT_EQ(convbench::testing::differing_cells(a, b), 0) << kp << " against " << k1;
      EXPECT_LE(testing::relative_l2(b, ref),
                p == Precision::tf32 ? testing::kTf32RelL2 : testing::kF32x3RelL2)
          << kp;
      ++compared;
    }
  }
  EXPECT_EQ(compared, convbench::testing::sanitizer_small() ? 1 : 2 * shapes);
}

// The plans count the blocks a multiprocessor holds as the device does
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor of the plan's kernel, its threads and shared
// memory): every stage and AMP Conv1d of the default model at 96, 384 and 1536 frames, both maths.
// A plan that counts more than the device holds prices blocks that wait, and launches persistent
// blocks that run in two waves.
TEST(Wgmma, PlansCountTheBlocksTheDeviceHolds) {
  SKIP_WITHOUT_WGMMA();
  int checked = 0, over = 0;
  for (int64_t frames : {96, 384, 1536}) {
    for (const auto &st :
         convbench::testing::stages_and_amp(convbench::testing::default_model(), frames))
      for (auto m : {convbench::tc::wg::Math::tf32, convbench::tc::wg::Math::f32x3}) {
        const auto q = convbench::tc::wg::plan(st.shape, m, convbench::device_facts());
        const int modelled = convbench::tc::wg::blocks_per_sm(q, convbench::tc::wg::smem_bytes(q));
        const int held = convbench::tc::wg::resident_blocks(q);
        EXPECT_GE(held, modelled) << st.name << "/" << frames << " "
                                  << convbench::tc::wg::kernel_name(q);
        over += held < modelled;
        ++checked;
      }
  }
  std::printf("plans whose blocks per multiprocessor the device holds: %d of %d\n", checked - over,
              checked);
}

// ---- the DMMA kernels (f64, sm_90a) on their own ----

// Every tile (128x64, 64x128, 64x64, 128x32, 32x128) at splits 1, 3 and 8 on a transposed and a
// forward shape, each run twice: the bits must not move (the split slices are added in order).
TEST(Dmma, EveryVariantWithinToleranceAndDeterministic) {
  SKIP_WITHOUT_DMMA();
  const ConvShape up1 = peer_testing::model_stages(peer_testing::model_families()[0], 8)[1].shape;
  const ConvShape amp = convbench::testing::amp_shape(256, 7, 3, 300); // 16 chunks x 7 taps
  int checks = 0;
  int64_t differing = 0;
  for (const ConvShape &s : {up1, amp}) {
    const Problem pr = peer_testing::random_problem(s, 29);
    const auto ref = reference_f64(pr);
    for (const auto &[bm, bn] : {std::pair{128, 64}, {64, 128}, {64, 64}, {128, 32}, {32, 128}})
      for (int split : {1, 3, 8}) {
        TcOptions o;
        o.bm = bm;
        o.n = bn;
        o.split = split;
        const std::string k = kernel_of(pr, Precision::f64, o);
        EXPECT_NE(k.find("tile " + std::to_string(bm) + "x" + std::to_string(bn) + "x16"),
                  std::string::npos)
            << k;
        check_f64_run(pr, ref, o, k + ": " + describe(s), &differing);
        const auto a = run_tc(pr, Precision::f64, o), b = run_tc(pr, Precision::f64, o);
        EXPECT_EQ(convbench::testing::differing_cells(a, b), 0) << "not deterministic: " << k;
        ++checks;
      }
  }
  EXPECT_EQ(checks, 2 * 5 * 3);
  std::printf("every DMMA variant: cells one ulp off: %lld\n", (long long)differing);
}

// Random shapes of both ops the DMMA kernels take (as Wgmma.RandomShapesOfBothOps).
TEST(Dmma, RandomShapesOfBothOps) {
  SKIP_WITHOUT_DMMA();
  std::mt19937_64 rng(37);
  int drawn = 0;
  int64_t differing = 0;
  const int n = convbench::testing::sanitizer_small() ? 4 : 60;
  while (drawn < n) {
    const ConvOp op = drawn % 2 ? ConvOp::forward : ConvOp::transposed;
    const ConvShape s = random_hopper_shape(rng, op);
    if (!dmma_here(s))
      continue;
    ++drawn;
    const Problem pr = peer_testing::random_problem(s, uint64_t(drawn));
    check_f64_run(pr, reference_f64(pr), {}, describe(s), &differing);
  }
  std::printf("random DMMA shapes: cells one ulp off: %lld\n", (long long)differing);
}

// The checks above have teeth: a kernel that drops the last iteration of every split, and one that
// reads the input window one position late, must each fail check_f64 (split 3 and unsplit).
TEST(Dmma, PlantedFaultsAreCaught) {
  SKIP_WITHOUT_DMMA();
  const ConvShape s = peer_testing::model_stages(peer_testing::model_families()[0], 4)[1].shape;
  const Problem pr = peer_testing::random_problem(s, 6);
  const auto ref = reference_f64(pr);
  int caught = 0;
  for (int planted : {1, 2})
    for (int split : {1, 3}) {
      TcOptions o;
      o.bm = 64;
      o.n = 64;
      o.split = split;
      o.planted = planted;
      const auto c = testing::check_f64(run_tc(pr, Precision::f64, o), ref);
      EXPECT_FALSE(c.ok(ref.size()))
          << "planted fault " << planted << " not caught by " << kernel_of(pr, Precision::f64, o);
      caught += !c.ok(ref.size());
      o.planted = 0;
      int64_t d = 0;
      EXPECT_TRUE(check_f64_run(pr, ref, o, "unplanted", &d));
    }
  EXPECT_EQ(caught, 4);
}

} // namespace
} // namespace convbench::tc
