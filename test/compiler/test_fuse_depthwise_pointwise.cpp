// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): a depthwise convolution, the
// 1x1 reading it and the 1x1 expansion before them as one op
// (compiler/fusion/DepthwisePointwise.cpp).
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

// ---- a depthwise convolution and the 1x1 reading it, as one op ----------------------------------

// Options of depthwise_pointwise_graph.
struct DwPw {
  int64_t channels = 8;   // C of the depthwise
  int64_t pw_out = 4;     // C_out of the second convolution
  int64_t pw_kernel = 1;  // the second convolution's kernel (padding pw_kernel / 2)
  int64_t pw_stride = 1;
  double mid_dq_scale = 0.05;  // how the second convolution's dq reads 'mq' (written at 0.05)
  bool residual_add = false;   // 9 dq 'yq', 10 dq 'rq' (0.4, 0), 11 add, 12 q (0.5, 1) 'sq'
};

// depthwise_pointwise_graph's nodes after b's, reading int8 'xq' [1, C, 6, 5] (b's).
void add_depthwise_pointwise(Builder& b, const DwPw& o) {
  const int64_t c = o.channels, n = o.pw_out, k = o.pw_kernel;
  const int64_t hw = (3 + 2 * (k / 2) - k) / o.pw_stride + 1;
  b.per_channel_weight({c, 1, 3, 3}, std::vector<float>(size_t(c), 0.25f),
                       std::vector<int32_t>(size_t(c), 0), "dw");
  std::vector<float> pw_scales = {0.5f, 0.25f, 0.125f, 0.5f};
  pw_scales.resize(size_t(n), 0.375f);
  b.per_channel_weight({n, c, k, k}, pw_scales, std::vector<int32_t>(size_t(n), 0), "pw");
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "dwf", "", "m", {1, c, 3, 3},
         {{"groups", c}, {"stride", std::vector<int64_t>{2, 2}}});
  b.value("mr", DType::Float32, {1, c, 3, 3});
  b.node("aten.relu", {"m"}, {}, {"mr"});
  b.q("mr", "mq", 0.05, -10);
  b.dq("mq", "mf", o.mid_dq_scale, -10);
  b.conv("mf", "pwf", "", "y", {1, n, hw, hw},
         {{"padding", std::vector<int64_t>{k / 2, k / 2}},
          {"stride", std::vector<int64_t>{o.pw_stride, o.pw_stride}}});
  b.q("y", "yq", 0.2, 3);
  if (!o.residual_add) {
    b.output("yq");
    return;
  }
  b.residual_add("yq", "yf", 0.2, 3, "sq", 0.5, 1);
  b.output("sq");
}

// 0 weight dq 'dwf' [C, 1, 3, 3], 1 weight dq 'pwf' [N, C, k, k], 2 dq 'x' of xq [1, C, 6, 5]
// (0.1, 2), 3 depthwise conv 3x3 (groups C, stride 2, padding 1) [1, C, 3, 3], 4 relu, 5 q 'mq'
// (0.05, -10), 6 dq 'mf' (mid_dq_scale, -10), 7 conv k x k (C -> N, `pw_stride`), 8 q 'yq'
// (0.2, 3) [+ the residual add].
Builder depthwise_pointwise_graph(const DwPw& o = {}) {
  Builder b;
  b.input("xq", DType::Int8, {1, o.channels, 6, 5});
  add_depthwise_pointwise(b, o);
  return b;
}

// The depthwise's input (qparams `input_scale`, `input_zero_point`: the fused op's input), its
// weights and geometry, its output's parameters as mid_*, then the 1x1's weights and output:
// one node, 'mq' gone.
void expect_depthwise_pointwise_head(const Node& n, double input_scale = 0.1,
                                     int64_t input_zero_point = 2) {
  EXPECT_EQ(arg_d(n, "input_scale"), input_scale);
  EXPECT_EQ(arg_i(n, "input_zero_point"), input_zero_point);
  EXPECT_EQ(arg_l(n, "stride"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(arg_l(n, "padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_d(n, "mid_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "mid_zero_point"), -10);
  EXPECT_EQ(arg_i(n, "mid_activation_min"), -10);  // the relu: q(0) = -10
  EXPECT_EQ(arg_i(n, "mid_activation_max"), 127);
  EXPECT_EQ(n.args.count("groups"), 0u);
  EXPECT_EQ(n.args.count("upscale_factor"), 0u);
}

TEST(Fuse, DepthwiseThenPointwiseBecomeOneOp) {
  Builder b = depthwise_pointwise_graph();
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_dw_pw"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "dw", "dw_scales", "mq_bias", "pw",
                                                "pw_scales", "yq_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  expect_depthwise_pointwise_head(n);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
  EXPECT_EQ(n.origin, "node 7 (aten.convolution) fused into q8ta_conv2d_dw_pw");
  EXPECT_EQ(g.value("dw").shape, (std::vector<int64_t>{8, 1, 3, 3}));
  EXPECT_EQ(floats_of(g.value("dw_scales")), std::vector<float>(8, 0.25f));
  EXPECT_EQ(floats_of(g.value("mq_bias")), std::vector<float>(8, 0.0f));
  EXPECT_EQ(floats_of(g.value("pw_scales")), (std::vector<float>{0.5f, 0.25f, 0.125f, 0.5f}));
  for (const char* gone : {"mq", "m", "mr", "mf", "x", "dwf", "pwf"}) {
    EXPECT_FALSE(g.has_value(gone)) << gone;
  }
  expect_quant(g.value("xq"), 0.1, 2, -128, 127);
  expect_quant(g.value("yq"), 0.2, 3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused depthwise q8ta_conv2d 'mq' (node 2..5) into q8ta_conv2d 'yq' "
                       "(node 6..8): q8ta_conv2d_dw_pw reads 'xq' and writes 'yq'; 'mq' "
                       "(8 channels) is not written"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "folded 2 weight dequantize node(s) (node 0..1)")) << all_lines(r);
  expect_valid(g);
}

// The 1x1 took its residual add first (q8ta_conv2d_add, upscale_factor 1): its own output's
// parameters stay conv_*, the add's output_*.
TEST(Fuse, DepthwiseThenPointwiseWithItsResidualAddBecomeOneOp) {
  DwPw o;
  o.residual_add = true;
  Builder b = depthwise_pointwise_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_dw_pw_add"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "dw", "dw_scales", "mq_bias", "pw",
                                                "pw_scales", "yq_bias", "rq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"sq"}));
  expect_depthwise_pointwise_head(n);
  EXPECT_EQ(arg_d(n, "conv_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "conv_zero_point"), 3);
  EXPECT_EQ(arg_i(n, "conv_activation_min"), -128);
  EXPECT_EQ(arg_i(n, "conv_activation_max"), 127);
  EXPECT_EQ(arg_d(n, "other_scale"), 0.4);
  EXPECT_EQ(arg_i(n, "other_zero_point"), 0);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.5);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 1);
  EXPECT_EQ(n.origin, "node 7 (aten.convolution) fused into q8ta_conv2d_dw_pw_add");
  EXPECT_FALSE(g.has_value("mq"));
  EXPECT_FALSE(g.has_value("yq"));
  EXPECT_TRUE(has_line(r,
                       "fused depthwise q8ta_conv2d 'mq' (node 2..5) into q8ta_conv2d_add "
                       "'sq' (node 6..12): q8ta_conv2d_dw_pw_add reads 'xq' and writes 'sq'; "
                       "'mq' (8 channels) is not written"))
      << all_lines(r);
  expect_valid(g);
}

// Where the two cannot be one op, the report says why and both stay (the 1x1 as what it became).
TEST(Fuse, DepthwiseThenPointwiseThatCannotBeOneOp) {
  struct Case {
    Builder b;
    std::string pointwise, why;  // the 1x1's op and output, and the reason
    bool epilogues = true;
  };
  DwPw three_by_three, strided, requantized, wide, shuffled;
  three_by_three.pw_kernel = 3;
  strided.pw_stride = 2;
  requantized.mid_dq_scale = 0.1;
  wide.channels = 1028;
  shuffled.pw_out = 16;
  const std::string geometry =
      ": the second convolution must be a 1x1 of stride 1, padding 0, dilation 1 and groups 1";
  Case cases[] = {
      {depthwise_pointwise_graph(), "q8ta_conv2d 'yq' (node 6..8)", "'mq' is a graph output"},
      {depthwise_pointwise_graph(), "q8ta_conv2d 'yq' (node 6..8)",
       "'mq' has 2 consumers (nodes 6, 9)"},
      {depthwise_pointwise_graph(three_by_three), "q8ta_conv2d 'yq' (node 6..8)",
       "a 3x3 kernel" + geometry},
      {depthwise_pointwise_graph(strided), "q8ta_conv2d 'yq' (node 6..8)",
       "stride [2, 2]" + geometry},
      {depthwise_pointwise_graph(requantized), "q8ta_conv2d 'yq' (node 6..8)",
       "the dq (scale 0.1 zero_point -10 range -128..127) reads 'mq' with other parameters than "
       "it was written with (scale 0.05 zero_point -10 range -128..127)"},
      {depthwise_pointwise_graph(wide), "q8ta_conv2d 'yq' (node 6..8)",
       "1028 channels: the fused kernel keeps the depthwise output's tile in shared memory, at "
       "most 1024 channels"},
      {depthwise_pointwise_graph(), "q8ta_conv2d 'yq' (node 6..8)",
       "epilogue fusion is off (--no-fuse-epilogue)", false},
      // The 1x1 writes its output pixel-shuffled (its store moved the shuffle's bytes).
      {depthwise_pointwise_graph(shuffled), "q8ta_conv2d_ps 'p' (node 6..11)",
       "q8ta_conv2d_ps writes its output pixel-shuffled: the fused op's store writes int8, or "
       "adds a residual tensor (q8ta_conv2d_add with upscale_factor 1)"},
      // The 1x1 dequantizes its output in its store (the graph's last dequantize).
      {depthwise_pointwise_graph(), "q8ta_conv2d_q_dq 'yf' (node 6..9)",
       "q8ta_conv2d_q_dq writes no plain int8 output: the fused op's store writes int8, or adds a "
       "residual tensor (q8ta_conv2d_add with upscale_factor 1)"},
  };
  cases[0].b.output("mq");
  cases[1].b.dq("mq", "m2", 0.05, -10);
  cases[1].b.output("m2");
  {  // 1x1 on 8 -> 16 channels, then a pixel shuffle by 2 moving its bytes: [1, 4, 6, 6]
    Builder& b = cases[7].b;
    b.g.outputs.clear();
    b.dq("yq", "yf", 0.2, 3);
    b.value("ps", DType::Float32, {1, 4, 6, 6});
    b.node("aten.pixel_shuffle", {"yf"}, {{"upscale_factor", int64_t{2}}}, {"ps"});
    b.q("ps", "p", 0.2, 3);
    b.output("p");
  }
  cases[8].b.g.outputs.clear();
  cases[8].b.dq("yq", "yf", 0.2, 3);
  cases[8].b.output("yf");
  for (Case& c : cases) {
    FuseOptions options;
    options.fuse_epilogues = c.epilogues;
    const PassReport r = fuse_and_lower(c.b.g, options);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d"), c.pointwise.rfind("q8ta_conv2d ", 0) == 0 ? 2 : 1)
        << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_dw_pw"), 0) << all_lines(r);
    EXPECT_TRUE(has_line(
        r, "not fused: depthwise q8ta_conv2d 'mq' (node 2..5) into " + c.pointwise + ": " + c.why))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// A one-channel depthwise convolution of the graph's first quantize took it into its load
// (q8ta_conv2d_fq, tried before this join): the fused op reads int8, so the two stay apart.
TEST(Fuse, DepthwiseThatQuantizesOnLoadStaysApart) {
  DwPw o;
  o.channels = 1;
  Builder b = depthwise_pointwise_graph(o);
  b.g.inputs = {"xf"};
  b.value("xf", DType::Float32, {1, 1, 6, 5});
  b.g.nodes.insert(b.g.nodes.begin(), Node{kQ, {"xf"}, q_args(0.1, 2), {"xq"}, "node 0 (q)"});
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_fq", "q8ta_conv2d"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: depthwise q8ta_conv2d_fq 'mq' (nodes 0, 3..6) into "
                       "q8ta_conv2d 'yq' (node 7..9): the depthwise is q8ta_conv2d_fq: only a "
                       "plain q8ta_conv2d (int8 output) fuses"))
      << all_lines(r);
  expect_valid(b.g);
}

// A 1x1 after a convolution that is not depthwise is simply not this pattern: no line.
TEST(Fuse, PointwiseAfterADenseConvIsNotReportedAsDepthwise) {
  Builder b = depthwise_pointwise_graph();
  b.g.nodes[3].args["groups"] = int64_t{2};
  b.g.value("dw").shape = {8, 4, 3, 3};
  b.g.value("dw").data = ramp_i8(8 * 4 * 9);
  b.g.value("dwf").shape = {8, 4, 3, 3};
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_conv2d"})) << all_lines(r);
  for (const auto& line : r.lines) EXPECT_EQ(line.find("depthwise"), std::string::npos) << line;
  expect_valid(b.g);
}

// ---- then the 1x1 expansion before them (an inverted-residual block) ---------------------------

// Options of expansion_graph.
struct Expand {
  DwPw dw_pw;
  int64_t kernel = 1;  // the expansion's kernel (padding kernel / 2)
  int64_t stride = 1;  // (its input [1, 4, 6 stride, 5 stride])
  int64_t groups = 1;
  double write_scale = 0.1;  // the expansion's q of 'xq' (the depthwise's dq reads (0.1, 2))
  bool float_input = false;  // 'iq' the quantize (0.3, 1) of float input 'if', node 0 (the
                             // other nodes one later)
};

// 0 weight dq 'ef' [C, 4 / groups, k, k], 1 dq 'i' of iq [1, 4, 6 s, 5 s] (0.3, 1), 2 conv
// k x k (4 -> C), 3 hardtanh(0, 6), 4 q 'xq' (write_scale, 2) [1, C, 6, 5], then
// depthwise_pointwise_graph's nodes as 5.. (5 weight dq 'dwf', 6 weight dq 'pwf', 7 dq 'x', 8
// depthwise, 9 relu, 10 q 'mq', 11 dq 'mf', 12 1x1, 13 q 'yq' [+ 14.. the residual add]).
Builder expansion_graph(const Expand& o = {}) {
  Builder b;
  const int64_t c = o.dw_pw.channels, k = o.kernel, s = o.stride;
  if (o.float_input) {
    b.input("if", DType::Float32, {1, 4, 6 * s, 5 * s});
    b.q("if", "iq", 0.3, 1);
  } else {
    b.input("iq", DType::Int8, {1, 4, 6 * s, 5 * s});
  }
  b.per_channel_weight({c, 4 / o.groups, k, k}, std::vector<float>(size_t(c), 0.125f),
                       std::vector<int32_t>(size_t(c), 0), "e");
  b.dq("iq", "i", 0.3, 1);
  b.conv("i", "ef", "", "ec", {1, c, 6, 5},
         {{"padding", std::vector<int64_t>{k / 2, k / 2}},
          {"stride", std::vector<int64_t>{s, s}},
          {"groups", o.groups}});
  b.value("er", DType::Float32, {1, c, 6, 5});
  b.node("aten.hardtanh", {"ec"}, {{"min_val", 0.0}, {"max_val", 6.0}}, {"er"});
  b.q("er", "xq", o.write_scale, 2);
  add_depthwise_pointwise(b, o.dw_pw);
  return b;
}

// The expansion's input, qparams and weights, its output's parameters as expand_*, then the
// merged depthwise -> 1x1's arguments after its input qparams: one node, 'xq' and 'mq' gone.
void expect_expansion_head(const Graph& g, const Node& n) {
  expect_depthwise_pointwise_head(n, 0.3, 1);
  EXPECT_EQ(arg_d(n, "expand_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "expand_zero_point"), 2);
  // hardtanh(0, 6) quantized at (0.1, 2): 0 / 0.1 + 2 and 6 / 0.1 + 2.
  EXPECT_EQ(arg_i(n, "expand_activation_min"), 2);
  EXPECT_EQ(arg_i(n, "expand_activation_max"), 62);
  EXPECT_EQ(g.value("e").shape, (std::vector<int64_t>{8, 4, 1, 1}));
  EXPECT_EQ(floats_of(g.value("e_scales")), std::vector<float>(8, 0.125f));
  EXPECT_EQ(floats_of(g.value("xq_bias")), std::vector<float>(8, 0.0f));
  for (const char* gone : {"xq", "i", "ec", "er", "ef", "mq", "x", "m", "mr", "mf"}) {
    EXPECT_FALSE(g.has_value(gone)) << gone;
  }
  expect_quant(g.value("iq"), 0.3, 1, -128, 127);
}

TEST(Fuse, ExpansionDepthwiseAndPointwiseBecomeOneOp) {
  Builder b = expansion_graph();
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_pw_dw_pw"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"iq", "e", "e_scales", "xq_bias", "dw", "dw_scales",
                                                "mq_bias", "pw", "pw_scales", "yq_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  expect_expansion_head(g, n);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
  EXPECT_EQ(n.origin, "node 12 (aten.convolution) fused into q8ta_conv2d_pw_dw_pw");
  expect_quant(g.value("yq"), 0.2, 3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused depthwise q8ta_conv2d 'mq' (node 7..10) into q8ta_conv2d 'yq' "
                       "(node 11..13): q8ta_conv2d_dw_pw reads 'xq' and writes 'yq'; 'mq' "
                       "(8 channels) is not written"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused 1x1 expansion q8ta_conv2d 'xq' (node 1..4) into "
                       "q8ta_conv2d_dw_pw 'yq' (node 7..13): q8ta_conv2d_pw_dw_pw reads 'iq' "
                       "and writes 'yq'; 'xq' (8 channels) is not written"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "folded 3 weight dequantize node(s) (nodes 0, 5..6)")) << all_lines(r);
  expect_valid(g);
}

// The 1x1 took its residual add: q8ta_conv2d_pw_dw_pw_add, conv_* its own output's parameters.
TEST(Fuse, ExpansionDepthwiseAndPointwiseWithItsResidualAddBecomeOneOp) {
  Expand o;
  o.dw_pw.residual_add = true;
  Builder b = expansion_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_pw_dw_pw_add"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"iq", "e", "e_scales", "xq_bias", "dw", "dw_scales",
                                                "mq_bias", "pw", "pw_scales", "yq_bias", "rq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"sq"}));
  expect_expansion_head(g, n);
  EXPECT_EQ(arg_d(n, "conv_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "conv_zero_point"), 3);
  EXPECT_EQ(arg_d(n, "other_scale"), 0.4);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.5);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 1);
  EXPECT_EQ(n.origin, "node 12 (aten.convolution) fused into q8ta_conv2d_pw_dw_pw_add");
  EXPECT_FALSE(g.has_value("yq"));
  EXPECT_TRUE(has_line(r,
                       "fused 1x1 expansion q8ta_conv2d 'xq' (node 1..4) into "
                       "q8ta_conv2d_dw_pw_add 'sq' (node 7..17): q8ta_conv2d_pw_dw_pw_add "
                       "reads 'iq' and writes 'sq'; 'xq' (8 channels) is not written"))
      << all_lines(r);
  expect_valid(g);
}

// Where the expansion cannot join, the report says why and it stays its own q8ta_conv2d before
// the merged depthwise -> 1x1.
TEST(Fuse, ExpansionThatCannotJoinStaysApart) {
  struct Case {
    Builder b;
    std::string expansion, why;  // the expansion's op, output and nodes, and the reason
  };
  Expand three_by_three, strided, grouped, requantized, quantizing;
  three_by_three.kernel = 3;
  strided.stride = 2;
  grouped.groups = 2;
  requantized.write_scale = 0.2;
  quantizing.kernel = 3;
  quantizing.float_input = true;
  const std::string plain = "q8ta_conv2d 'xq' (node 1..4)";
  const std::string geometry =
      ": the expansion must be a 1x1 of stride 1, padding 0, dilation 1 and groups 1";
  Case cases[] = {
      {expansion_graph(), plain, "'xq' is a graph output"},
      {expansion_graph(), plain, "'xq' has 2 consumers (nodes 7, 14)"},
      {expansion_graph(three_by_three), plain, "a 3x3 kernel" + geometry},
      {expansion_graph(strided), plain, "stride [2, 2]" + geometry},
      {expansion_graph(grouped), plain, "groups 2" + geometry},
      {expansion_graph(requantized), plain,
       "the dq (scale 0.1 zero_point 2 range -128..127) reads 'xq' with other parameters than "
       "it was written with (scale 0.2 zero_point 2 range -128..127)"},
      // The graph's first quantize joined the (3x3) expansion's load first.
      {expansion_graph(quantizing), "q8ta_conv2d_fq 'xq' (nodes 0, 2..5)",
       "the expansion is q8ta_conv2d_fq: only a plain q8ta_conv2d (int8 output) fuses"},
  };
  cases[0].b.output("xq");
  cases[1].b.dq("xq", "x2", 0.1, 2);
  cases[1].b.output("x2");
  for (Case& c : cases) {
    const PassReport r = fuse_and_lower(c.b.g);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_dw_pw"), 1) << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_pw_dw_pw"), 0) << all_lines(r);
    const std::string into = c.expansion.find("_fq") == std::string::npos
                                 ? "q8ta_conv2d_dw_pw 'yq' (node 7..13)"
                                 : "q8ta_conv2d_dw_pw 'yq' (node 8..14)";
    EXPECT_TRUE(
        has_line(r, "not fused: 1x1 expansion " + c.expansion + " into " + into + ": " + c.why))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// --no-fuse-epilogue: the depthwise and the 1x1 stay apart (reported), so the expansion has no
// merged op to join: three q8ta_conv2d, no expansion line.
TEST(Fuse, ExpansionStaysApartWithoutEpilogueFusion) {
  Builder b = expansion_graph();
  FuseOptions options;
  options.fuse_epilogues = false;
  const PassReport r = fuse_and_lower(b.g, options);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_conv2d", "q8ta_conv2d"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: depthwise q8ta_conv2d 'mq' (node 7..10) into q8ta_conv2d "
                       "'yq' (node 11..13): epilogue fusion is off (--no-fuse-epilogue)"))
      << all_lines(r);
  for (const auto& line : r.lines) EXPECT_EQ(line.find("expansion"), std::string::npos) << line;
  expect_valid(b.g);
}

// A depthwise -> 1x1 reading a graph input, or the output of an op that is not a convolution,
// has no expansion: no line.
TEST(Fuse, DepthwisePointwiseAfterNoConvIsNotReportedAsExpanded) {
  Builder from_input = depthwise_pointwise_graph();
  Builder after_relu;
  after_relu.input("iq", DType::Int8, {1, 8, 6, 5});
  after_relu.dq("iq", "i", 0.1, 2);
  after_relu.value("ir", DType::Float32, {1, 8, 6, 5});
  after_relu.node("aten.relu", {"i"}, {}, {"ir"});
  after_relu.q("ir", "xq", 0.1, 2);
  add_depthwise_pointwise(after_relu, {});
  for (Builder* b : {&from_input, &after_relu}) {
    const PassReport r = fuse_and_lower(b->g);
    EXPECT_EQ(count_op(b->g, "q8ta_conv2d_dw_pw"), 1) << all_lines(r);
    for (const auto& line : r.lines) EXPECT_EQ(line.find("expansion"), std::string::npos) << line;
    expect_valid(b->g);
  }
}

}  // namespace
