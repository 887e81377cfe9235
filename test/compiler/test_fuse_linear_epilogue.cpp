// fuse_and_lower: the epilogues a linear with no quantize after it takes into its store
// (compiler/ops/ConvLinear.cpp): GELU then a quantize (q8ta_linear_gelu), and a float residual
// add through identities (q8ta_linear_dq_add); the chains that do not fit, with their report
// lines, stay the float-output linear.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/fusion/FuseOptions.h"
#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// 0 weight dq, 1 dq, 2 linear -> y [2, 4], 3 gelu (`approximate`, "" = absent) -> g, 4 q -> gq.
Builder linear_gelu_graph(const std::string& approximate) {
  Builder b = linear_graph({0, 0, 0, 0}, /*bias=*/true, /*quantized=*/false);
  b.g.outputs.clear();
  b.value("g", DType::Float32, {2, 4});
  Args args;
  if (!approximate.empty()) args["approximate"] = approximate;
  b.node("aten.gelu", {"y"}, args, {"g"});
  b.q("g", "gq", 0.05, -100);
  b.output("gq");
  return b;
}

// 0 weight dq, 1 dq, 2 linear -> y [2, 4], 3 dropout -> d, 4 add (d + h, or h + d) -> s.
Builder linear_add_graph(bool linear_first, std::vector<int64_t> h_shape = {2, 4}) {
  Builder b = linear_graph({0, 0, 0, 0}, /*bias=*/true, /*quantized=*/false);
  b.g.outputs.clear();
  b.input("h", DType::Float32, h_shape);
  b.value("d", DType::Float32, {2, 4});
  b.node("aten.dropout", {"y"}, {{"p", 0.1}, {"train", false}}, {"d"});
  b.value("s", DType::Float32, {2, 4});
  b.node("aten.add.Tensor",
         linear_first ? std::vector<std::string>{"d", "h"} : std::vector<std::string>{"h", "d"}, {},
         {"s"});
  b.output("s");
  return b;
}

TEST(FuseLinearEpilogue, GeluThenQuantizeIsOneOp) {
  for (const std::string approximate : {"", "none", "tanh"}) {
    Builder b = linear_gelu_graph(approximate);
    const PassReport r = fuse_and_lower(b.g);
    const Graph& g = b.g;
    ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.op, "q8ta_linear_gelu");
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"gq"}));
    EXPECT_EQ(arg_i(n, "approximate"), approximate == "tanh" ? 1 : 0);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.05);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -100);
    EXPECT_EQ(arg_i(n, "activation_min"), -128);
    EXPECT_EQ(arg_i(n, "activation_max"), 127);
    expect_quant(g.value("gq"), 0.05, -100, -128, 127);
    EXPECT_FALSE(g.has_value("y"));
    EXPECT_FALSE(g.has_value("g"));
    EXPECT_TRUE(has_line(
        r, "fused dq -> aten.linear -> aten.gelu -> q (node 1..4) into q8ta_linear_gelu 'gq'"))
        << all_lines(r);
    expect_valid(g);
  }
}

TEST(FuseLinearEpilogue, GeluReadElsewhereStaysFloat) {
  Builder b = linear_gelu_graph("none");
  b.output("g");  // the gelu's float output is a graph output too
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(only_node(b.g, "q8ta_linear_dq").outputs, (std::vector<std::string>{"y"}));
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.linear -> aten.gelu (node 1..3) as "
                       "q8ta_linear_gelu: 'g' is a graph output (the fused GELU writes int8 "
                       "for one quantize)"))
      << all_lines(r);
}

TEST(FuseLinearEpilogue, ResidualAddThroughDropoutIsOneOp) {
  for (const bool linear_first : {true, false}) {
    Builder b = linear_add_graph(linear_first);
    const PassReport r = fuse_and_lower(b.g);
    const Graph& g = b.g;
    ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.op, "q8ta_linear_dq_add");
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b", "h"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"s"}));
    EXPECT_EQ(arg_names(n), (std::vector<std::string>{"input_scale", "input_zero_point"}));
    EXPECT_FALSE(g.has_value("y"));
    EXPECT_FALSE(g.has_value("d"));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.linear -> aten.dropout -> aten.add.Tensor (node 1..4) "
                         "into q8ta_linear_dq_add 's'"))
        << all_lines(r);
    expect_valid(g);
  }
}

TEST(FuseLinearEpilogue, RefusedAddsAreReported) {
  {  // a broadcast operand
    Builder b = linear_add_graph(true, {1, 4});
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(only_node(b.g, "q8ta_linear_dq").outputs, (std::vector<std::string>{"y"}));
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.linear -> aten.dropout -> aten.add.Tensor "
                         "(node 1..4) as q8ta_linear_dq_add: 'h' [1, 4] is broadcast; the "
                         "epilogue adds a tensor of the output's sizes [2, 4]"))
        << all_lines(r);
  }
  {  // alpha 2
    Builder b = linear_add_graph(true);
    b.g.nodes.back().args["alpha"] = 2.0;
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(only_node(b.g, "q8ta_linear_dq").outputs, (std::vector<std::string>{"y"}));
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.linear -> aten.dropout -> aten.add.Tensor "
                         "(node 1..4) as q8ta_linear_dq_add: alpha is not 1"))
        << all_lines(r);
  }
  {  // epilogue fusion off
    Builder b = linear_add_graph(true);
    FuseOptions options;
    options.fuse_epilogues = false;
    const PassReport r = fuse_and_lower(b.g, options);
    EXPECT_EQ(only_node(b.g, "q8ta_linear_dq").outputs, (std::vector<std::string>{"y"}));
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.linear -> aten.dropout -> aten.add.Tensor "
                         "(node 1..4) as q8ta_linear_dq_add: epilogue fusion is off "
                         "(--no-fuse-epilogue)"))
        << all_lines(r);
  }
}

}  // namespace
