// The stage names a user types (expand_stages) and the shapes they stand for, from models.json.
//
// Planted faults seen failing here while writing it:
//  - convs2's dilation taken from convs1 (amp shapes d, d instead of d, 1): GeneratorOrder failed.
//  - the AMP block's length one stride early (length_before(i)): AmpShapesFollowTheConfigs and
//    GeneratorOrder failed.
//  - expand_stages keeping a second copy of a repeated stage: GroupsExpandOnceInOrder failed.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/catalog.hpp"
#include "plan/problem.hpp"

namespace convbench::bench {
namespace {

const ModelCatalog &catalog() {
  static ModelCatalog cat = load_models(data_dir() + "/models.json");
  return cat;
}
const Model &model(const std::string &n) { return *catalog().find(n); }

TEST(Stages, AmpShapesFollowTheConfigs) {
  const Model &m = model("bigvgan_v2_44khz_128band_512x");
  const ConvShape a = m.named_shape("amp0.k7.d3", 96);
  EXPECT_EQ(a.op, ConvOp::forward);
  EXPECT_EQ(a.cin, 768);
  EXPECT_EQ(a.cout, 768);
  EXPECT_EQ(a.k, 7);
  EXPECT_EQ(a.dilation, 3);
  EXPECT_EQ(a.padding, 9);
  EXPECT_EQ(a.l_in, 768);
  EXPECT_EQ(a.l_out(), 768);
  EXPECT_NEAR(m.named_shape("amp0.k3.d1", 96).flops(), 2.72e9, 0.01e9); // the peer table's figure
  const ConvShape a3 = m.named_shape("amp3.k11.d5", 96);
  EXPECT_EQ(a3.cin, 96);
  EXPECT_EQ(a3.l_in, 12288);
  EXPECT_EQ(a3.padding, 25);
  const ConvShape pre = m.named_shape("pre", 96), post = m.named_shape("post", 96);
  EXPECT_EQ(pre.cin, 128);
  EXPECT_EQ(pre.cout, 1536);
  EXPECT_EQ(pre.padding, 3);
  EXPECT_EQ(post.cin, 24);
  EXPECT_EQ(post.cout, 1);
  EXPECT_EQ(post.l_in, 96 * 512);
  EXPECT_FALSE(post.bias);
  EXPECT_EQ(model("bigvgan_v2_24khz_100band_256x").named_shape("pre", 8).cin, 100);
  EXPECT_EQ(model("hifigan_v1").named_shape("pre", 8).cin, 80);
  EXPECT_TRUE(model("hifigan_v1").named_shape("post", 8).bias);
}

TEST(Stages, GeneratorOrder) {
  const Model &m = model("bigvgan_v2_44khz_128band_512x");
  const auto g = m.generator_order();
  ASSERT_EQ(g.size(), size_t(1 + 6 + 108 + 1)); // pre, 6 upsamples, 18 AMP convs each, post
  EXPECT_EQ(g.front(), "pre");
  EXPECT_EQ(g.back(), "post");
  EXPECT_EQ(g[1], "up0");
  // convs1 dilation d, then convs2 dilation 1, per dilation, per resblock kernel.
  const std::vector<std::string> first{"amp0.k3.d1", "amp0.k3.d1", "amp0.k3.d3", "amp0.k3.d1",
                                       "amp0.k3.d5", "amp0.k3.d1", "amp0.k7.d1"};
  EXPECT_TRUE(std::equal(first.begin(), first.end(), g.begin() + 2));
  EXPECT_EQ(g[20], "up1");
  EXPECT_EQ(std::count(g.begin(), g.end(), "amp2.k11.d1"), 4);
  // The problem of the generator chains: each convolution's output is the next one's input.
  const Problem p = plan_stage("generator", 8, m);
  ASSERT_EQ(p.shapes.size(), g.size());
  for (size_t i = 1; i < p.shapes.size(); ++i) {
    EXPECT_EQ(p.shapes[i].cin, p.shapes[i - 1].cout) << i;
    EXPECT_EQ(p.shapes[i].l_in, p.shapes[i - 1].l_out()) << i;
  }
}

TEST(Stages, GroupsExpandOnceInOrder) {
  const Model &m = model("hifigan_v1");
  const auto amp1 = expand_stages({"amp1"}, m);
  EXPECT_EQ(amp1.size(), 9u);
  EXPECT_EQ(amp1.front(), "amp1.k3.d1");
  EXPECT_EQ(amp1.back(), "amp1.k11.d5");
  EXPECT_EQ(expand_stages({"amp"}, m).size(), 36u);
  EXPECT_EQ(expand_stages({"post", "up1", "pre", "amp0.k7.d3"}, m),
            (std::vector<std::string>{"pre", "amp0.k7.d3", "up1", "post"}));
  EXPECT_EQ(expand_stages({"chain"}, m),
            (std::vector<std::string>{"up0", "up1", "up2", "up3", "chain"}));
  const auto gen = expand_stages({"generator", "amp0"}, m);
  EXPECT_EQ(gen.size(), size_t(1 + 4 + 36 + 1 + 1)); // distinct stages, then the case itself
  EXPECT_EQ(gen.back(), "generator");
  EXPECT_EQ(expand_stages({"causal"}, m).size(), 64u);
  EXPECT_EQ(expand_stages({"causal.c1024.l64.state", "causal.c1024.l64.b1.state"}, m),
            (std::vector<std::string>{"causal.c1024.l64.b1.state"}));
}

TEST(Stages, CausalNames) {
  const CausalConvShape s = causal_shape("causal.c2048.l8192.b8.k3.state.none");
  EXPECT_EQ(s.channels, 2048);
  EXPECT_EQ(s.length, 8192);
  EXPECT_EQ(s.batch, 8);
  EXPECT_EQ(s.k, 3);
  EXPECT_TRUE(s.initial_state);
  EXPECT_EQ(s.activation, Activation::none);
  EXPECT_EQ(causal_stage_name(s), "causal.c2048.l8192.b8.k3.state.none");
  const Problem p = plan_stage("causal.c4.l5.b2.state", 96, model("hifigan_v1"));
  ASSERT_TRUE(p.causal.has_value());
  EXPECT_EQ(p.frames, 5);
  EXPECT_EQ(p.output_elems(), 2 * 4 * 5 + 2 * 4 * 3); // y, then the final state
}

TEST(Stages, BadNamesSayWhatTheModelHas) {
  const Model &m = model("hifigan_v1");
  auto message = [&](const std::string &w) {
    try {
      expand_stages({w}, m);
    } catch (const DataError &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("up4").find("up0..3"), std::string::npos) << message("up4");
  EXPECT_NE(message("amp4").find("amp0..amp3"), std::string::npos);
  EXPECT_NE(message("amp0.k5.d1").find("AMP kernels 3, 7, 11"), std::string::npos);
  EXPECT_NE(message("amp0.k3.d2").find("AMP dilations 1, 3, 5"), std::string::npos);
  EXPECT_NE(message("amp0.k03.d1").find("AMP kernels"), std::string::npos);
  EXPECT_NE(message("causal.c0.l4").find("expected causal.c"), std::string::npos);
  EXPECT_NE(message("causal.c4.l4.k1").find("k must be in"), std::string::npos);
  EXPECT_NE(message("causal.c4.l4.state.b2").find("at 'b2'"), std::string::npos);
  EXPECT_NE(message("sideways").find("unknown stage 'sideways'"), std::string::npos);
  for (const char *w : {"up4", "amp0.k5.d1", "causal.c0.l4", "sideways"})
    EXPECT_EQ(message(w).find('\n'), std::string::npos) << "one line: " << w;
}

} // namespace
} // namespace convbench::bench
