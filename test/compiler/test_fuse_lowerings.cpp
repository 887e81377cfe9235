// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): the direct lowerings of
// leftover ops (the families' lower_* in compiler/ops/), int8x4 dtypes with QuantInfo (Int8x4.cpp),
// determinism.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// ---- lowering and dtypes ----------------------------------------------------------------------

TEST(Fuse, LowersLeftoverOps) {
  Builder b;
  b.input("x", DType::Float32, {1, 4, 2, 2});
  b.q("x", "xq", 0.1, 3);  // 0
  b.value("xc", DType::Int8, {1, 4, 2, 2});
  b.node("aten.clone", {"xq"}, {}, {"xc"});  // 1
  b.dq("xc", "xf", 0.1, 3);                  // 2
  b.value("r", DType::Float32, {1, 4, 2, 2});
  b.node("aten.relu", {"xf"}, {}, {"r"});  // 3
  b.value("h", DType::Float32, {1, 4, 2, 2});
  b.node("aten.hardtanh", {"r"}, {{"min_val", 0.0}, {"max_val", int64_t{6}}}, {"h"});  // 4
  b.value("c", DType::Float32, {1, 4, 2, 2});
  b.node("aten.clamp", {"h"}, {{"min", -1.0}}, {"c"});  // 5
  b.value("v", DType::Float32, {4, 2, 2});
  b.node("aten.view_copy", {"c"}, {{"size", std::vector<int64_t>{4, 2, 2}}}, {"v"});  // 6
  b.value("v2", DType::Float32, {2, 8});
  b.node("aten.view_copy", {"v"}, {{"size", std::vector<int64_t>{2, 8}}}, {"v2"});  // 7
  b.value("ps", DType::Float32, {1, 1, 4, 4});
  b.node("aten.pixel_shuffle", {"c"}, {{"upscale_factor", int64_t{2}}}, {"ps"});  // 8
  b.output("v2");
  b.output("ps");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_quantize", "identity", "q8ta_dequantize",
                                                 "relu", "clamp", "float_clamp", "identity",
                                                 "aten.view_copy", "pixel_shuffle"}))
      << all_lines(r);
  const Node& q = g.nodes[0];
  EXPECT_EQ(arg_names(q),
            (std::vector<std::string>{"quant_max", "quant_min", "scale", "zero_point"}));
  EXPECT_EQ(arg_d(q, "scale"), 0.1);
  EXPECT_EQ(arg_i(q, "zero_point"), 3);
  EXPECT_EQ(arg_i(q, "quant_min"), -128);
  EXPECT_EQ(arg_i(q, "quant_max"), 127);
  EXPECT_TRUE(g.nodes[1].args.empty());
  EXPECT_EQ(arg_d(g.nodes[2], "scale"), 0.1);
  EXPECT_EQ(arg_i(g.nodes[2], "zero_point"), 3);
  EXPECT_EQ(arg_d(g.nodes[4], "min"), 0.0);
  EXPECT_EQ(arg_d(g.nodes[4], "max"), 6.0);
  EXPECT_EQ(arg_d(g.nodes[5], "min"), -1.0);
  EXPECT_EQ(arg_d(g.nodes[5], "max"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(arg_i(g.nodes[8], "upscale_factor"), 2);
  EXPECT_EQ(g.nodes[3].origin, "node 3 (aten.relu)");  // origins survive lowering
  // int8 activations around the lowered q/clone/dq.
  for (const char* name : {"xq", "xc"}) {
    EXPECT_EQ(g.value(name).dtype, DType::Int8x4) << name;
    expect_quant(g.value(name), 0.1, 3, -128, 127);
  }
  EXPECT_EQ(g.value("x").dtype, DType::Float32);
  EXPECT_TRUE(has_line(r,
                       "lowered 8 node(s): 1 clamp, 1 float_clamp, 2 identity, 1 "
                       "pixel_shuffle, 1 q8ta_dequantize, 1 q8ta_quantize, 1 relu"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "left 1 node(s) as edge ops: aten.view_copy (node 7)")) << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, Int8x4ActivationsCarryQuantInfo) {
  Builder b = conv_act_graph("", {}, 0.2, -3);
  // xq is dequantized with a restricted range; yq is then viewed into a graph output.
  b.g.nodes[1].args["quant_min"] = int64_t{-127};
  b.value("yc", DType::Int8, {1, 4, 4, 4});
  b.node("aten.clone", {"yq"}, {}, {"yc"});
  b.g.outputs = {"yc"};
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d", "identity"})) << all_lines(r);
  EXPECT_EQ(g.value("xq").dtype, DType::Int8x4);
  expect_quant(g.value("xq"), 0.1, 2, -127, 127);
  EXPECT_EQ(g.value("yq").dtype, DType::Int8x4);
  expect_quant(g.value("yq"), 0.2, -3, -128, 127);
  EXPECT_EQ(g.value("yc").dtype, DType::Int8x4);  // through the identity
  expect_quant(g.value("yc"), 0.2, -3, -128, 127);
  EXPECT_EQ(g.value("w").dtype, DType::Int8);  // constant weights stay int8
  EXPECT_FALSE(g.value("w").quant.has_value());
  EXPECT_EQ(g.value("b").dtype, DType::Float32);
  expect_valid(g);
}

TEST(Fuse, ProducerQuantizationWinsAndMismatchIsReported) {
  Builder b;
  b.input("x", DType::Float32, {1, 4, 2, 2});
  b.q("x", "xq", 0.2, 0);
  b.dq("xq", "y", 0.3, 1);
  b.output("y");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_quantize", "q8ta_dequantize"}));
  expect_quant(g.value("xq"), 0.2, 0, -128, 127);
  EXPECT_EQ(arg_d(g.nodes[1], "scale"), 0.3);  // the dequantize keeps its own parameters
  EXPECT_TRUE(has_line(r,
                       "quantization mismatch on 'xq': it is scale 0.2 zero_point 0 range "
                       "-128..127 but node 1 dequantizes it with scale 0.3 zero_point 1 range "
                       "-128..127 (that node keeps its own parameters)"))
      << all_lines(r);
}

TEST(Fuse, Int8GraphInputOnlyReadByUnsupportedOpStaysInt8) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 2, 2});
  b.value("m", DType::Int8, {1, 4, 1, 1});
  b.node("aten.max_pool2d", {"xq"}, {{"kernel_size", std::vector<int64_t>{2, 2}}}, {"m"});
  b.output("m");
  fuse_and_lower(b.g);
  EXPECT_EQ(b.g.value("xq").dtype, DType::Int8);
  EXPECT_FALSE(b.g.value("xq").quant.has_value());
}

// ---- determinism ------------------------------------------------------------------------------

// conv+relu -> add with a second branch -> pixel shuffle -> linear head, plus leftovers.
Builder mixed_graph() {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 4, 4});
  b.per_channel_weight({4, 4, 3, 3}, {1, 2, 3, 4}, {0, 0, 0, 0}, "cw");
  b.dq("xq", "x", 0.1, 0);
  b.conv("x", "cwf", "", "c", {1, 4, 4, 4});
  b.value("cr", DType::Float32, {1, 4, 4, 4});
  b.node("aten.relu", {"c"}, {}, {"cr"});
  b.q("cr", "cq", 0.1, -128);
  b.dq("cq", "ca", 0.1, -128);
  b.dq("xq", "xa", 0.1, 0);
  b.value("s", DType::Float32, {1, 4, 4, 4});
  b.node("aten.add.Tensor", {"ca", "xa"}, {}, {"s"});
  b.q("s", "sq", 0.2, 0);
  b.dq("sq", "sf", 0.2, 0);
  b.value("p", DType::Float32, {1, 1, 8, 8});
  b.node("aten.pixel_shuffle", {"sf"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.q("p", "pq", 0.2, 0);
  b.dq("pq", "pf", 0.2, 0);
  b.value("v", DType::Float32, {8, 8});
  b.node("aten.view_copy", {"pf"}, {{"size", std::vector<int64_t>{8, 8}}}, {"v"});
  b.per_channel_weight({3, 8}, {0.5, 0.5, 0.5}, {0, 0, 0}, "lw");
  b.value("vq", DType::Int8, {8, 8});
  b.node(kQ, {"v"}, q_args(0.3, 0), {"vq"});
  b.dq("vq", "vf", 0.3, 0);
  b.value("out", DType::Float32, {8, 3});
  b.node("aten.linear", {"vf", "lwf"}, {}, {"out"});
  b.output("out");
  return b;
}

void expect_same_graph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].op, b.nodes[i].op) << i;
    EXPECT_EQ(a.nodes[i].inputs, b.nodes[i].inputs) << i;
    EXPECT_EQ(a.nodes[i].outputs, b.nodes[i].outputs) << i;
    EXPECT_TRUE(a.nodes[i].args == b.nodes[i].args) << i;
    EXPECT_EQ(a.nodes[i].origin, b.nodes[i].origin) << i;
  }
  ASSERT_EQ(a.value_names(), b.value_names());
  for (const auto& name : a.value_names()) {
    const Value &va = a.value(name), &vb = b.value(name);
    EXPECT_EQ(va.dtype, vb.dtype) << name;
    EXPECT_EQ(va.shape, vb.shape) << name;
    EXPECT_EQ(va.data, vb.data) << name;
    EXPECT_EQ(va.quant.has_value(), vb.quant.has_value()) << name;
    if (va.quant && vb.quant) {
      EXPECT_EQ(va.quant->scale, vb.quant->scale) << name;
      EXPECT_EQ(va.quant->zero_point, vb.quant->zero_point) << name;
    }
  }
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
}

TEST(Fuse, Deterministic) {
  const Builder original = mixed_graph();
  Graph g1 = original.g, g2 = original.g;
  const PassReport r1 = fuse_and_lower(g1);
  const PassReport r2 = fuse_and_lower(g2);
  EXPECT_EQ(r1.lines, r2.lines);
  expect_same_graph(g1, g2);
  // And the result is the one expected, so a change in order or naming shows up here.
  EXPECT_EQ(ops_of(g1), (std::vector<std::string>{"q8ta_conv2d_add", "q8ta_pixel_shuffle",
                                                  "identity", "q8ta_clamp", "q8ta_linear_dq"}))
      << all_lines(r1);
  EXPECT_EQ(g1.value_names(),
            (std::vector<std::string>{"xq", "cw", "sq", "pq", "lw", "vq", "out", "cw_scales",
                                      "cq_bias", "v_int8", "lw_scales", "out_bias"}));
  expect_valid(g1);
  // A second run on the lowered graph changes nothing.
  Graph g3 = g1;
  fuse_and_lower(g3);
  expect_same_graph(g1, g3);
}

}  // namespace
