// The device kernels' tap walk (tap_walk.hpp), run on the host: one accumulator per cell, adding
// in the walk's order, must reproduce cpu-f64 bitwise. This checks the index arithmetic of the
// CUDA arms on a machine without a GPU; the GPU tests then check the device execution itself.
// (Planted: searching the transposed walk's first k upward from 0 instead of downward from the
// largest failed both tests here, at shape 0 (k 3, stride 2, dilation 2).)
#include <gtest/gtest.h>

#include <random>

#include "convbench/cpu_conv.hpp"
#include "tap_walk.hpp"
#include "test_support.hpp"

namespace convbench {
namespace {

std::vector<float> emulate_f64_kernel(const testing::Problem &pr) {
  const ConvShape &s = pr.shape;
  const detail::TapGeometry g{s.cin,      s.cout,    s.k,    s.stride,
                              s.dilation, s.padding, s.l_in, s.l_out()};
  std::vector<float> y(static_cast<size_t>(s.output_elems()));
  const auto tap = [](double acc, float xv, float wv) {
    return xv == 0.0f ? acc : acc + double(xv) * double(wv);
  };
  for (int64_t cell = 0; cell < s.output_elems(); ++cell) {
    const int64_t q = cell % g.l_out, row = cell / g.l_out, oc = row % s.cout, b = row / s.cout;
    const float *xb = pr.x.data() + b * s.cin * s.l_in;
    double acc;
    if (s.op == ConvOp::forward) {
      const auto taps = detail::forward_taps(g, q);
      acc = s.bias ? double(pr.b[oc]) : 0.0;
      for (int64_t ic = 0; ic < s.cin; ++ic)
        for (int64_t k = taps.k_lo; k < taps.k_hi; ++k)
          acc = tap(acc, xb[ic * s.l_in + taps.base + k * s.dilation],
                    pr.w[(oc * s.cin + ic) * s.k + k]);
    } else {
      const auto taps = detail::transposed_taps(g, q);
      acc = 0.0;
      for (int64_t ic = 0; ic < s.cin; ++ic)
        for (int64_t j = 0; j < taps.n; ++j)
          acc = tap(acc, xb[ic * s.l_in + taps.t_first + j * taps.dt],
                    pr.w[(ic * s.cout + oc) * s.k + taps.k_first - j * taps.dk]);
      if (s.bias)
        acc += double(pr.b[oc]);
    }
    y[size_t(cell)] = float(acc);
  }
  return y;
}

class TapWalk : public ::testing::TestWithParam<ConvOp> {};

TEST_P(TapWalk, DeviceOrderReproducesTheReferenceBitwise) {
  std::mt19937_64 rng(777 + int(GetParam()));
  ThreadPool pool(2);
  for (int i = 0; i < 400; ++i) {
    testing::Problem p =
        testing::random_problem(testing::random_shape(rng, GetParam(), 12, 50), 1000 + i);
    if (i % 4 == 0) { // wide strides and dilations: several taps per cell, gcd(stride, dil) > 1
      p.shape.stride = 2 + i % 7;
      p.shape.dilation = 2 + (i / 4) % 5;
      p.shape.k = 3 + i % 9;
      p.shape.output_padding = 0;
      p.shape.padding = i % 5;
      try {
        p.shape.validate();
      } catch (const ShapeError &) {
        continue;
      }
      p = testing::random_problem(p.shape, 2000 + i);
    }
    std::vector<float> ref(static_cast<size_t>(p.shape.output_elems()));
    conv_cpu_f64(p.shape, p.x.data(), p.w.data(), p.bias(), ref.data(), pool);
    ASSERT_EQ(testing::differing_cells(emulate_f64_kernel(p), ref), 0)
        << "shape " << i << " k " << p.shape.k << " s " << p.shape.stride << " d "
        << p.shape.dilation << " p " << p.shape.padding << " op " << p.shape.output_padding
        << " l_in " << p.shape.l_in;
  }
}

// The transposed walk visits exactly the taps valid_macs() counts (no tap missed or doubled).
TEST(TapWalkCount, TransposedWalkCountsEveryValidTap) {
  std::mt19937_64 rng(31);
  for (int i = 0; i < 300; ++i) {
    ConvShape s = testing::random_shape(rng, ConvOp::transposed, 3, 40);
    const detail::TapGeometry g{s.cin,      s.cout,    s.k,    s.stride,
                                s.dilation, s.padding, s.l_in, s.l_out()};
    int64_t walked = 0;
    for (int64_t q = 0; q < g.l_out; ++q)
      walked += detail::transposed_taps(g, q).n;
    EXPECT_EQ(walked * s.batch * s.cin * s.cout, s.valid_macs()) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, TapWalk, ::testing::Values(ConvOp::forward, ConvOp::transposed),
                         [](const ::testing::TestParamInfo<ConvOp> &i) {
                           return to_string(i.param);
                         });

} // namespace
} // namespace convbench
