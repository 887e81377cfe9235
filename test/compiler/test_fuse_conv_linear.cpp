// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): linear and convolution
// (compiler/ops/ConvLinear.cpp): the patterns with their exact backend args and folded weights,
// float-output variants, half matches left unfused with their report lines, the transposed
// convolution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// ---- linear ------------------------------------------------------------------------------------

TEST(Fuse, LinearPerChannelQuantizedOutput) {
  Builder b = linear_graph();
  const std::vector<uint8_t> weight_bytes = *b.g.value("w").data;
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  EXPECT_EQ(r.pass, "fuse_and_lower");
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_linear");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_names(n),
            (std::vector<std::string>{"activation_max", "activation_min", "input_scale",
                                      "input_zero_point", "output_scale", "output_zero_point"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
  EXPECT_EQ(arg_i(n, "activation_min"), -128);
  EXPECT_EQ(arg_i(n, "activation_max"), 127);
  // Folded constants: the int8 weight is reused, the scales are a new float32 [N] constant.
  EXPECT_EQ(*g.value("w").data, weight_bytes);
  EXPECT_EQ(g.value("w").dtype, DType::Int8);
  const Value& scales = g.value("w_scales");
  EXPECT_EQ(scales.dtype, DType::Float32);
  EXPECT_EQ(scales.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(*scales.data, f32_bytes({0.5f, 0.25f, 0.125f, 0.0625f}));
  // Intermediates, the weight dq output and the dead scale / zero-point constants are gone.
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"xq", "w", "b", "yq", "w_scales"}));
  EXPECT_EQ(g.value("xq").dtype, DType::Int8x4);
  expect_quant(g.value("xq"), 0.1, 2, -128, 127);
  EXPECT_EQ(g.value("yq").dtype, DType::Int8x4);
  expect_quant(g.value("yq"), 0.2, -3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.linear -> q (node 1..3) into q8ta_linear 'yq' "
                       "(activation none)"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "folded 1 weight dequantize node(s) (node 0)")) << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, LinearPerTensorWeightCreatesZeroBias) {
  Builder b;
  b.input("xq", DType::Int8, {3, 8});
  b.constant("w", DType::Int8, {5, 8}, ramp_i8(40));
  b.value("wf", DType::Float32, {5, 8});
  b.node(kDq, {"w"}, q_args(0.05, 0, -127, 127), {"wf"});
  b.dq("xq", "x", 0.25, -1);
  b.value("y", DType::Float32, {3, 5});
  b.node("aten.linear", {"x", "wf"}, {}, {"y"});
  b.q("y", "yq", 0.5, 0);
  b.output("yq");
  fuse_and_lower(b.g);
  const Graph& g = b.g;
  const Node& n = only_node(g, "q8ta_linear");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "yq_bias"}));
  EXPECT_EQ(floats_of(g.value("w_scales")), std::vector<float>(5, 0.05f));
  const Value& bias = g.value("yq_bias");
  EXPECT_EQ(bias.dtype, DType::Float32);
  EXPECT_EQ(bias.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(floats_of(bias), std::vector<float>(5, 0.0f));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.25);
  EXPECT_EQ(arg_i(n, "input_zero_point"), -1);
  EXPECT_EQ(g.nodes.size(), 1u);
  expect_valid(g);
}

TEST(Fuse, LinearFloatOutput) {
  Builder b = linear_graph({0, 0, 0, 0}, /*bias=*/false, /*quantized=*/false);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_linear_dq");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "y_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(arg_names(n), (std::vector<std::string>{"input_scale", "input_zero_point"}));
  EXPECT_EQ(g.value("y").dtype, DType::Float32);
  EXPECT_FALSE(g.value("y").quant.has_value());
  EXPECT_EQ(floats_of(g.value("y_bias")), std::vector<float>(4, 0.0f));
  EXPECT_TRUE(has_line(r, "fused dq -> aten.linear (node 1..2) into q8ta_linear_dq 'y'"))
      << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, AsymmetricWeightsStayUnfused) {
  {
    Builder b = linear_graph({0, 3, 0, 0});
    const PassReport r = fuse_and_lower(b.g);
    const Graph& g = b.g;
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.linear -> q (node 1..3) as q8ta_linear: "
                         "weight 'w' has nonzero zero points (channel 1: 3) (asymmetric "
                         "weights are not supported)"))
        << all_lines(r);
    // The float op stays between explicit (lowered) q/dq; the weight dq is not folded.
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{kDqChannel, "q8ta_dequantize", "aten.linear",
                                                   "q8ta_quantize"}));
    EXPECT_TRUE(g.has_value("ws") && g.has_value("wzp") && g.has_value("wf"));
    EXPECT_FALSE(g.has_value("w_scales"));
    expect_valid(g);
  }
  {
    Builder b;
    b.input("xq", DType::Int8, {2, 8});
    b.constant("w", DType::Int8, {4, 8}, ramp_i8(32));
    b.value("wf", DType::Float32, {4, 8});
    b.node(kDq, {"w"}, q_args(0.05, 5), {"wf"});
    b.dq("xq", "x", 0.1, 0);
    b.value("y", DType::Float32, {2, 4});
    b.node("aten.linear", {"x", "wf"}, {}, {"y"});
    b.output("y");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.linear (node 1..2) as q8ta_linear_dq: weight "
                         "'w' has zero point 5 (asymmetric weights are not supported)"))
        << all_lines(r);
    EXPECT_EQ(count_op(b.g, "aten.linear"), 1);
    EXPECT_EQ(count_op(b.g, kDq), 1);  // the constant's dq stays an edge op
  }
}

TEST(Fuse, SharedWeightIsFoldedOnce) {
  Builder b;
  b.input("aq", DType::Int8, {2, 8});
  b.input("cq", DType::Int8, {2, 8});
  b.per_channel_weight({4, 8}, {1, 2, 3, 4}, {0, 0, 0, 0});
  b.dq("aq", "a", 0.1, 0);
  b.value("ya", DType::Float32, {2, 4});
  b.node("aten.linear", {"a", "wf"}, {}, {"ya"});
  b.dq("cq", "c", 0.2, 0);
  b.value("yc", DType::Float32, {2, 4});
  b.node("aten.linear", {"c", "wf"}, {}, {"yc"});
  b.output("ya");
  b.output("yc");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_linear_dq", "q8ta_linear_dq"}))
      << all_lines(r);
  EXPECT_EQ(g.nodes[0].inputs[2], "w_scales");
  EXPECT_EQ(g.nodes[1].inputs[2], "w_scales");
  EXPECT_FALSE(g.has_value("w_scales.1"));
  EXPECT_TRUE(has_line(r, "folded 1 weight dequantize node(s) (node 0)")) << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, WeightDqAlsoReadElsewhereIsKept) {
  Builder b = linear_graph();
  b.output("wf");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{kDqChannel, "q8ta_linear"})) << all_lines(r);
  EXPECT_EQ(only_node(g, "q8ta_linear").inputs[1], "w");
  EXPECT_TRUE(has_line(r,
                       "kept weight dequantize node 0: its output is also read by unfused "
                       "nodes or is a graph output"))
      << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, NewNamesAvoidExistingValues) {
  Builder b;
  b.input("xq", DType::Int8, {2, 8});
  b.per_channel_weight({4, 8}, {1, 2, 3, 4}, {0, 0, 0, 0}, "w");
  b.input("yq_bias", DType::Float32, {4});  // a name the zero bias would take
  b.dq("xq", "x", 0.1, 0);
  b.value("y", DType::Float32, {2, 4});
  b.node("aten.linear", {"x", "wf"}, {}, {"y"});
  b.q("y", "yq", 0.2, 0);
  b.output("yq");
  b.output("yq_bias");
  b.g.add_value([] {
    Value v;
    v.name = "w_scales";
    v.dtype = DType::Float32;
    v.shape = {1};
    return v;
  }());
  b.g.inputs.push_back("w_scales");
  fuse_and_lower(b.g);
  const Node& n = only_node(b.g, "q8ta_linear");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales.1", "yq_bias.1"}));
}

// ---- torchao's int8 linears (the exporter's form: python/vkdelegate/export/torchao_linear.py) ---

// x [1, 3, 8] -> linear with W' = dequantize_affine(W int8 [5, 8], block [1, 8], s_w [5, 1]) and
// bias; `dynamic`: x first goes through torchao's per-row choose_qparams_affine ->
// quantize_affine -> dequantize_affine (range [qmin, qmax], `mapping`).
Builder torchao_linear_graph(bool dynamic, const std::string& mapping = "SYMMETRIC",
                             int64_t qmin = -128, int64_t qmax = 127) {
  Builder b;
  b.input("x", DType::Float32, {1, 3, 8});
  b.constant("w", DType::Int8, {5, 8}, ramp_i8(40));
  b.constant("sw", DType::Float32, {5, 1}, f32_bytes({0.5f, 0.25f, 0.125f, 0.0625f, 1.0f}));
  b.constant("b", DType::Float32, {5}, f32_bytes({1, 2, 3, 4, 5}));
  b.value("wf", DType::Float32, {5, 8});
  b.node("torchao.dequantize_affine", {"w", "sw"},
         {{"block_size", std::vector<int64_t>{1, 8}},
          {"input_dtype", std::string("int8")},
          {"quant_min", int64_t{-128}},
          {"quant_max", int64_t{127}}},
         {"wf"});
  std::string x = "x";
  if (dynamic) {
    const std::vector<int64_t> row = {1, 1, 8};
    b.value("s", DType::Float32, {1, 3, 1});
    b.value("zp", DType::Int32, {1, 3, 1});
    b.node("torchao.choose_qparams_affine", {"x"},
           {{"mapping_type", mapping},
            {"block_size", row},
            {"target_dtype", std::string("int8")},
            {"quant_min", qmin},
            {"quant_max", qmax},
            {"eps", 1.1920928955078125e-07},
            {"zero_point_dtype", std::string("int8")},
            {"keepdim", true}},
           {"s", "zp"});
    const Args range = {{"block_size", row}, {"quant_min", qmin}, {"quant_max", qmax}};
    Args qa = range, da = range;
    qa["output_dtype"] = std::string("int8");
    da["input_dtype"] = std::string("int8");
    b.value("q", DType::Int8, {1, 3, 8});
    b.node("torchao.quantize_affine", {"x", "s", "zp"}, qa, {"q"});
    b.value("xd", DType::Float32, {1, 3, 8});
    b.node("torchao.dequantize_affine", {"q", "s", "zp"}, da, {"xd"});
    x = "xd";
  }
  b.value("y", DType::Float32, {1, 3, 5});
  b.node("aten.linear", {x, "wf", "b"}, {}, {"y"});
  b.output("y");
  return b;
}

TEST(Fuse, TorchaoDynamicLinearIsOneOp) {
  Builder b = torchao_linear_graph(true);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  const Node& n = only_node(g, "q8da_linear");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "w_scales", "b"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(arg_i(n, "quant_min"), -128);
  EXPECT_EQ(arg_i(n, "quant_max"), 127);
  EXPECT_EQ(arg_d(n, "eps"), 1.1920928955078125e-07);
  EXPECT_EQ(floats_of(g.value("w_scales")),
            (std::vector<float>{0.5f, 0.25f, 0.125f, 0.0625f, 1.0f}));
  // The per-row qparams, the int8 rows and both dequantized tensors are gone.
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"x", "w", "sw", "b", "y", "w_scales"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused choose_qparams_affine -> quantize_affine -> dequantize_affine -> "
                       "aten.linear (weight dequantize_affine) (node 0..4) into q8da_linear 'y' "
                       "(int8 activations quantized per row at run time)"))
      << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, TorchaoWeightOnlyLinearIsQ8cswLinear) {
  Builder b = torchao_linear_graph(false);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  const Node& n = only_node(g, "q8csw_linear");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "w_scales", "b"}));
  EXPECT_TRUE(n.args.empty());
  EXPECT_TRUE(has_line(r,
                       "fused aten.linear (weight dequantize_affine) (node 0..1) into "
                       "q8csw_linear 'y'"))
      << all_lines(r);
  expect_valid(g);
}

// What q8da_linear cannot compute is said and left unfused (each node then lowered or left on
// its own): an asymmetric activation (per-row zero points), a range whose symmetric zero point
// is not 0.
TEST(Fuse, TorchaoDynamicLinearRefusalsAreReported) {
  struct Case {
    std::string mapping;
    int64_t qmin, qmax;
    std::string why;
  };
  for (const Case& c :
       {Case{"ASYMMETRIC", -128, 127, "mapping_type 'ASYMMETRIC' (only SYMMETRIC)"},
        Case{"SYMMETRIC", 0, 127, "range [0, 127] is not a symmetric int8 range (zero point 0)"}}) {
    Builder b = torchao_linear_graph(true, c.mapping, c.qmin, c.qmax);
    FuseOptions o;
    o.runnable_only = true;
    const PassReport r = fuse_and_lower(b.g, o);
    EXPECT_TRUE(has_line(r,
                         "not fused: choose_qparams_affine -> quantize_affine -> "
                         "dequantize_affine -> aten.linear (weight dequantize_affine) (node "
                         "0..4) as q8da_linear: " +
                             c.why))
        << all_lines(r);
    const std::vector<std::string> ops = ops_of(b.g);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "q8da_linear"), 0);
  }
}

// ---- convolution ------------------------------------------------------------------------------

TEST(Fuse, ConvReluQuantized) {
  Builder b = conv_act_graph("aten.relu", {}, 0.1, -5);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_conv2d");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_l(n, "stride"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(arg_l(n, "padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_i(n, "groups"), 1);
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -5);
  EXPECT_EQ(arg_i(n, "activation_min"), -5);  // relu: q(0) = the output zero point
  EXPECT_EQ(arg_i(n, "activation_max"), 127);
  EXPECT_EQ(*g.value("w_scales").data, f32_bytes({0.5f, 0.25f, 2.0f, 1.0f}));
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"xq", "w", "b", "yq", "w_scales"}));
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.convolution -> aten.relu -> q (node 1..4) into "
            "q8ta_conv2d 'yq' (activation relu)");
  expect_valid(g);
}

std::pair<int64_t, int64_t> conv_range(const std::string& act, Args act_args, double scale,
                                       int64_t zp, std::string* line = nullptr) {
  Builder b = conv_act_graph(act, std::move(act_args), scale, zp);
  const PassReport r = fuse_and_lower(b.g);
  if (line && !r.lines.empty()) *line = r.lines[0];
  if (count_op(b.g, "q8ta_conv2d") != 1) {
    ADD_FAILURE() << "not fused:\n" << all_lines(r);
    return {0, 0};
  }
  expect_valid(b.g);
  const Node& n = only_node(b.g, "q8ta_conv2d");
  return {arg_i(n, "activation_min"), arg_i(n, "activation_max")};
}

TEST(Fuse, ConvActivationRanges) {
  using R = std::pair<int64_t, int64_t>;
  std::string line;
  // No activation: the full int8 range.
  EXPECT_EQ(conv_range("", {}, 0.1, 7, &line), R(-128, 127));
  EXPECT_EQ(line,
            "fused dq -> aten.convolution -> q (node 1..3) into q8ta_conv2d 'yq' "
            "(activation none)");
  // hardtanh(0, 6) (relu6): 0/0.05 - 128 = -128, 6/0.05 - 128 = -8.
  EXPECT_EQ(conv_range("aten.hardtanh", {{"min_val", 0.0}, {"max_val", 6.0}}, 0.05, -128, &line),
            R(-128, -8));
  EXPECT_EQ(line,
            "fused dq -> aten.convolution -> aten.hardtanh -> q (node 1..4) into "
            "q8ta_conv2d 'yq' (activation hardtanh(0, 6))");
  // hardtanh defaults (-1, 1): -250 + 10 and 250 + 10 clamp to the int8 range.
  EXPECT_EQ(conv_range("aten.hardtanh", {}, 0.004, 10), R(-128, 127));
  // clamp(min=0) only: zero point .. qmax.
  EXPECT_EQ(conv_range("aten.clamp", {{"min", int64_t{0}}, {"max", NoneArg{}}}, 0.1, 4, &line),
            R(4, 127));
  EXPECT_EQ(line,
            "fused dq -> aten.convolution -> aten.clamp -> q (node 1..4) into q8ta_conv2d "
            "'yq' (activation clamp(0, none))");
  // Ties round to even, as q8ta_quantize does: -4.5 -> -4, 2.5 -> 2.
  EXPECT_EQ(conv_range("aten.clamp", {{"min", -0.45}, {"max", 0.25}}, 0.1, 0), R(-4, 2));
  // Bounds inside the range with a zero point: round(-1 / 0.02) + 20 = -30, 1/0.02 + 20 = 70.
  EXPECT_EQ(conv_range("aten.hardtanh", {{"min_val", -1.0}, {"max_val", 1.0}}, 0.02, 20),
            R(-30, 70));
}

TEST(Fuse, ConvFloatOutputGroupsAndPadding) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 8, 8});
  b.per_channel_weight({6, 2, 3, 3}, {1, 2, 3, 4, 5, 6}, {0, 0, 0, 0, 0, 0});
  b.dq("xq", "x", 0.5, 0);
  b.conv(
      "x", "wf", "", "y", {1, 6, 8, 8},
      {{"padding", std::vector<int64_t>{1, 2}}, {"dilation", int64_t{1}}, {"groups", int64_t{2}}});
  b.output("y");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_conv2d_dq");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "y_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(arg_names(n), (std::vector<std::string>{"dilation", "groups", "input_scale",
                                                    "input_zero_point", "padding", "stride"}));
  EXPECT_EQ(arg_l(n, "padding"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(arg_l(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "stride"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_i(n, "groups"), 2);
  EXPECT_EQ(floats_of(g.value("y_bias")), std::vector<float>(6, 0.0f));
  EXPECT_EQ(g.value("y").dtype, DType::Float32);
  EXPECT_TRUE(has_line(r, "fused dq -> aten.convolution (node 1..2) into q8ta_conv2d_dq 'y'"))
      << all_lines(r);
  expect_valid(g);
}

// ---- half matches -----------------------------------------------------------------------------

TEST(Fuse, DequantizedInputWithTwoConsumersIsNotFused) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 8, 8});
  b.per_channel_weight({4, 3, 3, 3}, {1, 1, 1, 1}, {0, 0, 0, 0});
  b.dq("xq", "x", 0.1, 0);
  b.conv("x", "wf", "", "y", {1, 4, 8, 8});
  b.q("y", "yq", 0.1, 0);
  b.value("r", DType::Float32, {1, 3, 8, 8});
  b.node("aten.relu", {"x"}, {}, {"r"});
  b.output("yq");
  b.output("r");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.convolution -> q (node 1..3) as q8ta_conv2d: "
                       "'x' has 2 consumers (nodes 2, 4)"))
      << all_lines(r);
  // Still valid: the float conv sits between the lowered dq and q.
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{kDqChannel, "q8ta_dequantize", "aten.convolution",
                                                 "q8ta_quantize", "relu"}));
  EXPECT_TRUE(g.has_value("x") && g.has_value("y") && g.has_value("wf"));
  EXPECT_TRUE(has_line(r, "left 2 node(s) as edge ops: " + std::string(kDqChannel) +
                              " (node 0), aten.convolution (node 2)"))
      << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, ReluFollowedBySomethingElseFallsBackToFloatOutput) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 8, 8});
  b.per_channel_weight({4, 3, 3, 3}, {1, 1, 1, 1}, {0, 0, 0, 0});
  b.dq("xq", "x", 0.1, 0);
  b.conv("x", "wf", "", "y", {1, 4, 8, 8});
  b.value("r", DType::Float32, {1, 4, 8, 8});
  b.node("aten.relu", {"y"}, {}, {"r"});
  b.value("m", DType::Float32, {1, 4, 4, 4});
  b.node("aten.max_pool2d", {"r"}, {{"kernel_size", std::vector<int64_t>{2, 2}}}, {"m"});
  b.q("m", "mq", 0.1, 0);
  b.output("mq");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_GE(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0],
            "not fused: dq -> aten.convolution -> aten.relu (node 1..3) as "
            "q8ta_conv2d: 'r' feeds aten.max_pool2d (node 4), not "
            "quantize_per_tensor");
  EXPECT_EQ(r.lines[1], "fused dq -> aten.convolution (node 1..2) into q8ta_conv2d_dq 'y'");
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_dq", "relu", "aten.max_pool2d",
                                                 "q8ta_quantize"}));
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"y"}));
  expect_valid(g);
}

TEST(Fuse, ConvOutputThatIsAGraphOutputKeepsItsQ) {
  Builder b = conv_act_graph("", {}, 0.1, 0);
  b.output("y");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.convolution -> q (node 1..3) as q8ta_conv2d: "
                       "'y' is a graph output"))
      << all_lines(r);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_dq", "q8ta_quantize"}));
  expect_valid(b.g);
}

// ---- transposed convolution ------------------------------------------------------------------

// dq -> convolution(transposed, k3 s2 p1 op1, groups 2) over [1, 4, 3, 3] -> [1, 6, 6, 6] with a
// weight [4, 3, 3, 3] dequantized per tensor (scale 0.02) or per channel along `axis`, then
// `act` (may be "") and q.
Builder deconv_graph(bool per_channel, int64_t axis, const std::string& act) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 3, 3});
  b.dq("xq", "x", 0.1, 2);
  b.constant("w", DType::Int8, {4, 3, 3, 3}, ramp_i8(108));
  b.value("wf", DType::Float32, {4, 3, 3, 3});
  if (per_channel) {
    const std::vector<float> all = {0.5f, 0.25f, 2.0f, 1.0f};
    const int64_t n = axis == 1 ? 3 : 4;  // C_out / groups along 1, C_in along 0
    b.constant("ws", DType::Float32, {n},
               f32_bytes(std::vector<float>(all.begin(), all.begin() + n)));
    b.node(kDqChannel, {"w", "ws"},
           {{"axis", axis},
            {"quant_min", int64_t{-127}},
            {"quant_max", int64_t{127}},
            {"dtype", std::string("int8")}},
           {"wf"});
  } else {
    b.node(kDq, {"w"}, q_args(0.02, 0, -127, 127), {"wf"});
  }
  b.constant("b", DType::Float32, {6}, f32_bytes({0.5f, -1, 2, 0, 1, -2}));
  b.conv("x", "wf", "b", "y", {1, 6, 6, 6},
         {{"stride", std::vector<int64_t>{2, 2}},
          {"padding", std::vector<int64_t>{1, 1}},
          {"transposed", true},
          {"output_padding", std::vector<int64_t>{1, 1}},
          {"groups", int64_t{2}}});
  std::string last = "y";
  if (!act.empty()) {
    b.value("r", DType::Float32, {1, 6, 6, 6});
    b.node(act, {"y"}, {}, {"r"});
    last = "r";
  }
  b.q(last, "yq", 0.2, -3);
  b.output("yq");
  return b;
}

// The weight becomes q8ta_conv2d's [C_out, C_in / groups, KH, KW] (a new constant: the
// original goes), one scale per output channel, the relu the activation range.
TEST(Fuse, TransposedConvSwapsItsWeight) {
  Builder b = deconv_graph(false, 0, "aten.relu");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv_transpose2d"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w_oihw", "w_scales", "b"}));
  EXPECT_EQ(arg_l(n, "stride"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(arg_l(n, "padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "output_padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_i(n, "groups"), 2);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-3, 127}));
  EXPECT_FALSE(g.has_value("w"));
  const Value& w = g.value("w_oihw");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{6, 2, 3, 3}));
  // out[co][i][t] = in[g * 2 + i][co - 3 g][t], in[c][o][t] = ramp(c * 27 + o * 9 + t).
  const std::vector<uint8_t> ramp = ramp_i8(108);
  for (int64_t co = 0; co < 6; ++co) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t t = 0; t < 9; ++t) {
        const int64_t grp = co / 3;
        EXPECT_EQ((*w.data)[static_cast<size_t>((co * 2 + i) * 9 + t)],
                  ramp[static_cast<size_t>(((grp * 2 + i) * 3 + co - 3 * grp) * 9 + t)])
            << co << " " << i << " " << t;
      }
    }
  }
  EXPECT_EQ(floats_of(g.value("w_scales")), std::vector<float>(6, 0.02f));
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.convolution -> aten.relu -> q (nodes 0, 2..4) into "
            "q8ta_conv_transpose2d 'yq' (activation relu)");
  expect_valid(g);
}

// Per-channel weights along axis 1 (C_out / groups scales) give each group's channels the same
// scales; along axis 0 (input channels) they cannot be folded into the output's.
TEST(Fuse, TransposedConvPerChannelScales) {
  {
    Builder b = deconv_graph(true, 1, "");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv_transpose2d"})) << all_lines(r);
    EXPECT_EQ(floats_of(b.g.value("w_scales")),
              (std::vector<float>{0.5f, 0.25f, 2.0f, 0.5f, 0.25f, 2.0f}));
    expect_valid(b.g);
  }
  {
    Builder b = deconv_graph(true, 0, "");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.convolution -> q (nodes 0, 2..3) as "
                         "q8ta_conv_transpose2d: weight 'w' is quantized along axis 0, not 1 "
                         "(output channels)"))
        << all_lines(r);
  }
}

TEST(Fuse, TransposedConvWithoutAQuantizedOutputIsNotFused) {
  Builder b = deconv_graph(false, 0, "");
  b.g.nodes.pop_back();  // the q
  b.g.outputs = {"y"};
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.convolution (nodes 0, 2) as "
                       "q8ta_conv_transpose2d: 'y' is a graph output, not quantized "
                       "(q8ta_conv_transpose2d has no float-output variant)"))
      << all_lines(r);
}

// PyTorch 1.13's FX keeps ConvTranspose2d and its ReLU apart (q -> dq -> relu -> q): the relu
// joins the epilogue as it does a conv's.
TEST(Fuse, StandaloneReluJoinsTheTransposedConvEpilogue) {
  Builder b = deconv_graph(false, 0, "");
  b.g.outputs.clear();
  b.dq("yq", "yf", 0.2, -3);
  b.value("a", DType::Float32, {1, 6, 6, 6});
  b.node("aten.relu", {"yf"}, {}, {"a"});
  b.q("a", "hq", 0.2, -3);
  b.output("hq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv_transpose2d"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"hq"}));
  EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{-3, 127}));
  expect_valid(b.g);
}

}  // namespace
