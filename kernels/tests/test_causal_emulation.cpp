// The causal CUDA kernels' host emulation (their own per-thread bodies, causal_tile.hpp, over
// their own grids) held to their contracts without a GPU: the register and the tiled kernel give
// the same bits (0 ulp, f32 output), equal cpu-f32's, sit within the stated tolerance of cpu-f64;
// the vector and the element access paths agree; the index helpers are exact; and every one of
// those gates has teeth. The device run of the same gates is test_causal_gpu.cpp.
//
// Planted faults seen failing here (each re-checked on the current decomposition: groups of four
// outputs, 16-byte vectors, the register kernel's warp-interleaved groups and the tiled kernel's
// 8 x 512 tile; the first three are also tests below, kept as checks that the gate still fails):
//  - an FMA on the last tap of the tiled kernel only: the f32 pair gate fails on most cells; the
//    bf16 pair gate misses it (PlantedFmaCaughtByF32MissedByBf16).
//  - taps reversed / bias added last in one kernel: caught by the f32 pair gate on random data,
//    and the reversal on the cancellation input (OrderMutations..., CancellationSeesTapOrder).
//  - the final state written back into the initial state (the planted race): the second of two
//    identical launches differs from the first (InPlaceStateCaughtAcrossRepeatedRuns).
//  - tiled_stage's halo started one position late: the pair gate failed.
//  - the tiled kernel's final state read one column early: the final-state gates failed on every
//    shape.
//  - the register kernel's halo taken one element early from its 16-byte load, or the tiled
//    kernel's window read from the wrong 16-byte slot: the pair and cpu-f32 gates failed.
//  - the tiled kernel staging a thread's groups into the wrong tile rows, or stepping its y
//    offset by one row instead of kRowStep: the pair gate failed.
//  - the decode tile's halo staged in one pass as the long tile's (256 rows: rows past the 256th
//    thread's share left unstaged), or its final state written by one pass: the pair and
//    final-state gates failed (NaN cells).
//  - the register kernel's groups 31 instead of 32 apart (cells skipped, others written twice):
//    the cpu-f32 gate failed (y starts as NaN in the emulation).
//  - the register kernel's final state one column early: the final-state gates failed.
//  - a vector load one element off its 16-byte boundary: the emulation aborts, as the device
//    would fault.
//  - fast_div's multiplier one too small: FastDivIsDivision and the pair gates failed.
//  - scale2's exponent off by one: Scale2IsLdexp and ExpWithinTwoUlp failed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "causal_test_support.hpp"

namespace convbench::causal_testing {
namespace {

// The shape a channel-tiled kernel specialises (C 1024, k 4) at every length, both
// batch sizes where the host can afford it, with and without state; then the edges: channels not
// a multiple of the tile, lengths not a multiple of the chunk or shorter than k - 1, other widths.
std::vector<CausalConvShape> shapes() {
  std::vector<CausalConvShape> v;
  for (bool st : {false, true}) {
    for (int64_t l : {1, 64})
      v.push_back(shape(8, 1024, l, st));
    for (int64_t l : {1, 64, 1024, 8192})
      v.push_back(shape(1, 1024, l, st));
    v.push_back(shape(3, 13, 257, st));
    v.push_back(shape(2, 9, 2, st, 4, Activation::none));
    v.push_back(shape(2, 17, 513, st, 3));
    v.push_back(shape(5, 8, 1, st, 2));
    // Each tile shape at its edges (tile_shape): rows of 4 (256 x 4), 5 and 16 (64 x 16), 17 and
    // 64 (64 x 64), 65 (8 x 512), channels past a whole tile of each.
    v.push_back(shape(2, 300, 4, st, 4, Activation::none));
    v.push_back(shape(2, 300, 5, st));
    v.push_back(shape(2, 300, 16, st));
    v.push_back(shape(2, 70, 17, st, 3));
    v.push_back(shape(1, 70, 64, st, 2, Activation::none));
    v.push_back(shape(1, 9, 65, st));
  }
  return v;
}

TEST(CausalEmulation, RegisterAndTiledSameBitsWithinTolerance) {
  int gates = 0;
  for (const auto &s : shapes()) {
    const auto p = random_problem(s, uint64_t(s.channels * 31 + s.length));
    const Output ref = run_host(p, true), f32 = run_host(p, false);
    const Output reg = emulate(p, Kernel::reg, false), til = emulate(p, Kernel::tiled, false);
    EXPECT_EQ(cells_differ(reg.y, til.y), 0) << name(s) << ": register vs tiled (f32)";
    EXPECT_EQ(cells_differ(reg.fs, til.fs), 0) << name(s) << ": final state";
    EXPECT_EQ(cells_differ(reg.y, f32.y), 0) << name(s) << ": register vs cpu-f32";
    EXPECT_EQ(cells_differ(reg.fs, ref.fs), 0) << name(s) << ": final state vs reference";
    EXPECT_LE(rel_l2(reg.y, ref.y), kF32Tolerance) << name(s);
    const Output rb = emulate(p, Kernel::reg, true), tb = emulate(p, Kernel::tiled, true);
    EXPECT_EQ(cells_differ(rb.y, tb.y), 0) << name(s) << ": register vs tiled (bf16)";
    EXPECT_LE(rel_l2(rb.y, ref.y), kBf16Tolerance) << name(s);
    gates += 7;
  }
  EXPECT_EQ(gates, 7 * 32);
}

// One kernel mutated, the other not: how many cells the f32 gate and the bf16 gate see move.
struct Moved {
  int64_t f32, bf16, cells;
};
template <Fault F> Moved mutate_tiled(const CausalProblem &p) {
  const Output a = emulate(p, Kernel::reg, false), b = emulate<F>(p, Kernel::tiled, false);
  const Output ab = emulate(p, Kernel::reg, true), bb = emulate<F>(p, Kernel::tiled, true);
  return {cells_differ(a.y, b.y), cells_differ(ab.y, bb.y), int64_t(a.y.size())};
}

TEST(CausalEmulation, PlantedFmaCaughtByF32MissedByBf16) {
  const auto p = random_problem(shape(1, 1024, 64, true, 4, Activation::none), 5);
  const Moved m = mutate_tiled<Fault::fma_last_tap>(p);
  std::printf("FMA on the last tap of the tiled kernel: f32 gate sees %lld of %lld cells move, "
              "bf16 gate %lld\n",
              (long long)m.f32, (long long)m.cells, (long long)m.bf16);
  EXPECT_GT(m.f32, 0) << "the f32 pair gate must fail on a one-ulp change";
  EXPECT_LT(m.bf16 * 1000, m.f32) << "the bf16 store should hide nearly all of it";
}

// Each order mutation on two problems: the share of moved f32 cells the bf16 store rounds away,
// and how many mutations a bf16 equality gate misses outright (no bf16 cell moves at all).
TEST(CausalEmulation, OrderMutationsTheBf16StoreHides) {
  const std::vector<CausalProblem> problems = {
      random_problem(shape(1, 1024, 64, true), 9),
      random_problem(shape(1, 256, 64, false, 4, Activation::none), 10)};
  int missed = 0, total = 0;
  for (const auto &p : problems) {
    const std::vector<std::pair<const char *, Moved>> runs = {
        {"fma on the last tap", mutate_tiled<Fault::fma_last_tap>(p)},
        {"taps reversed", mutate_tiled<Fault::reversed_taps>(p)},
        {"bias added last", mutate_tiled<Fault::bias_last>(p)}};
    for (const auto &[what, m] : runs) {
      std::printf(
          "%s, %-20s f32 gate: %6lld of %lld cells moved; bf16 gate: %lld (%.4f%% hidden)\n",
          name(p.s).c_str(), what, (long long)m.f32, (long long)m.cells, (long long)m.bf16,
          100.0 * double(m.f32 - m.bf16) / double(m.f32));
      EXPECT_GT(m.f32, 0) << what << ": the f32 pair gate must catch every order mutation";
      EXPECT_LT(m.bf16 * 100, m.f32) << what << ": the bf16 store should hide nearly all";
      missed += m.bf16 == 0;
      ++total;
    }
  }
  std::printf("a bf16 equality gate misses %d of %d order mutations outright; the f32 gate none\n",
              missed, total);
}

TEST(CausalEmulation, CancellationSeesTapOrder) {
  auto p = random_problem(shape(1, 16, 300, false, 4, Activation::none), 1);
  std::fill(p.x.begin(), p.x.end(), 1.0f);
  std::fill(p.b.begin(), p.b.end(), 0.0f);
  for (int64_t c = 0; c < 16; ++c) {
    const float big = std::ldexp(1.0f, 30);
    const float w[4] = {big, 1.0f, -big, 1.0f};
    for (int k = 0; k < 4; ++k)
      p.w[size_t(c * 4 + k)] = w[k];
  }
  const Output reg = emulate(p, Kernel::reg, false);
  const Output rev = emulate<Fault::reversed_taps>(p, Kernel::tiled, false);
  const int64_t moved = cells_differ(reg.y, rev.y);
  std::printf("cancellation input: reversed taps move %lld of %zu cells\n", (long long)moved,
              reg.y.size());
  EXPECT_GT(moved, 0);
  EXPECT_EQ(reg.y[100], 1.0f) << "promised order: the last +1 survives";
}

// The planted race's trace on a host: the launch that writes the final state into the initial
// state's row changes what the next identical launch reads. Lengths of one tiled chunk (the block
// that reads the state also overwrites it) and of two (another block does), with a state.
TEST(CausalEmulation, InPlaceStateCaughtAcrossRepeatedRuns) {
  for (Kernel k : {Kernel::reg, Kernel::tiled})
    for (int64_t l : {512, 1024}) {
      const auto p = random_problem(shape(2, 16, l, true), uint64_t(l));
      std::vector<float> state = p.state;
      const Output a = emulate(p, k, false, &state), b = emulate(p, k, false, &state);
      EXPECT_EQ(cells_differ(a.y, b.y), 0) << "the product variant is repeatable";
      EXPECT_EQ(cells_differ(state, p.state), 0) << "the product never writes the initial state";
      const Output c = emulate<Fault::in_place_state>(p, k, false, &state);
      const Output d = emulate<Fault::in_place_state>(p, k, false, &state);
      EXPECT_GT(cells_differ(c.y, d.y), 0) << "repeated runs must expose the in-place state";
    }
}

// The vector path (16-byte loads and stores) and the element path give the same bits, on shapes
// the launch takes the vector path for: rows of several chunks, partial last chunks, every width.
TEST(CausalEmulation, VectorAndElementPathsSameBits) {
  int shapes = 0;
  for (bool st : {false, true})
    for (const auto &s : {shape(2, 24, 1024, st), shape(3, 13, 300, st, 3),
                          shape(1, 9, 1540, st, 2, Activation::none), shape(2, 40, 4, st),
                          shape(2, 300, 16, st), shape(3, 70, 60, st, 3)}) {
      const auto p = random_problem(s, uint64_t(s.length + s.k));
      for (Kernel k : {Kernel::reg, Kernel::tiled})
        for (bool bf16 : {false, true}) {
          const Output v = emulate(p, k, bf16, nullptr, Access::vectors);
          const Output e = emulate(p, k, bf16, nullptr, Access::elements);
          EXPECT_EQ(cells_differ(v.y, e.y), 0) << name(s);
          EXPECT_EQ(cells_differ(v.fs, e.fs), 0) << name(s);
        }
      EXPECT_EQ(cells_differ(emulate(p, Kernel::reg, false).y, run_host(p, false).y), 0);
      ++shapes;
    }
  EXPECT_EQ(shapes, 12);
}

// The tiled kernel's tile follows the rows' length: the narrowest chunk that holds a row, 512
// beyond 64; every shape holds 4096 positions (four groups a thread).
TEST(CausalEmulation, TileShapeFollowsLength) {
  using causal_detail::tile_shape;
  using causal_detail::TileKind;
  EXPECT_EQ(tile_shape(1), TileKind::decode);
  EXPECT_EQ(tile_shape(4), TileKind::decode);
  EXPECT_EQ(tile_shape(5), TileKind::short_rows);
  EXPECT_EQ(tile_shape(16), TileKind::short_rows);
  EXPECT_EQ(tile_shape(17), TileKind::mid_rows);
  EXPECT_EQ(tile_shape(64), TileKind::mid_rows);
  EXPECT_EQ(tile_shape(65), TileKind::long_rows);
  EXPECT_EQ(tile_shape(8192), TileKind::long_rows);
  EXPECT_EQ(cuda::causal_kernel_name(shape(1, 2048, 1, false), cuda::CausalKernel::tiled,
                                     cuda::CausalOut::f32),
            "causal tiled k4 c256 chunk4 f32 out");
  EXPECT_EQ(cuda::causal_kernel_name(shape(1, 2048, 8192, false), cuda::CausalKernel::tiled,
                                     cuda::CausalOut::f32),
            "causal tiled k4 c8 chunk512 f32 out");
}

// The register kernel's group -> channel division: exact for every dividend below 2^31, at the
// divisors the family produces (length / 4) and at the awkward ones.
TEST(CausalEmulation, FastDivIsDivision) {
  using causal_detail::fast_div;
  using causal_detail::make_fast_div;
  std::mt19937 rng(7);
  int checked = 0;
  for (uint32_t d : {1u, 2u, 3u, 5u, 7u, 16u, 65u, 75u, 256u, 385u, 2048u, 2049u, 65535u, 65537u,
                     1u << 20, (1u << 30) + 1, (1u << 31) - 1, 1u << 31}) {
    const auto f = make_fast_div(d);
    std::vector<uint32_t> ns = {0u, 1u, d - 1, d, (1u << 31) - 1, (1u << 31) - 2};
    for (uint32_t m : {1u, 2u, 3u, 1000u, 65536u})
      if (uint64_t(m) * d < (1u << 31))
        for (uint32_t e : {m * d - 1, m * d, m * d + 1})
          ns.push_back(e);
    for (int i = 0; i < 20000; ++i)
      ns.push_back(rng() >> 1);
    for (uint32_t n : ns) {
      if (n >= (1u << 31))
        continue;
      ASSERT_EQ(fast_div(f, n), n / d) << n << " / " << d;
      ++checked;
    }
  }
  EXPECT_GT(checked, 18 * 20000);
}

// scale2 (a multiply by 2^n) gives std::ldexp's bits for every n exp_f32 passes, on mantissas
// across [0.5, 2) of both signs, subnormal (rounded) results at the low end included.
TEST(CausalEmulation, Scale2IsLdexp) {
  int64_t checked = 0, subnormal = 0;
  for (int n = -126; n <= 127; ++n)
    for (uint32_t m = 0; m < (1u << 23); m += 509)
      for (uint32_t e : {126u, 127u})
        for (uint32_t sign : {0u, 1u}) {
          const uint32_t u = sign << 31 | e << 23 | m;
          float a, want, got;
          std::memcpy(&a, &u, 4);
          want = std::ldexp(a, n);
          got = causal_detail::scale2(a, n);
          ASSERT_EQ(std::memcmp(&want, &got, 4), 0) << a << " x 2^" << n;
          subnormal += std::fpclassify(want) == FP_SUBNORMAL;
          ++checked;
        }
  EXPECT_GT(subnormal, 0) << "the rounded (subnormal) results must be among those checked";
  std::printf("scale2: %lld products equal ldexp's, %lld of them subnormal\n", (long long)checked,
              (long long)subnormal);
}

} // namespace
} // namespace convbench::causal_testing
