// The causal pair on a GPU: the register and the tiled kernel give the same bits on every shape of
// the family (f32 and bf16 outputs), each within its tolerance of cpu-f64, the device equals the
// host emulation bit for bit (both run causal_tile.hpp's arithmetic), and the final state races
// with nothing. Every test skips, saying why, where no GPU is present.
//
// The state race: compute-sanitizer's racecheck sees shared-memory hazards (the tiled kernel's
// tile and barrier); the planted in-place variant races in global memory, between blocks, which
// racecheck does not track. What catches it is the bitwise check across repeated runs
// (PlantedInPlaceStateCaughtAcrossRepeatedRuns): the first launch rewrites the state the second
// reads. Run the state shapes under racecheck with:
//   compute-sanitizer --tool racecheck build/bin/kernels_causal_gpu_tests
//       --gtest_filter='*StateShapes*'   (one command line)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "causal_test_support.hpp"
#include "causal_testing.hpp"
#include "convbench/cuda_conv.hpp"
#include "test_support.hpp"

namespace convbench::causal_testing {
namespace {

using cuda::CausalKernel;
using cuda::CausalOut;

#define REQUIRE_GPU()                                                                              \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!cuda::device_available(&why))                                                             \
      GTEST_SKIP() << "no GPU here: " << why;                                                      \
  } while (0)

// The family's table: C in {1024..8192}, K 4, L in {1, 64, 1024, 8192}, batch 1 and 8, with and
// without initial state (64 shapes); under the sanitizers the state shapes at C 1024 (every tile
// shape but 64 x 16: 256 x 4 at L 1, 64 x 64 at L 64, 8 x 512 beyond).
std::vector<CausalConvShape> family(bool state_shapes_only) {
  std::vector<CausalConvShape> v;
  const bool small = testing::sanitizer_small() || state_shapes_only;
  for (int64_t c : {1024, 2048, 4096, 8192})
    for (int64_t l : {1, 64, 1024, 8192})
      for (int64_t b : {1, 8})
        for (bool st : {false, true}) {
          if (small && !(c == 1024 && st))
            continue;
          v.push_back(shape(b, c, l, st));
        }
  return v;
}

Output run_device(const CausalProblem &p, CausalKernel k, CausalOut out) {
  Output o{std::vector<float>(size_t(p.s.output_elems())),
           std::vector<float>(size_t(p.s.state_elems()))};
  cuda::per_call_causal(p.s, k, out, p.tensors(o.y.data(), o.fs.data()));
  return o;
}

TEST(CausalGpu, PairBitwiseOnTheFamily) {
  REQUIRE_GPU();
  int gates = 0;
  for (const auto &s : family(false)) {
    const auto p = random_problem(s, uint64_t(s.channels + s.length + s.batch));
    const Output ref = run_host(p, true);
    const Output r = run_device(p, CausalKernel::reg, CausalOut::f32);
    const Output t = run_device(p, CausalKernel::tiled, CausalOut::f32);
    EXPECT_EQ(cells_differ(r.y, t.y), 0) << name(s) << ": register vs tiled (f32)";
    EXPECT_EQ(cells_differ(r.fs, t.fs), 0) << name(s) << ": final state";
    EXPECT_EQ(cells_differ(r.fs, ref.fs), 0) << name(s) << ": final state vs reference";
    EXPECT_LE(rel_l2(r.y, ref.y), kF32Tolerance) << name(s);
    EXPECT_LE(rel_l2(t.y, ref.y), kF32Tolerance) << name(s);
    const Output rb = run_device(p, CausalKernel::reg, CausalOut::bf16);
    const Output tb = run_device(p, CausalKernel::tiled, CausalOut::bf16);
    EXPECT_EQ(cells_differ(rb.y, tb.y), 0) << name(s) << ": register vs tiled (bf16)";
    EXPECT_LE(rel_l2(rb.y, ref.y), kBf16Tolerance) << name(s);
    gates += 7;
  }
  std::printf("%d gates on %zu shapes\n", gates, family(false).size());
  EXPECT_EQ(gates, 7 * int(family(false).size()));
}

// Both access paths (lengths a multiple of 4 take 16-byte vectors, the others go element by
// element), one and several tiled chunks, partial last chunks and tiles, every width, both outputs.
TEST(CausalGpu, DeviceEqualsHostEmulation) {
  REQUIRE_GPU();
  for (bool st : {false, true})
    for (int64_t l : {1, 4, 5, 12, 16, 17, 60, 257, 300, 1024, 1030})
      for (int64_t k : {2, 3, 4}) {
        // Past a whole tile of channels for the short rows' tiles (256 x 4, 64 x 16, 64 x 64).
        auto s = shape(3, l <= 64 ? 300 : 40, l, st, k);
        const auto p = random_problem(s, uint64_t(l + k));
        const Output host = run_host(p, false);
        for (CausalKernel kk : {CausalKernel::reg, CausalKernel::tiled}) {
          const Kernel ek = kk == CausalKernel::reg ? Kernel::reg : Kernel::tiled;
          const Output d = run_device(p, kk, CausalOut::f32);
          const Output e = emulate(p, ek, false);
          EXPECT_EQ(cells_differ(d.y, e.y), 0) << name(s) << " " << cuda::to_string(kk);
          EXPECT_EQ(cells_differ(d.fs, e.fs), 0) << name(s) << " " << cuda::to_string(kk);
          EXPECT_EQ(cells_differ(d.y, host.y), 0) << name(s) << " vs cpu-f32";
          const Output db = run_device(p, kk, CausalOut::bf16), eb = emulate(p, ek, true);
          EXPECT_EQ(cells_differ(db.y, eb.y), 0)
              << name(s) << " " << cuda::to_string(kk) << " bf16";
        }
      }
}

// The state shapes (L 1 and 64: the short tiles; 1024 and 8192: several tiled chunks), for
// racecheck (see the top of the file), each launched twice: the product variant is repeatable and
// leaves the initial state untouched.
TEST(CausalGpu, StateShapesRepeatable) {
  REQUIRE_GPU();
  for (const auto &s : family(true))
    for (CausalKernel k : {CausalKernel::reg, CausalKernel::tiled}) {
      const auto p = random_problem(s, 3);
      cuda::ResidentCausal r(s, k, CausalOut::f32, p.tensors(nullptr, nullptr));
      Output a{std::vector<float>(size_t(s.output_elems())),
               std::vector<float>(size_t(s.state_elems()))};
      Output b = a;
      r.launch();
      r.download(a.y.data(), a.fs.data());
      r.launch();
      r.download(b.y.data(), b.fs.data());
      EXPECT_EQ(cells_differ(a.y, b.y), 0) << name(s) << " " << cuda::to_string(k);
      EXPECT_EQ(cells_differ(a.fs, b.fs), 0) << name(s);
    }
}

template <class T> T *to_device(const std::vector<T> &h) {
  T *d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, h.size() * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

TEST(CausalGpu, PlantedInPlaceStateCaughtAcrossRepeatedRuns) {
  REQUIRE_GPU();
  for (CausalKernel k : {CausalKernel::reg, CausalKernel::tiled}) {
    const auto s = shape(8, 1024, 1024, true);
    const auto p = random_problem(s, 4);
    std::vector<float> y0(size_t(s.output_elems())), y1 = y0, fs(size_t(s.state_elems()));
    cuda::testing::DeviceCausal d;
    d.x = to_device(p.x);
    d.w = to_device(p.w);
    d.bias = to_device(p.b);
    d.initial_state = to_device(p.state);
    d.has_initial_state = to_device(p.has_state);
    d.y = to_device(y0);
    d.final_state = to_device(fs);
    cuda::testing::launch_planted_in_place(s, k, d);
    cudaMemcpy(y0.data(), d.y, y0.size() * 4, cudaMemcpyDeviceToHost);
    cuda::testing::launch_planted_in_place(s, k, d);
    cudaMemcpy(y1.data(), d.y, y1.size() * 4, cudaMemcpyDeviceToHost);
    const int64_t moved = cells_differ(y0, y1);
    std::printf("planted in-place state (%s): %lld cells differ between two runs\n",
                cuda::to_string(k).c_str(), (long long)moved);
    EXPECT_GT(moved, 0) << "the repeated-run check must catch the in-place state";
    for (const void *q :
         {(const void *)d.x, (const void *)d.w, (const void *)d.bias, (const void *)d.initial_state,
          (const void *)d.has_initial_state, (const void *)d.y, (const void *)d.final_state})
      cudaFree(const_cast<void *>(q));
  }
}

} // namespace
} // namespace convbench::causal_testing
