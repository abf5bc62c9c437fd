// The cuBLAS ceilings' GEMM against the host's f64 product (label "gpu"; SKIPPED with the reason
// when no GPU is present, a failure under CONVBENCH_EXPECT_GPU=1). Teeth: the planted faults of
// cublas_gemm.hpp (B transposed, TF32 math in the SGEMM) must fail the very check the bench runs
// before timing, and an output the product never wrote (NaN poison) must fail it too.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "convbench/cublas_gemm.hpp"

namespace convbench::cublas {
namespace {

#define SKIP_WITHOUT_GPU()                                                                         \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!cublas_available(&why)) {                                                                 \
      const char *expect = std::getenv("CONVBENCH_EXPECT_GPU");                                    \
      ASSERT_FALSE(expect &&std::string(expect) == "1") << "CONVBENCH_EXPECT_GPU=1 but: " << why;  \
      GTEST_SKIP() << "no usable GPU / cuBLAS, ceiling GEMMs not run: " << why;                    \
    }                                                                                              \
  } while (0)

constexpr Mode kModes[] = {Mode::sgemm, Mode::tf32, Mode::bf16, Mode::dgemm};
constexpr GemmShape kOdd{67, 45, 131}; // no dimension a multiple of a tile

GemmCheck run(GemmShape s, Mode m, Fault f = Fault::none) {
  Gemm g(s, m, 7, f);
  g.poison_output();
  g.launch();
  return g.check();
}

TEST(ConvGemm, TransposedIsThePolyphaseProduct) {
  ConvShape s{ConvOp::transposed, 2, 64, 32, 16, 8, 1, 4, 0, 50, true};
  const GemmShape g = conv_gemm(s);
  EXPECT_EQ(g.m, 8 * 32);
  EXPECT_EQ(g.k, 64 * 2);
  EXPECT_EQ(g.n, 2 * 50);
  EXPECT_DOUBLE_EQ(2.0 * g.macs(), s.flops()); // s divides K: the convolution's multiply-adds
  s.k = 7, s.stride = 3, s.padding = 2;        // ceil(7/3) = 3 taps per phase
  EXPECT_EQ(conv_gemm(s).k, 64 * 3);
}

TEST(ConvGemm, ForwardIsTheImplicitProduct) {
  ConvShape s{ConvOp::forward, 1, 48, 96, 7, 1, 3, 9, 0, 200, true};
  const GemmShape g = conv_gemm(s);
  EXPECT_EQ(g.m, 96);
  EXPECT_EQ(g.k, 48 * 7);
  EXPECT_EQ(g.n, s.l_out());
  EXPECT_DOUBLE_EQ(2.0 * g.macs(), s.flops());
}

TEST(CublasGemm, EveryModeMatchesTheHostProduct) {
  SKIP_WITHOUT_GPU();
  for (Mode m : kModes) {
    const GemmCheck c = run(kOdd, m);
    EXPECT_TRUE(c.pass()) << to_string(m) << ": rel L2 " << c.rel_l2_err << " > " << c.tolerance;
    EXPECT_EQ(c.cells, 48 * 24) << to_string(m); // 48 of 67 rows, 24 of 45 columns
  }
}

TEST(CublasGemm, ConvolutionSizedProductsMatch) {
  SKIP_WITHOUT_GPU();
  const ConvShape s{ConvOp::transposed, 1, 512, 256, 16, 8, 1, 4, 0, 96, true};
  for (Mode m : kModes) {
    const GemmCheck c = run(conv_gemm(s), m);
    EXPECT_TRUE(c.pass()) << to_string(m) << ": rel L2 " << c.rel_l2_err;
  }
}

TEST(CublasGemm, TransposedOperandFails) {
  SKIP_WITHOUT_GPU();
  for (Mode m : kModes) {
    const GemmCheck c = run({64, 64, 64}, m, Fault::transposed_b); // square: only values differ
    EXPECT_FALSE(c.pass()) << to_string(m) << ": B^T passed, rel L2 " << c.rel_l2_err;
    EXPECT_GT(c.rel_l2_err, 0.1) << to_string(m);
  }
}

TEST(CublasGemm, Tf32MathInTheSgemmFails) {
  SKIP_WITHOUT_GPU();
  const GemmCheck c = run({256, 128, 1024}, Mode::sgemm, Fault::tf32_math);
  EXPECT_FALSE(c.pass()) << "TF32 math passed the SGEMM check, rel L2 " << c.rel_l2_err;
  EXPECT_GT(c.rel_l2_err, 1e-4);
}

TEST(CublasGemm, AnUnwrittenOutputFails) {
  SKIP_WITHOUT_GPU();
  for (Mode m : kModes) {
    Gemm g(kOdd, m);
    g.poison_output();
    const GemmCheck c = g.check();
    EXPECT_FALSE(c.finite) << to_string(m);
    EXPECT_FALSE(c.pass()) << to_string(m);
  }
}

} // namespace
} // namespace convbench::cublas
