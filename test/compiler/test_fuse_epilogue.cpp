// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): what joins a convolution's /
// linear's epilogue or load (compiler/fusion/Epilogue.cpp): a pixel shuffle, a residual add, the
// last dequantize, the first quantize.
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

// ---- a pixel shuffle in the convolution's epilogue ---------------------------------------------

// 0 weight dq, 1 dq, 2 conv 3x3 (4 -> c_out channels, `groups`) on [1, 4, 6, 5], 3 q (0.1, -5)
// 'cq', 4 dq (dq_scale, -5), 5 pixel_shuffle(2), 6 q (ps_scale, -5) 'yq'.
Builder conv_shuffle_graph(int64_t c_out, int64_t groups = 1, double dq_scale = 0.1,
                           double ps_scale = 0.1) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 6, 5});
  b.per_channel_weight({c_out, 4 / groups, 3, 3}, std::vector<float>(size_t(c_out), 0.25f),
                       std::vector<int32_t>(size_t(c_out), 0));
  b.constant("b", DType::Float32, {c_out}, f32_bytes(std::vector<float>(size_t(c_out), 0.5f)));
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "wf", "b", "y", {1, c_out, 6, 5}, {{"groups", groups}});
  b.q("y", "cq", 0.1, -5);
  b.dq("cq", "c", dq_scale, -5);
  b.value("p", DType::Float32, {1, c_out / 4, 12, 10});
  b.node("aten.pixel_shuffle", {"c"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.q("p", "yq", ps_scale, -5);
  b.output("yq");
  return b;
}

// A shuffle that moves the bytes of the conv's output becomes the conv's store.
TEST(Fuse, BytePixelShuffleAfterAConvJoinsItsEpilogue) {
  Builder b = conv_shuffle_graph(16);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_ps"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_i(n, "upscale_factor"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -5);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
  EXPECT_EQ(n.origin, "node 2 (aten.convolution) fused into q8ta_conv2d_ps");
  EXPECT_FALSE(g.has_value("cq"));
  expect_quant(g.value("yq"), 0.1, -5, -128, 127);
  EXPECT_EQ(r.lines.at(1),
            "fused dq -> aten.pixel_shuffle -> q (node 4..6) into the epilogue of "
            "q8ta_conv2d 'cq': q8ta_conv2d_ps writes 'yq' pixel-shuffled "
            "(upscale 2)");
  expect_valid(g);
}

// Where the conv's store cannot do the shuffle, the report says why and the shuffle is its own
// op (q8ta_pixel_shuffle, requantizing where the qparams differ).
TEST(Fuse, PixelShuffleTheConvEpilogueCannotTakeIsItsOwnOp) {
  struct Case {
    Builder b;
    std::string why;
    bool epilogues = true;
  };
  Case cases[] = {
      {conv_shuffle_graph(8),
       "2 channels after the shuffle, not a multiple of 4: a packed word "
       "would hold channels of two sub-pixel phases"},
      {conv_shuffle_graph(16, 2),
       "groups 2: the shuffled store computes the channels in "
       "phase-major order, across groups"},
      {conv_shuffle_graph(16, 1, 0.1, 0.2),
       "only a shuffle that moves the bytes joins: input (scale 0.1 zero_point -5 range "
       "-128..127) and output (scale 0.2 zero_point -5 range -128..127) quantization differ"},
      {conv_shuffle_graph(16, 1, 0.2, 0.2),
       "the dq (scale 0.2 zero_point -5 range -128..127) reads 'cq' with other parameters than "
       "it was written with (scale 0.1 zero_point -5 range -128..127)"},
      {conv_shuffle_graph(16), "'cq' is a graph output"},
      {conv_shuffle_graph(16), "epilogue fusion is off (--no-fuse-epilogue)", false},
  };
  cases[4].b.output("cq");
  for (Case& c : cases) {
    FuseOptions options;
    options.fuse_epilogues = c.epilogues;
    const PassReport r = fuse_and_lower(c.b.g, options);
    EXPECT_EQ(ops_of(c.b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_pixel_shuffle"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.pixel_shuffle -> q (node 4..6) into the "
                         "epilogue of q8ta_conv2d 'cq': " +
                             c.why))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.pixel_shuffle -> q (node 4..6) into "
                         "q8ta_pixel_shuffle 'yq'"))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// A linear's output rows are [..., M, N]: a shuffle of that tensor moves N along the width.
TEST(Fuse, PixelShuffleAfterALinearIsItsOwnOp) {
  Builder b;
  b.input("xq", DType::Int8, {1, 8, 2, 6});
  b.per_channel_weight({4, 6}, {0.5f, 0.25f, 0.125f, 0.0625f}, {0, 0, 0, 0});
  b.dq("xq", "x", 0.1, 2);
  b.value("y", DType::Float32, {1, 8, 2, 4});
  b.node("aten.linear", {"x", "wf"}, {}, {"y"});
  b.q("y", "lq", 0.2, 0);
  b.dq("lq", "l", 0.2, 0);
  b.value("p", DType::Float32, {1, 2, 4, 8});
  b.node("aten.pixel_shuffle", {"l"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.q("p", "yq", 0.2, 0);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_linear", "q8ta_pixel_shuffle"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.pixel_shuffle -> q (node 4..6) into the "
                       "epilogue of q8ta_linear 'lq': q8ta_linear writes [..., M, N] rows: "
                       "its N is the shuffle's width, not its channels"))
      << all_lines(r);
}

// ---- a residual add in the convolution's / linear's epilogue ----------------------------------

// 0 weight dq, 1 dq, 2 conv 3x3 (4 -> 4 channels, `groups`) on xq [1, 4, 6, 5], 3 q (0.1, -5)
// 'cq', 4 dq 'c' (dq_scale, -5), 5 dq 'r' of `other` (0.2, 3; xq unless given), 6 add (c + r, or
// r + c with `conv_second`), 7 q (0.3, 1) 'yq'.
Builder conv_add_graph(int64_t groups = 1, double dq_scale = 0.1, bool conv_second = false,
                       std::vector<int64_t> other_shape = {}) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 6, 5});
  std::string other = "xq";
  if (!other_shape.empty()) {
    b.input("oq", DType::Int8, other_shape);
    other = "oq";
  }
  b.per_channel_weight({4, 4 / groups, 3, 3}, {0.5f, 0.25f, 0.125f, 0.5f}, {0, 0, 0, 0});
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "wf", "", "y", {1, 4, 6, 5}, {{"groups", groups}});
  b.q("y", "cq", 0.1, -5);
  b.dq("cq", "c", dq_scale, -5);
  b.dq(other, "r", 0.2, 3);
  b.value("s", DType::Float32, {1, 4, 6, 5});
  b.node("aten.add.Tensor",
         conv_second ? std::vector<std::string>{"r", "c"} : std::vector<std::string>{"c", "r"}, {},
         {"s"});
  b.q("s", "yq", 0.3, 1);
  b.output("yq");
  return b;
}

// The conv's own output parameters move to conv_*, the add's become the op's output_* and
// activation range, and the other operand is read as the last input; either operand order.
TEST(Fuse, ResidualAddJoinsTheConvEpilogue) {
  for (bool conv_second : {false, true}) {
    Builder b = conv_add_graph(1, 0.1, conv_second);
    const PassReport r = fuse_and_lower(b.g);
    const Graph& g = b.g;
    ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_add"})) << all_lines(r);
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "cq_bias", "xq"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(arg_i(n, "upscale_factor"), 1);
    EXPECT_EQ(arg_d(n, "conv_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "conv_zero_point"), -5);
    EXPECT_EQ(arg_i(n, "conv_activation_min"), -128);
    EXPECT_EQ(arg_i(n, "conv_activation_max"), 127);
    EXPECT_EQ(arg_d(n, "other_scale"), 0.2);
    EXPECT_EQ(arg_i(n, "other_zero_point"), 3);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.3);
    EXPECT_EQ(arg_i(n, "output_zero_point"), 1);
    EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
    EXPECT_EQ(n.origin, "node 2 (aten.convolution) fused into q8ta_conv2d_add");
    EXPECT_FALSE(g.has_value("cq"));
    expect_quant(g.value("yq"), 0.3, 1, -128, 127);
    expect_quant(g.value("xq"), 0.1, 2, -128, 127);  // its first reader's (the conv's dq)
    const std::string nodes = conv_second ? "node 4..7" : "node 4..7";
    EXPECT_TRUE(has_line(r, std::string("fused dq, dq -> aten.add.Tensor -> q (") + nodes +
                                ") into the epilogue of q8ta_conv2d 'cq': q8ta_conv2d_add adds "
                                "'xq' and writes 'yq' (activation none)"))
        << all_lines(r);
    expect_valid(g);
  }
}

// A pixel shuffle, then the add: one q8ta_conv2d_add with upscale_factor 2 (refinenet_lite's
// upsampling stages).
TEST(Fuse, ShuffleThenAddJoinTheConvEpilogue) {
  Builder b = conv_shuffle_graph(16);
  b.g.outputs.clear();
  b.input("sq", DType::Int8, {1, 4, 12, 10});
  b.dq("yq", "yf", 0.1, -5);
  b.dq("sq", "sf", 0.05, 0);
  b.value("t", DType::Float32, {1, 4, 12, 10});
  b.node("aten.add.Tensor", {"yf", "sf"}, {}, {"t"});
  b.value("tr", DType::Float32, {1, 4, 12, 10});
  b.node("aten.relu", {"t"}, {}, {"tr"});
  b.q("tr", "tq", 0.2, -128);
  b.output("tq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_add"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b", "sq"}));
  EXPECT_EQ(arg_i(n, "upscale_factor"), 2);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));  // q(0) = -128
  EXPECT_EQ(n.origin, "node 2 (aten.convolution) fused into q8ta_conv2d_add");
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq -> aten.add.Tensor -> aten.relu -> q (node 7..11) into "
                       "the epilogue of q8ta_conv2d_ps 'yq': q8ta_conv2d_add adds 'sq' and "
                       "writes 'tq' (activation relu)"))
      << all_lines(r);
  expect_valid(b.g);
}

// A linear's output plus a tensor of its sizes: q8ta_linear_add.
TEST(Fuse, ResidualAddJoinsTheLinearEpilogue) {
  Builder b = linear_graph();
  b.g.outputs.clear();
  b.input("rq", DType::Int8, {2, 4});
  b.dq("yq", "yf", 0.2, -3);
  b.dq("rq", "rf", 0.4, 0);
  b.value("s", DType::Float32, {2, 4});
  b.node("aten.add.Tensor", {"rf", "yf"}, {}, {"s"});
  b.q("s", "sq", 0.5, 2);
  b.output("sq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_linear_add"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b", "rq"}));
  EXPECT_EQ(arg_d(n, "linear_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "linear_zero_point"), -3);
  EXPECT_EQ(arg_d(n, "other_scale"), 0.4);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.5);
  EXPECT_EQ(n.origin, "node 2 (aten.linear) fused into q8ta_linear_add");
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq -> aten.add.Tensor -> q (node 4..7) into the epilogue of "
                       "q8ta_linear 'yq': q8ta_linear_add adds 'rq' and writes 'sq' "
                       "(activation none)"))
      << all_lines(r);
  expect_valid(b.g);
}

// Where the conv's store cannot take the add, the report says why and the add is its own op.
TEST(Fuse, ResidualAddTheConvEpilogueCannotTakeIsItsOwnOp) {
  struct Case {
    Builder b;
    std::string why;
    bool epilogues = true;
  };
  Case cases[] = {
      {conv_add_graph(4), "a depthwise convolution (groups 4): its kernel's store adds nothing"},
      {conv_add_graph(1, 0.2),
       "the dq (scale 0.2 zero_point -5 range -128..127) reads 'cq' with other parameters than "
       "it was written with (scale 0.1 zero_point -5 range -128..127)"},
      {conv_add_graph(1, 0.1, false, {1, 4, 1, 1}),
       "'oq' [1, 4, 1, 1] is broadcast; the epilogue adds a tensor of the output's sizes "
       "[1, 4, 6, 5]"},
      {conv_add_graph(), "'cq' is a graph output"},
      {conv_add_graph(), "epilogue fusion is off (--no-fuse-epilogue)", false},
  };
  cases[3].b.output("cq");
  for (Case& c : cases) {
    FuseOptions options;
    options.fuse_epilogues = c.epilogues;
    const PassReport r = fuse_and_lower(c.b.g, options);
    EXPECT_EQ(ops_of(c.b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_add"})) << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.add.Tensor -> q (node 4..7) into the "
                         "epilogue of q8ta_conv2d 'cq': " +
                             c.why))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// x + x through one dequantize: the conv's output is both operands, so nothing is left to read.
TEST(Fuse, AddOfAConvOutputToItselfIsItsOwnOp) {
  Builder b = conv_add_graph();
  b.g.nodes[5] = b.g.nodes[4];  // a second dq of cq ...
  b.g.nodes[5].outputs = {"r"};
  b.g.nodes[6].inputs = {"c", "c"};  // ... unread: the add reads 'c' twice
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.add.Tensor -> q (nodes 4, 6..7) into the "
                       "epilogue of q8ta_conv2d 'cq': both operands are its output"))
      << all_lines(r);
  EXPECT_EQ(count_op(b.g, "q8ta_add"), 1) << all_lines(r);
}

// relu after the fused add (FX keeps it apart): it narrows the sum's activation range.
TEST(Fuse, StandaloneReluJoinsTheFusedAdd) {
  Builder b = conv_add_graph();
  b.g.outputs.clear();
  b.dq("yq", "yf", 0.3, 1);
  b.value("a", DType::Float32, {1, 4, 6, 5});
  b.node("aten.relu", {"yf"}, {}, {"a"});
  b.q("a", "hq", 0.3, 1);
  b.output("hq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_add"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"hq"}));
  EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{1, 127}));
  EXPECT_EQ(arg_i(b.g.nodes[0], "conv_activation_min"), -128);
  expect_valid(b.g);
}

// The graph's first quantize before a conv: 0 q 'xq' (0.1, 2) of the float input 'x'
// [1, c_in, 6, 5], 1 weight dq, 2 dq (dq_scale, 2), 3 conv k x k (c_in -> 4, `groups`, padding
// k / 2), 4 q (0.2, -5) 'yq'.
Builder quantized_input_conv_graph(double dq_scale = 0.1, int64_t c_in = 4, int64_t k = 3,
                                   int64_t groups = 1) {
  Builder b;
  b.input("x", DType::Float32, {1, c_in, 6, 5});
  b.q("x", "xq", 0.1, 2);
  b.per_channel_weight({4, c_in / groups, k, k}, {0.5f, 0.25f, 0.125f, 0.5f}, {0, 0, 0, 0});
  b.dq("xq", "xf", dq_scale, 2);
  b.conv("xf", "wf", "", "y", {1, 4, 6, 5},
         {{"padding", std::vector<int64_t>{k / 2, k / 2}}, {"groups", groups}});
  b.q("y", "yq", 0.2, -5);
  b.output("yq");
  return b;
}

// The quantize joins the conv's load: q8ta_conv2d_fq reads the float input, with the q's
// parameters and range as input_*.
TEST(Fuse, FirstQuantizeJoinsTheConvLoad) {
  Builder b = quantized_input_conv_graph();
  b.g.nodes[0].args["quant_min"] = int64_t{-100};
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_fq"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "w_scales", "yq_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_i(n, "input_quant_min"), -100);
  EXPECT_EQ(arg_i(n, "input_quant_max"), 127);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(n.origin, "node 3 (aten.convolution) fused into q8ta_conv2d_fq");
  EXPECT_FALSE(g.has_value("xq"));
  EXPECT_EQ(g.value("x").dtype, DType::Float32);
  EXPECT_TRUE(has_line(r,
                       "fused q (node 0) into the load of q8ta_conv2d 'yq': q8ta_conv2d_fq "
                       "reads 'x' (float32) and quantizes it on load"))
      << all_lines(r);
  expect_valid(g);
}

// Where the conv's load cannot take the quantize, the report says why and it is its own op.
TEST(Fuse, FirstQuantizeTheConvLoadCannotTakeIsItsOwnOp) {
  struct Case {
    Builder b;
    std::string into, why;
    bool epilogues = true;
  };
  const std::string into_conv = "into the load of q8ta_conv2d 'yq': ";
  Case cases[] = {
      {quantized_input_conv_graph(0.2), into_conv,
       "the dq (scale 0.2 zero_point 2 range -128..127) reads 'xq' with other parameters than "
       "it was written with (scale 0.1 zero_point 2 range -128..127)"},
      {quantized_input_conv_graph(), into_conv, "'xq' is a graph output"},
      {quantized_input_conv_graph(), into_conv,
       "'x' has 2 consumers (nodes 0, 5): the float input is read by other nodes too"},
      {quantized_input_conv_graph(), into_conv, "epilogue fusion is off (--no-fuse-epilogue)",
       false},
      // The last dequantize joined the conv's store first.
      {quantized_input_conv_graph(), "into the load of q8ta_conv2d_q_dq 'yf': ",
       "q8ta_conv2d_q_dq has no quantizing load (only q8ta_conv2d, a plain int8 output, has)"},
      // Convolutions whose int8 input takes a faster route than the direct kernel.
      {quantized_input_conv_graph(0.1, 8, 3), into_conv,
       "72 products per output (>= 64) run im2col + GEMM on int8, faster than the direct "
       "kernel"},
      {quantized_input_conv_graph(0.1, 4, 1), into_conv,
       "a 1x1 convolution runs the linear kernels on int8"},
      {quantized_input_conv_graph(0.1, 4, 3, 2), into_conv,
       "groups 2: the grouped / depthwise routes read int8 (only the direct kernel quantizes on "
       "load)"},
  };
  cases[1].b.output("xq");
  cases[2].b.value("r", DType::Float32, {1, 4, 6, 5});
  cases[2].b.node("aten.relu", {"x"}, {}, {"r"});
  cases[2].b.output("r");
  cases[4].b.g.outputs.clear();
  cases[4].b.dq("yq", "yf", 0.2, -5);
  cases[4].b.output("yf");
  for (Case& c : cases) {
    FuseOptions options;
    options.fuse_epilogues = c.epilogues;
    const PassReport r = fuse_and_lower(c.b.g, options);
    EXPECT_EQ(count_op(c.b.g, "q8ta_quantize"), 1) << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_fq"), 0) << all_lines(r);
    EXPECT_TRUE(has_line(r, "not fused: q (node 0) " + c.into + c.why)) << all_lines(r);
    expect_valid(c.b.g);
  }
}

}  // namespace
