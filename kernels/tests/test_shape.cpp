// ConvShape: torch's L_out formulas, validation naming the field, and the work/byte counts.
#include <gtest/gtest.h>

#include <string>

#include "convbench/shape.hpp"

namespace convbench {
namespace {

ConvShape transposed(int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t padding,
                     int64_t l_in) {
  ConvShape s;
  s.op = ConvOp::transposed;
  s.cin = cin;
  s.cout = cout;
  s.k = k;
  s.stride = stride;
  s.padding = padding;
  s.l_in = l_in;
  return s;
}

ConvShape forward(int64_t ch, int64_t k, int64_t dilation, int64_t padding, int64_t l_in) {
  ConvShape s;
  s.op = ConvOp::forward;
  s.cin = s.cout = ch;
  s.k = k;
  s.dilation = dilation;
  s.padding = padding;
  s.l_in = l_in;
  return s;
}

// Values from torch 2.x: nn.ConvTranspose1d(...)(x).shape[-1] and nn.Conv1d(...)(x).shape[-1].
TEST(ConvShape, TransposedLengthIsTorchs) {
  EXPECT_EQ(transposed(1536, 768, 16, 8, 4, 96).l_out(), 768); // up0 of v2 512x at 96 frames
  EXPECT_EQ(transposed(512, 256, 16, 8, 4, 96).l_out(), 768);
  EXPECT_EQ(transposed(96, 48, 4, 2, 1, 3072).l_out(), 6144);
  ConvShape s = transposed(3, 4, 4, 3, 1, 5);
  s.dilation = 2;
  s.output_padding = 1;
  EXPECT_EQ(s.l_out(), (5 - 1) * 3 - 2 * 1 + 2 * (4 - 1) + 1 + 1); // 18
  EXPECT_EQ(s.l_out(), 18);
}

TEST(ConvShape, ForwardLengthIsTorchs) {
  EXPECT_EQ(forward(8, 3, 1, 1, 100).l_out(), 100); // AMP conv keeps length
  EXPECT_EQ(forward(8, 7, 3, 9, 100).l_out(), 100);
  EXPECT_EQ(forward(8, 11, 5, 25, 100).l_out(), 100);
  ConvShape s = forward(2, 3, 1, 0, 10);
  s.stride = 2;
  EXPECT_EQ(s.l_out(), 4); // floor((10 - 2 - 1) / 2) + 1
  s = forward(2, 4, 2, 1, 11);
  s.stride = 3;
  EXPECT_EQ(s.l_out(), 3); // floor((11 + 2 - 6 - 1) / 3) + 1
}

// Each bad field is rejected by a message naming it. (Planted: removing the dilation check made
// the "dilation" case throw nothing, and this failed with "no ShapeError for a bad dilation".)
TEST(ConvShape, ValidateNamesTheField) {
  struct Case {
    const char *field;
    void (*spoil)(ConvShape &);
  };
  const Case cases[] = {
      {"batch", [](ConvShape &s) { s.batch = 0; }},
      {"cin", [](ConvShape &s) { s.cin = 0; }},
      {"cout", [](ConvShape &s) { s.cout = -1; }},
      {"k", [](ConvShape &s) { s.k = 0; }},
      {"stride", [](ConvShape &s) { s.stride = 0; }},
      {"dilation", [](ConvShape &s) { s.dilation = 0; }},
      {"padding", [](ConvShape &s) { s.padding = -1; }},
      {"l_in", [](ConvShape &s) { s.l_in = 0; }},
      {"output_padding", [](ConvShape &s) { s.output_padding = 8; }}, // not < stride 8 nor dil 1
      {"output_padding", [](ConvShape &s) { s.output_padding = -1; }},
      {"padding", [](ConvShape &s) { s.padding = 400; }}, // transposed l_out would be < 1
  };
  for (const Case &c : cases) {
    ConvShape s = transposed(16, 8, 16, 8, 4, 24);
    ASSERT_NO_THROW(s.validate());
    c.spoil(s);
    try {
      s.validate();
      ADD_FAILURE() << "no ShapeError for a bad " << c.field;
    } catch (const ShapeError &e) {
      EXPECT_NE(std::string(e.what()).find(std::string(" ") + c.field + " "), std::string::npos)
          << "message does not name " << c.field << ": " << e.what();
    }
  }
  ConvShape f = forward(4, 3, 1, 1, 10);
  ASSERT_NO_THROW(f.validate());
  f.output_padding = 1;
  EXPECT_THROW(f.validate(), ShapeError);
  f = forward(4, 11, 5, 0, 10); // dilated kernel spans 51 > 10
  try {
    f.validate();
    ADD_FAILURE() << "short forward input accepted";
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("l_in"), std::string::npos) << e.what();
  }
  // torch accepts output_padding < dilation even when >= stride.
  ConvShape d = transposed(2, 2, 3, 1, 0, 5);
  d.dilation = 3;
  d.output_padding = 2;
  EXPECT_NO_THROW(d.validate());
}

TEST(ConvShape, FlopsAndBytes) {
  const ConvShape up0 = transposed(1536, 768, 16, 8, 4, 96);
  EXPECT_DOUBLE_EQ(up0.flops(), 2.0 * 1536 * 768 * 16 * 96); // 3.62 GFLOP
  EXPECT_NEAR(up0.flops(), 3.62e9, 0.01e9);
  EXPECT_EQ(up0.weight_elems(), 1536 * 768 * 16);
  EXPECT_NEAR(up0.weight_elems() * 4.0, 75.5e6, 0.1e6); // 75.5 MB of f32 weights
  EXPECT_DOUBLE_EQ(up0.min_bytes(), 4.0 * (1536 * 96 + 1536 * 768 * 16 + 768 + 768 * 768));
  ConvShape nb = up0;
  nb.bias = false;
  EXPECT_DOUBLE_EQ(up0.min_bytes() - nb.min_bytes(), 4.0 * 768);
  const ConvShape f = forward(3, 3, 1, 1, 5);
  EXPECT_DOUBLE_EQ(f.flops(), 2.0 * 3 * 3 * 3 * 5);
}

TEST(ConvShape, ValidMacsCountsOnlyInRangeTaps) {
  // Forward, length 5, k 3, padding 1: 15 (cell, tap) pairs, the two edge cells lose one each.
  EXPECT_EQ(forward(3, 3, 1, 1, 5).valid_macs(), 13 * 3 * 3);
  // Transposed k 16 stride 8 padding 4: each input's 16 taps land inside except 4 at each end.
  EXPECT_EQ(transposed(2, 3, 16, 8, 4, 10).valid_macs(), (10 * 16 - 8) * 2 * 3);
  // Without padding nothing is cut off.
  EXPECT_EQ(transposed(2, 3, 4, 2, 0, 7).valid_macs(), 7 * 4 * 2 * 3);
  ConvShape b = forward(3, 3, 1, 1, 5);
  b.batch = 4;
  EXPECT_EQ(b.valid_macs(), 4 * 13 * 3 * 3);
}

TEST(ConvShape, OpNames) {
  EXPECT_EQ(to_string(ConvOp::forward), "conv1d");
  EXPECT_EQ(to_string(ConvOp::transposed), "conv_transpose1d");
}

} // namespace
} // namespace convbench
