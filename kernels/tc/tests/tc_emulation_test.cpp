// Runs the tensor-core kernels' tile code (src/tc_tile.hpp, the same staging and store functions
// the device kernel calls) on the host, block by block and chunk by chunk, with the GEMM done
// as the warps do it (phase rr, tap j reads x-window slot M - 1 - j + delta), and holds it to
// the arms' contracts against conv_cpu_f64: f64 within one f32 ulp per cell, tf32 within the
// relative L2 bound (operands rounded like __float_to_tf32, f32 accumulate), f32x3 within
// cuda-f32's bound and 10x under tf32 (hi and lo tf32 parts, the three products per k-step in
// the kernel's order, f32 accumulate). Every block shape
// runs on every problem, not only the one choose_shape() picks, and every output cell must be
// written exactly once. The device run of the same gates is tc_gpu_test.cpp.
//
// Teeth, planted once each in the shared tile code (src/tc_tile.hpp, tc_plan.hpp), which the
// device kernel runs too; each made the named tests fail:
//  - x window one column to the right (x_element: t + 1): Vocoder, RandomShapes, EdgeShapes.
//  - slot without the phase offset (phase_delta returns 0): Vocoder, RandomShapes, EdgeShapes.
//  - c_lo taken from the block's first phase instead of its last: the same three.
//  - last ragged input-channel chunk dropped (ic_chunks = cin / bkc): RandomShapes, EdgeShapes
//    (the vocoder stages' channel counts are whole chunks, so that test alone cannot see it).
//  - phase_cells one too small: all four (cells never written, u_cols != l_in).
//  - the store's per-phase base one cell right (BlockPhases::base + 1): Vocoder, RandomShapes,
//    EdgeShapes (an index past y throws through at()).
//  - each split's last chunk dropped (Block::ch_end one short): Vocoder, RandomShapes, EdgeShapes.
//  - weight_slot without its r < s check (a phase past the stride reads the next tap's or
//    channel's weights, into rows never stored): Vocoder, RandomShapes, EdgeShapes, through the
//    bounds-checked read of the fixed-slot path (the output alone cannot show it).
//  - Planted: f32x3's hi*lo cross term dropped from the shared term list (tc_tile.hpp:
//    kSplitTerms 2, split_b_part 0): f32x3 fails 1e-4 and the 10x gain in Vocoder, RandomShapes,
//    EdgeShapes (rel-L2 ~1.8e-4 against tf32's ~2.6e-4).
// The bias add and the WMMA fragment loads live in the kernel only (tc_kernel.cuh); the device
// gates (tc_gpu_test.cpp) are what hold them, on the H200.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "convbench/cpu_conv.hpp"
#include "convbench/tc_conv.hpp"
#include "fast_support.hpp"
#include "tc_plan.hpp"
#include "tc_support.hpp"
#include "tc_tile.hpp"

namespace convbench::tc {
namespace {

using detail::Plan;
using peer_testing::Problem;

using convbench::testing::reference_f64;

// The f32x3 arm's arithmetic (the device kernel's Split<float>).
struct F32x3 {};

// A = double: the f64-dmma arm; A = float: the tf32 arm (operands rounded, f32 accumulate);
// One chunk's operands in shared memory as the kernel stages them: the weights into as, the
// input into xs (the lo planes too for F32x3), NaN where no thread writes.
template <typename A, int M, class G, typename T>
void stage_chunk(const Plan &P, const detail::Block &blk, const Problem &pr, int64_t ic0,
                 std::vector<T> &as, std::vector<T> &xs) {
  constexpr bool kSplit = std::is_same<A, F32x3>::value;
  const int lda = G::kBKc * M;
  const size_t plane_a = size_t(G::kBM * lda), plane_x = size_t((M + 1) * G::kBKc * G::kBN);
  // Writes v's parts at dst[0] (and the lo part at dst[plane]), as Mma<...>::stage.
  auto stage = [](float v, T *dst, size_t plane) {
    if constexpr (std::is_same<A, double>::value) {
      *dst = T(v);
    } else {
      const float hi = testing::tf32_round(v);
      *dst = hi;
      if constexpr (kSplit)
        dst[plane] = std::isinf(hi) ? 0.0f : testing::tf32_round(v - hi);
    }
  };
  const T nan = std::numeric_limits<T>::quiet_NaN();
  // Poison: a slot no thread staged shows up as NaN in the output.
  std::fill(as.begin(), as.end(), nan);
  std::fill(xs.begin(), xs.end(), nan);
  constexpr int kSlots = detail::weight_slots<G, M>();
  // The kernel's fixed-slot path, thread by thread; at() makes a read outside w throw
  // (a slot of a phase >= s must not be read: its rows are never stored, so only the
  // bounds check can see it).
  if (kSlots % G::kThreads == 0) {
    for (int tid = 0; tid < G::kThreads; ++tid)
      for (int i = 0; i < kSlots / G::kThreads; ++i) {
        const detail::WeightSlot sl = detail::weight_slot<G, M>(P, blk, tid + i * G::kThreads);
        for (int icl = 0; icl < G::kBKc; ++icl) {
          const int64_t ic = ic0 + icl;
          const float v =
              (ic < P.cin && sl.ok) ? pr.w.at(size_t(ic * P.cout * P.k + sl.off)) : 0.0f;
          stage(v, &as[size_t(sl.row * lda + sl.kk0 + icl)], plane_a);
        }
      }
  } else { // the general path
    for (int e = 0; e < detail::weight_elements<G, M>(); ++e) {
      int row, kk;
      const float v = detail::weight_element<G, M>(P, blk, ic0, e, pr.w.data(), row, kk);
      stage(v, &as[size_t(row * lda + kk)], plane_a);
    }
  }
  for (int e = 0; e < detail::x_elements<G, M>(); ++e) {
    int d, icl, n;
    const float v = detail::x_element<G, M>(P, blk, ic0, e, pr.x.data(), d, icl, n);
    stage(v, &xs[size_t((d * G::kBKc + icl) * G::kBN + n)], plane_x);
  }
}

// One chunk's products, in the kernel's order, into sink (only the cells the store keeps);
// drop_term: a product term left out, -1 for none.
template <typename A, int M, class G, typename T>
void multiply_chunk(const Plan &P, const detail::Block &blk, const std::vector<T> &as,
                    const std::vector<T> &xs, const std::vector<int64_t> &dest,
                    std::vector<T> &sink, int drop_term) {
  constexpr bool kSplit = std::is_same<A, F32x3>::value;
  constexpr int kTerms = kSplit ? detail::kSplitTerms : 1;
  constexpr int kStep = kSplit ? 8 : G::kBKc; // channels per product group (the MMA's k)
  const int lda = G::kBKc * M;
  const size_t plane_a = size_t(G::kBM * lda), plane_x = size_t((M + 1) * G::kBKc * G::kBN);
  auto a_part = [](int t) { return kSplit ? detail::split_a_part(t) : 0; };
  auto b_part = [](int t) { return kSplit ? detail::split_b_part(t) : 0; };
  for (int row = 0; row < G::kBM; ++row) {
    const int delta = detail::phase_delta(P, blk, row / detail::kBOc);
    for (int j = 0; j < M; ++j)
      for (int ks = 0; ks < G::kBKc; ks += kStep)
        for (int t = 0; t < kTerms; ++t) {
          if (t == drop_term)
            continue;
          for (int icl = ks; icl < ks + kStep; ++icl) {
            const T a = as[a_part(t) * plane_a + size_t(row * lda + j * G::kBKc + icl)];
            const T *xr =
                &xs[b_part(t) * plane_x + size_t(((M - 1 - j + delta) * G::kBKc + icl) * G::kBN)];
            for (int n = 0; n < G::kBN; ++n)
              if (dest[size_t(row * G::kBN + n)] >= 0)
                sink[size_t(row * G::kBN + n)] += a * xr[n];
          }
        }
  }
}

// A = F32x3: the f32x3 arm (operands split into hi and lo tf32 planes, per k-step of 8 channels
// the detail::kSplitTerms products in the kernel's order, f32 accumulate per chunk, the chunk sums
// added in f32). writes counts the
// stores per output cell. Only cells the store keeps are accumulated (the others are computed
// and dropped on the device; skipping them here keeps CI fast). splits: 0 = the split
// launch_wmma_* chooses with a workspace, else forced. Returns the splits run; each cell must then
// be written once per split. drop_term (F32x3 only): a product term left out, -1 for none.
template <typename A, int M, class G>
int64_t emulate(Plan P, const Problem &pr, int64_t splits, std::vector<float> &y,
                std::vector<int> &writes, int drop_term = -1) {
  using T = typename std::conditional<std::is_same<A, double>::value, double, float>::type;
  constexpr bool kSplit = std::is_same<A, F32x3>::value;
  constexpr int kParts = kSplit ? 2 : 1;
  constexpr int kStep = kSplit ? 8 : G::kBKc; // channels per product group (the MMA's k)
  static_assert(G::kBKc % kStep == 0, "whole k-steps per chunk");
  detail::tile_plan(P, G::kPB, G::kBN, G::kBKc);
  detail::set_splits(P, splits == 0 ? detail::chosen_splits(P) : splits);
  const int64_t cells = P.batch * P.cout * P.l_out;
  std::vector<T> ws(P.splits > 1 ? size_t(P.splits * cells) : 0,
                    std::numeric_limits<T>::quiet_NaN());
  const int lda = G::kBKc * M;
  const size_t plane_a = size_t(G::kBM * lda), plane_x = size_t((M + 1) * G::kBKc * G::kBN);
  std::vector<T> as(kParts * plane_a), xs(kParts * plane_x);
  std::vector<T> acc(size_t(G::kBM * G::kBN)), part(kSplit ? acc.size() : 0);
  std::vector<int64_t> dest(size_t(G::kBM * G::kBN));
  for (int64_t bz = 0; bz < P.batch * P.splits; ++bz)
    for (int64_t by = 0; by < P.oc_tiles; ++by)
      for (int64_t bx = 0; bx < P.phase_blocks * P.u_tiles; ++bx) {
        const detail::Block blk = detail::block_coords<G>(P, bx, by, bz);
        std::fill(acc.begin(), acc.end(), T(0));
        const detail::BlockPhases<G> ph = detail::block_phases<G>(P, blk);
        for (int row = 0; row < G::kBM; ++row)
          for (int n = 0; n < G::kBN; ++n)
            dest[size_t(row * G::kBN + n)] =
                detail::output_index<G>(P, blk, ph, row / detail::kBOc, row % detail::kBOc, n);
        for (int64_t ch = blk.ch_begin; ch < blk.ch_end; ++ch) {
          const int64_t ic0 = ch * G::kBKc;
          stage_chunk<A, M, G>(P, blk, pr, ic0, as, xs);
          // Split: the chunk's products into a fresh accumulator, then added to the block's (the
          // kernel's chunk sums, against the MMA's truncating accumulation).
          if constexpr (kSplit)
            std::fill(part.begin(), part.end(), T(0));
          std::vector<T> &sink = kSplit ? part : acc;
          multiply_chunk<A, M, G>(P, blk, as, xs, dest, sink, drop_term);
          if constexpr (kSplit)
            for (size_t i = 0; i < acc.size(); ++i)
              acc[i] += part[i];
        }
        for (int row = 0; row < G::kBM; ++row)
          for (int n = 0; n < G::kBN; ++n) {
            const int64_t yi = dest[size_t(row * G::kBN + n)];
            if (yi < 0)
              continue;
            T v = acc[size_t(row * G::kBN + n)];
            ++writes.at(size_t(yi)); // at(): an index past y throws instead of corrupting the heap
            if (P.splits > 1) {      // as the kernel: the raw partial into the split's slice
              ws[size_t(blk.sp * cells + yi)] = v;
              continue;
            }
            if (P.bias)
              v += T(pr.b[size_t(blk.oc0 + row % detail::kBOc)]);
            y.at(size_t(yi)) = float(v);
          }
      }
  if (P.splits > 1) // tc_reduce: slices in ascending order, then the bias
    for (int64_t i = 0; i < cells; ++i) {
      T v = ws[size_t(i)];
      for (int64_t sp = 1; sp < P.splits; ++sp)
        v += ws[size_t(sp * cells + i)];
      if (P.bias)
        v += T(pr.b[size_t((i / P.l_out) % P.cout)]);
      y[size_t(i)] = float(v);
    }
  return P.splits;
}

template <typename T, int BKC>
std::vector<float> run(const Problem &pr, detail::Shape g, int64_t splits, std::vector<int> &writes,
                       int64_t *splits_run, int drop_term = -1) {
  const Plan P = detail::base_plan(pr.shape);
  std::vector<float> y(size_t(pr.shape.output_elems()), std::numeric_limits<float>::quiet_NaN());
  writes.assign(y.size(), 0);
  auto by_m = [&](auto geometry) {
    using G = decltype(geometry);
    switch (P.m) {
    case 1:
      *splits_run = emulate<T, 1, G>(P, pr, splits, y, writes, drop_term);
      return;
    case 2:
      *splits_run = emulate<T, 2, G>(P, pr, splits, y, writes, drop_term);
      return;
    case 3:
      *splits_run = emulate<T, 3, G>(P, pr, splits, y, writes, drop_term);
      return;
    default:
      *splits_run = emulate<T, 4, G>(P, pr, splits, y, writes, drop_term);
      return;
    }
  };
  switch (g) {
  case detail::Shape::p1w4:
    by_m(detail::Geometry<1, 4, BKC>{});
    break;
  case detail::Shape::p2w2:
    by_m(detail::Geometry<2, 2, BKC>{});
    break;
  case detail::Shape::p4w1:
    by_m(detail::Geometry<4, 1, BKC>{});
    break;
  }
  return y;
}

const detail::Shape kShapes[] = {detail::Shape::p1w4, detail::Shape::p2w2, detail::Shape::p4w1};

std::string describe(const ConvShape &s) {
  return "batch " + std::to_string(s.batch) + " cin " + std::to_string(s.cin) + " cout " +
         std::to_string(s.cout) + " K " + std::to_string(s.k) + " stride " +
         std::to_string(s.stride) + " pad " + std::to_string(s.padding) + " outpad " +
         std::to_string(s.output_padding) + " l_in " + std::to_string(s.l_in) +
         (s.bias ? " bias" : " no-bias");
}

// The three precisions, every block shape, each split mode (0: what launch_wmma_* picks with a
// workspace; n: forced): returns the number of (shape, split, precision) checks made.
int check_all(const Problem &pr, const std::string &what, const std::vector<int64_t> &split_modes,
              double *worst_tf32 = nullptr, int64_t *most_splits = nullptr,
              double *worst_f32x3 = nullptr) {
  const auto ref = reference_f64(pr);
  int checks = 0;
  for (detail::Shape g : kShapes)
    for (int64_t mode : split_modes) {
      const std::string where = what + " tile " + detail::shape_name(g) + " split mode " +
                                std::to_string(mode) + ": " + describe(pr.shape);
      std::vector<int> writes;
      int64_t splits = 0;
      const auto y64 = run<double, detail::kBKcF64>(pr, g, mode, writes, &splits);
      EXPECT_EQ(std::count(writes.begin(), writes.end(), int(splits)), int64_t(writes.size()))
          << "f64: a cell not written once per split (" << splits << "), " << where;
      const auto c = testing::check_f64(y64, ref);
      EXPECT_TRUE(c.ok(ref.size()))
          << "f64 " << where << ": " << c.differing << " differing, " << c.beyond_ulp
          << " beyond one ulp (" << c.first_bad << "), rel-L2 " << c.rel_l2;
      if (most_splits)
        *most_splits = std::max(*most_splits, splits);
      const auto y32 = run<float, detail::kBKcTf32>(pr, g, mode, writes, &splits);
      EXPECT_EQ(std::count(writes.begin(), writes.end(), int(splits)), int64_t(writes.size()))
          << "tf32: a cell not written once per split (" << splits << "), " << where;
      const double e = testing::relative_l2(y32, ref);
      EXPECT_LE(e, testing::kTf32RelL2) << "tf32 " << where;
      if (worst_tf32)
        *worst_tf32 = std::max(*worst_tf32, e);
      const auto yx3 = run<F32x3, detail::kBKcF32x3>(pr, g, mode, writes, &splits);
      EXPECT_EQ(std::count(writes.begin(), writes.end(), int(splits)), int64_t(writes.size()))
          << "f32x3: a cell not written once per split (" << splits << "), " << where;
      const double ex3 = testing::relative_l2(yx3, ref);
      EXPECT_LE(ex3, testing::kF32x3RelL2) << "f32x3 " << where;
      // The split's gain over plain tf32 on the same data (a handful of cells could, by chance,
      // leave tf32 itself near exact, so small outputs are exempt).
      if (ref.size() >= 256) {
        EXPECT_LE(ex3 * testing::kF32x3MinGain, e)
            << "f32x3 not 10x under tf32 (" << ex3 << " vs " << e << "), " << where;
      }
      if (worst_f32x3)
        *worst_f32x3 = std::max(*worst_f32x3, ex3);
      checks += 3;
    }
  return checks;
}

// Every upsample stage of the three families at 1 frame (a single column: every
// u edge of both phase classes at once); the tf32 error is printed to support the
// bound's comment in tc_support.hpp.
TEST(TcEmulation, VocoderStagesBothPrecisionsEveryTile) {
  int checks = 0;
  double worst = 0.0, worst_x3 = 0.0;
  int64_t most_splits = 0;
  for (int64_t frames : {1})
    for (const auto &st : peer_testing::all_stages(frames)) {
      const Problem pr = peer_testing::random_problem(st.shape, 11);
      checks += check_all(pr, st.model + " " + st.name + " @" + std::to_string(frames), {0}, &worst,
                          &most_splits, &worst_x3);
    }
  EXPECT_EQ(checks, 16 * 3 * 3);
  EXPECT_GT(most_splits, 1) << "the 1-frame stages should run split-K (few tile blocks)";
  std::printf("worst relative L2 over the vocoder stages: tf32 %.3g, f32x3 %.3g\n", worst,
              worst_x3);
}

// Random supported shapes: odd channels, lengths, padding (also > K), output_padding, batch,
// strides 1..7, M 1..4, bias on and off; several u tiles and oc tiles.
TEST(TcEmulation, RandomShapes) {
  std::mt19937_64 rng(2026);
  int checks = 0, drawn = 0;
  while (drawn < 40) {
    const ConvShape s = peer_testing::random_transposed_shape(
        rng, {3, 41, 70, 150, 7, 2}, [](const ConvShape &c) { return wmma_supported(c, nullptr); });
    ++drawn;
    checks += check_all(peer_testing::random_problem(s, uint64_t(drawn)), "random", {1, 0, 3});
  }
  EXPECT_EQ(checks, 40 * 3 * 3 * 3);
}

// Output padding cells no tap reaches hold the bias alone; and a shape whose padding removes
// whole phases' first columns.
TEST(TcEmulation, EdgeShapes) {
  ConvShape s;
  s.op = ConvOp::transposed;
  s.cin = 17;
  s.cout = 33;
  s.k = 6;
  s.stride = 3;
  s.padding = 5;
  s.output_padding = 2;
  s.l_in = 37;
  EXPECT_EQ(check_all(peer_testing::random_problem(s, 5), "edge", {1, 0, 2}), 27);
  s.padding = 0;
  s.k = 3;
  s.cin = 1;
  s.cout = 1;
  s.l_in = 1;
  EXPECT_EQ(check_all(peer_testing::random_problem(s, 6), "edge", {1, 0, 2}), 27);
}

// The two cross terms carry the split's gain: with either left out (or hi*hi), the f32x3 result
// is no longer 10x under plain tf32's on the same data, so the gate above would fail. On the
// shape choose_shape() picks for every vocoder stage at 1 frame.
TEST(TcEmulation, F32x3WithoutATermFailsItsGate) {
  int checks = 0;
  double least = INFINITY; // the smallest error with a cross term left out
  for (const auto &st : peer_testing::all_stages(1)) {
    const Problem pr = peer_testing::random_problem(st.shape, 13);
    const auto ref = reference_f64(pr);
    const detail::Shape g = detail::choose_shape(detail::base_plan(pr.shape));
    std::vector<int> writes;
    int64_t splits = 0;
    const double e_tf32 =
        testing::relative_l2(run<float, detail::kBKcTf32>(pr, g, 0, writes, &splits), ref);
    for (int drop = 0; drop < detail::kSplitTerms; ++drop) {
      const double e =
          testing::relative_l2(run<F32x3, detail::kBKcF32x3>(pr, g, 0, writes, &splits, drop), ref);
      EXPECT_GT(e * testing::kF32x3MinGain, e_tf32)
          << "f32x3 without term " << drop << " still 10x under tf32 (" << e << " vs " << e_tf32
          << "), " << st.model << " " << st.name;
      if (detail::split_a_part(drop) != detail::split_b_part(drop))
        least = std::min(least, e);
      ++checks;
    }
  }
  EXPECT_EQ(checks, 16 * 3);
  std::printf("f32x3 with a cross term left out: rel-L2 >= %.3g\n", least);
}

TEST(TcEmulation, SupportAndPlan) {
  std::string why;
  ConvShape s = peer_testing::all_stages(96)[0].shape;
  EXPECT_TRUE(wmma_supported(s, &why)) << why;
  // Every vocoder stage: each phase has exactly l_in columns (the reason columns are per phase).
  for (const auto &st : peer_testing::all_stages(96))
    EXPECT_EQ(detail::base_plan(st.shape).u_cols, st.shape.l_in) << st.model << " " << st.name;
  // At 96 frames the 128 x 32 tile computes no padded column; at 2 stride it wastes half its rows.
  EXPECT_EQ(detail::choose_shape(detail::base_plan(s)), detail::Shape::p4w1);
  ConvShape f = s;
  f.op = ConvOp::forward;
  EXPECT_FALSE(wmma_supported(f, &why));
  EXPECT_NE(why.find("ConvTranspose1d"), std::string::npos);
  ConvShape d = s;
  d.dilation = 2;
  EXPECT_FALSE(wmma_supported(d, &why));
  ConvShape m = s;
  m.k = 5 * m.stride;
  EXPECT_FALSE(wmma_supported(m, &why));
  EXPECT_NE(why.find("4 taps"), std::string::npos);
  ConvShape r = s;
  r.k = 12; // not a multiple of 8
  EXPECT_FALSE(wmma_supported(r, &why));
  EXPECT_GT(wmma_issued_macs(s, Precision::tf32), s.valid_macs());
  EXPECT_NE(wmma_kernel_name(s, Precision::f64).find("dmma"), std::string::npos);
  // f32x3: three products per multiply-add, 8-channel chunks, f32 workspace; its shared memory
  // (hi and lo planes) is checked against the opt-in limit at compile time (tc_kernel.cuh).
  EXPECT_EQ(to_string(Precision::f32x3), "f32x3");
  EXPECT_NE(wmma_kernel_name(s, Precision::f32x3).find("3xtf32"), std::string::npos);
  EXPECT_NE(wmma_kernel_name(s, Precision::f32x3).find(" k8 "), std::string::npos);
  detail::Plan P = detail::base_plan(s);
  EXPECT_EQ(wmma_issued_macs(s, Precision::f32x3),
            3 * detail::issued_macs(P, detail::choose_shape(P), detail::kBKcF32x3));
  EXPECT_GE(wmma_issued_macs(s, Precision::f32x3), 3 * s.valid_macs());
}

} // namespace
} // namespace convbench::tc
