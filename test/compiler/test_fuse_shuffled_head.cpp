// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): a pixel-shuffled 1x1 and the
// dequantizing 1x1 head reading it as one op (compiler/fusion/ShuffledHead.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// ---- a pixel-shuffled 1x1 and the dequantizing 1x1 head reading it ----------------------------

// Options of shuffled_head_graph.
struct PsHead {
  int64_t in_channels = 4;     // C_in of the shuffled convolution
  int64_t channels = 4;        // C after the shuffle (the shuffled convolution writes C r^2)
  int64_t factor = 2;          // the shuffle's upscale_factor r
  int64_t head_out = 4;        // N_out of the head
  int64_t ps_kernel = 1;       // the shuffled convolution's kernel (padding ps_kernel / 2)
  int64_t head_kernel = 1;     // the head's kernel (padding head_kernel / 2)
  double mid_dq_scale = 0.05;  // how the head's dq reads its input (written at 0.05)
  bool residual_add = false;   // 9 dq 'mf', 10 dq 'rq' (0.4, 0), 11 add, 12 q 'sq' (0.05, -10)
  bool dequantized = true;     // the head's output dequantized (the graph's last dq), else 'yq'
};

// 0 weight dq 'psf' [C r^2, C_in, k, k], 1 weight dq 'hwf' [N, C, hk, hk], 2 dq 'x' of xq
// [1, C_in, 3, 2] (0.1, 2), 3 conv k x k (C_in -> C r^2), 4 relu, 5 q 'cq' (0.05, -10), 6 dq, 7
// pixel_shuffle(r), 8 q 'mq' (0.05, -10) [1, C, 3 r, 2 r] [+ the residual add, its output
// 'sq' then the head's input], 9 dq 'hf' (mid_dq_scale, -10), 10 head conv hk x hk (C -> N),
// 11 q 'yq' (0.2, 3), 12 dq 'yf' (0.2, 3), the graph's output.
Builder shuffled_head_graph(const PsHead& o = {}) {
  Builder b;
  const int64_t c = o.channels, r = o.factor, n = o.head_out, k = o.ps_kernel;
  const int64_t hk = o.head_kernel, shuffled = c * r * r;
  const std::vector<int64_t> mid_shape = {1, c, 3 * r, 2 * r};
  b.input("xq", DType::Int8, {1, o.in_channels, 3, 2});
  b.per_channel_weight({shuffled, o.in_channels, k, k}, std::vector<float>(size_t(shuffled), 0.25f),
                       std::vector<int32_t>(size_t(shuffled), 0), "ps");
  std::vector<float> head_scales = {0.5f, 0.25f, 0.125f, 0.5f};
  head_scales.resize(size_t(n), 0.375f);
  b.per_channel_weight({n, c, hk, hk}, head_scales, std::vector<int32_t>(size_t(n), 0), "hw");
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "psf", "", "c", {1, shuffled, 3, 2},
         {{"padding", std::vector<int64_t>{k / 2, k / 2}}});
  b.value("cr", DType::Float32, {1, shuffled, 3, 2});
  b.node("aten.relu", {"c"}, {}, {"cr"});
  b.q("cr", "cq", 0.05, -10);
  b.dq("cq", "cf", 0.05, -10);
  b.value("p", DType::Float32, mid_shape);
  b.node("aten.pixel_shuffle", {"cf"}, {{"upscale_factor", r}}, {"p"});
  b.q("p", "mq", 0.05, -10);
  std::string mid = "mq";
  if (o.residual_add) {
    b.residual_add("mq", "mf", 0.05, -10, "sq", 0.05, -10);
    mid = "sq";
  }
  b.dq(mid, "hf", o.mid_dq_scale, -10);
  b.conv("hf", "hwf", "", "y", {1, n, 3 * r, 2 * r},
         {{"padding", std::vector<int64_t>{hk / 2, hk / 2}}});
  b.q("y", "yq", 0.2, 3);
  if (!o.dequantized) {
    b.output("yq");
    return b;
  }
  b.dq("yq", "yf", 0.2, 3);
  b.output("yf");
  return b;
}

// The shuffled convolution's input, qparams and weights, its output's parameters as mid_*, its
// upscale_factor, then the head's weights and float output: one node, 'mq' gone.
TEST(Fuse, ShuffledPointwiseThenDequantizingHeadBecomeOneOp) {
  Builder b = shuffled_head_graph();
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_ps_pw_q_dq"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "ps", "ps_scales", "cq_bias", "hw",
                                                "hw_scales", "yq_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yf"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_i(n, "upscale_factor"), 2);
  EXPECT_EQ(arg_d(n, "mid_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "mid_zero_point"), -10);
  EXPECT_EQ(arg_i(n, "mid_activation_min"), -10);  // the relu: q(0) = -10
  EXPECT_EQ(arg_i(n, "mid_activation_max"), 127);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
  for (const char* gone : {"stride", "padding", "dilation", "groups"}) {
    EXPECT_EQ(n.args.count(gone), 0u) << gone;
  }
  EXPECT_EQ(n.origin, "node 10 (aten.convolution) fused into q8ta_conv2d_ps_pw_q_dq");
  EXPECT_EQ(g.value("ps").shape, (std::vector<int64_t>{16, 4, 1, 1}));
  EXPECT_EQ(floats_of(g.value("ps_scales")), std::vector<float>(16, 0.25f));
  EXPECT_EQ(floats_of(g.value("cq_bias")), std::vector<float>(16, 0.0f));
  EXPECT_EQ(g.value("hw").shape, (std::vector<int64_t>{4, 4, 1, 1}));
  EXPECT_EQ(floats_of(g.value("hw_scales")), (std::vector<float>{0.5f, 0.25f, 0.125f, 0.5f}));
  for (const char* gone : {"mq", "cq", "c", "cr", "cf", "p", "hf", "y", "yq", "x", "psf", "hwf"}) {
    EXPECT_FALSE(g.has_value(gone)) << gone;
  }
  EXPECT_EQ(g.value("yf").dtype, DType::Float32);
  expect_quant(g.value("xq"), 0.1, 2, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused pixel-shuffled q8ta_conv2d_ps 'mq' (node 2..8) into "
                       "q8ta_conv2d_q_dq 'yf' (node 9..12): q8ta_conv2d_ps_pw_q_dq reads 'xq' "
                       "and writes 'yf'; 'mq' (4 channels) is not written"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "folded 2 weight dequantize node(s) (node 0..1)")) << all_lines(r);
  expect_valid(g);
}

// Where the two cannot be one op, the report says why and both stay what they became.
TEST(Fuse, ShuffledPointwiseAndHeadThatCannotBeOneOp) {
  struct Case {
    Builder b;
    std::string shuffled, head, why;  // each convolution's op, output and nodes; the reason
  };
  PsHead three_by_three, head_three_by_three, residual, int8_head, requantized, wide_input, wide,
      unshuffled, too_far;
  three_by_three.ps_kernel = 3;
  head_three_by_three.head_kernel = 3;
  residual.residual_add = true;
  int8_head.dequantized = false;
  requantized.mid_dq_scale = 0.1;
  wide_input.in_channels = 260;
  wide.channels = 260;
  unshuffled.factor = 1;
  too_far.factor = 17;
  const std::string ps = "q8ta_conv2d_ps 'mq' (node 2..8)";
  const std::string head = "q8ta_conv2d_q_dq 'yf' (node 9..12)";
  const std::string geometry = " must be a 1x1 of stride 1, padding 0, dilation 1 and groups 1";
  Case cases[] = {
      {shuffled_head_graph(), ps, head, "'mq' is a graph output"},
      {shuffled_head_graph(), ps, head, "'mq' has 2 consumers (nodes 9, 13)"},
      {shuffled_head_graph(three_by_three), ps, head,
       "a 3x3 kernel: the pixel-shuffled convolution" + geometry},
      {shuffled_head_graph(head_three_by_three), ps, head, "a 3x3 kernel: the head" + geometry},
      // The shuffled convolution took a residual add into its store.
      {shuffled_head_graph(residual), "q8ta_conv2d_add 'sq' (node 2..12)",
       "q8ta_conv2d_q_dq 'yf' (node 13..16)",
       "the pixel-shuffled convolution is q8ta_conv2d_add: only q8ta_conv2d_ps (its shuffled "
       "int8 output, no residual add) fuses"},
      {shuffled_head_graph(int8_head), ps, "q8ta_conv2d 'yq' (node 9..11)",
       "the head is q8ta_conv2d: only q8ta_conv2d_q_dq (requantized, then dequantized to "
       "float32) fuses"},
      {shuffled_head_graph(requantized), ps, head,
       "the dq (scale 0.1 zero_point -10 range -128..127) reads 'mq' with other parameters than "
       "it was written with (scale 0.05 zero_point -10 range -128..127)"},
      {shuffled_head_graph(wide_input), ps, head,
       "260 input channels: the fused kernel keeps a pixel's words of them in registers, at "
       "most 256"},
      {shuffled_head_graph(wide), ps, head,
       "260 channels after the shuffle: the fused kernel keeps a pixel's words of them in "
       "registers, at most 256"},
      // A shuffle by 1 moved the bytes in place into the convolution's store.
      {shuffled_head_graph(unshuffled), ps, head,
       "upscale_factor 1: nothing is shuffled (two plain 1x1 convolutions are no "
       "q8ta_conv2d_ps_pw_q_dq)"},
      {shuffled_head_graph(too_far), ps, head,
       "upscale_factor 17: the fused op shuffles by at most 16"},
  };
  cases[0].b.output("mq");
  cases[1].b.dq("mq", "m2", 0.05, -10);
  cases[1].b.output("m2");
  for (Case& c : cases) {
    const PassReport r = fuse_and_lower(c.b.g);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_ps_pw_q_dq"), 0) << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, c.shuffled.substr(0, c.shuffled.find(' '))), 1) << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, c.head.substr(0, c.head.find(' '))), 1) << all_lines(r);
    EXPECT_TRUE(
        has_line(r, "not fused: pixel-shuffled " + c.shuffled + " into " + c.head + ": " + c.why))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// The head's output channels have no limit (the kernel loops over them): 68 classes fuse.
TEST(Fuse, ShuffledHeadOfManyClassesBecomesOneOp) {
  PsHead o;
  o.head_out = 68;
  Builder b = shuffled_head_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_ps_pw_q_dq"})) << all_lines(r);
  EXPECT_EQ(b.g.value("yf").shape, (std::vector<int64_t>{1, 68, 6, 4}));
  expect_valid(b.g);
}

// 2 channels after the shuffle: the convolution's store does not take the shuffle (a packed
// word would hold two sub-pixel phases), so the head reads a q8ta_pixel_shuffle, no
// pixel-shuffled convolution: the three stay apart and this join has no line.
TEST(Fuse, ShuffledHeadOfChannelsNotAMultipleOf4StaysApart) {
  PsHead o;
  o.channels = 2;
  Builder b = shuffled_head_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g),
            (std::vector<std::string>{"q8ta_conv2d", "q8ta_pixel_shuffle", "q8ta_conv2d_q_dq"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.pixel_shuffle -> q (node 6..8) into the "
                       "epilogue of q8ta_conv2d 'cq': 2 channels after the shuffle, not a "
                       "multiple of 4: a packed word would hold channels of two sub-pixel "
                       "phases"))
      << all_lines(r);
  for (const auto& line : r.lines) {
    EXPECT_EQ(line.find("pixel-shuffled"), std::string::npos) << line;
  }
  expect_valid(b.g);
}

// --no-fuse-epilogue: no q8ta_conv2d_ps nor q8ta_conv2d_q_dq to join, so the convolutions, the
// shuffle and the dequantize stay four ops, and this join has no line.
TEST(Fuse, ShuffledHeadStaysApartWithoutEpilogueFusion) {
  Builder b = shuffled_head_graph();
  FuseOptions options;
  options.fuse_epilogues = false;
  const PassReport r = fuse_and_lower(b.g, options);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_pixel_shuffle",
                                                   "q8ta_conv2d", "q8ta_dequantize"}))
      << all_lines(r);
  for (const auto& line : r.lines) {
    EXPECT_EQ(line.find("pixel-shuffled"), std::string::npos) << line;
  }
  expect_valid(b.g);
}

}  // namespace
