// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): int8 views and the
// classifier head (compiler/ops/Copy.cpp): a flatten after a pool folded into the mean,
// requantizing views.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// ---- int8 views and the classifier head ---------------------------------------------------------

// yq -> dq -> view_copy [2, 8] -> q (`scale`, `zp`) -> vq -> dq -> linear (4 x 8) -> q -> lq.
void flatten_linear_head(Builder& b, double scale, int64_t zp) {
  b.g.outputs.clear();
  b.dq("yq", "yf", 0.05, -3);
  b.value("v", DType::Float32, {2, 8});
  b.node("aten.view_copy", {"yf"}, {{"size", std::vector<int64_t>{2, -1}}}, {"v"});
  b.q("v", "vq", scale, zp);
  b.per_channel_weight({4, 8}, {0.5f, 0.25f, 0.125f, 0.0625f}, {0, 0, 0, 0});
  b.dq("vq", "vf", scale, zp);
  b.value("l", DType::Float32, {2, 4});
  b.node("aten.linear", {"vf", "wf"}, {}, {"l"});
  b.q("l", "lq", 0.2, 1);
  b.output("lq");
}

TEST(Fuse, MeanWithoutKeepdimWritesRows) {
  Builder b = pooled("aten.mean.dim", {{"dim", std::vector<int64_t>{2, 3}}}, {2, 8});
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mean_flat"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_d(n, "output_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
  EXPECT_EQ(b.g.value("yq").shape, (std::vector<int64_t>{2, 8}));
  EXPECT_TRUE(has_line(r, "fused dq -> aten.mean.dim -> q (node 0..2) into q8ta_mean_flat 'yq'"))
      << all_lines(r);
  expect_valid(b.g);
}

// pool -> q -> dq -> flatten -> q -> dq -> linear: the flatten joins the mean (q8ta_mean_flat
// writes [2, 8] rows), the linear reads them; no view op is left.
TEST(Fuse, FlattenAfterPoolFoldsIntoTheMean) {
  for (const char* pool : {"aten.mean.dim", "aten.adaptive_avg_pool2d"}) {
    Builder b =
        std::string(pool) == "aten.mean.dim"
            ? pooled(pool, {{"dim", std::vector<int64_t>{-1, -2}}, {"keepdim", true}}, {2, 8, 1, 1})
            : pooled(pool, {{"output_size", std::vector<int64_t>{1, 1}}}, {2, 8, 1, 1});
    flatten_linear_head(b, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    const Graph& g = b.g;
    ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_mean_flat", "q8ta_linear"}))
        << all_lines(r);
    EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"xq"}));
    EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"vq"}));
    EXPECT_EQ(g.nodes[0].origin, std::string("node 1 (") + pool + ") fused into q8ta_mean_flat");
    EXPECT_EQ(g.nodes[1].inputs.at(0), "vq");
    EXPECT_FALSE(g.has_value("yq"));
    EXPECT_EQ(g.value("vq").shape, (std::vector<int64_t>{2, 8}));
    expect_quant(g.value("vq"), 0.05, -3, -128, 127);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.view_copy -> q (node 3..5) into q8ta_mean 'yq': "
                         "q8ta_mean_flat writes the [2, 8] rows 'vq' itself"))
        << all_lines(r);
    expect_valid(g);
  }
}

// The view_copy of the int8 output itself (no dq / q around it) folds the same way.
TEST(Fuse, Int8FlattenAfterPoolFoldsIntoTheMean) {
  Builder b = pooled("aten.adaptive_avg_pool2d", {{"output_size", std::vector<int64_t>{1, 1}}},
                     {2, 8, 1, 1});
  b.g.outputs.clear();
  b.value("v", DType::Int8, {2, 8});
  b.node("aten.view_copy", {"yq"}, {{"size", std::vector<int64_t>{2, 8}}}, {"v"});  // 3
  b.output("v");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mean_flat"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"v"}));
  EXPECT_EQ(b.g.value("v").dtype, DType::Int8x4);
  expect_quant(b.g.value("v"), 0.05, -3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused aten.view_copy (node 3) into q8ta_mean 'yq': q8ta_mean_flat "
                       "writes the [2, 8] rows 'v' itself"))
      << all_lines(r);
  expect_valid(b.g);
}

// A flatten whose q differs from the dq (FX observes `x.flatten(1)` before a classifier on its
// own): the mean writes its own output as the graph says, the view moves it into a new int8
// value of the mean's parameters, and a q8ta_clamp with the q's range requantizes that (dq -> q
// for all 256 values). The view does not fold into the mean: the mean's output stays a tensor
// the checks see.
TEST(Fuse, ViewWithOtherQuantizationIsAViewThenAClamp) {
  Builder b = pooled("aten.mean.dim", {{"dim", std::vector<int64_t>{-1, -2}}, {"keepdim", true}},
                     {2, 8, 1, 1});
  flatten_linear_head(b, 0.1, -3);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g),
            (std::vector<std::string>{"q8ta_mean", "q8ta_view", "q8ta_clamp", "q8ta_linear"}))
      << all_lines(r);
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(g.nodes[1].outputs, (std::vector<std::string>{"v_int8"}));
  expect_quant(g.value("v_int8"), 0.05, -3, -128, 127);
  EXPECT_EQ(g.value("v_int8").shape, (std::vector<int64_t>{2, 8}));
  const Node& clamp = g.nodes[2];
  EXPECT_EQ(clamp.inputs, (std::vector<std::string>{"v_int8"}));
  EXPECT_EQ(clamp.outputs, (std::vector<std::string>{"vq"}));
  EXPECT_EQ(arg_d(clamp, "input_scale"), 0.05);
  EXPECT_EQ(arg_i(clamp, "input_zero_point"), -3);
  EXPECT_EQ(arg_d(clamp, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(clamp, "output_zero_point"), -3);
  EXPECT_EQ(arg_i(clamp, "activation_min"), -128);
  EXPECT_EQ(arg_i(clamp, "activation_max"), 127);
  expect_quant(g.value("vq"), 0.1, -3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.view_copy (node 3..4) into q8ta_view 'v_int8' (a "
                       "view of the int8 data)"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused q (node 5) into q8ta_clamp 'vq' (requantizes the view "
                       "'v_int8': scale 0.05 zero_point -3 range -128..127 -> scale 0.1 "
                       "zero_point -3 range -128..127)"))
      << all_lines(r);
  expect_valid(g);
}

// dq -> view -> q with one quantization and no mean before it: the view on the int8 data,
// identity where the packed shape is the same, else q8ta_view padding with the zero point; a
// restricted q range that would clamp -128 keeps the pair.
TEST(Fuse, DqViewQBecomesAnInt8View) {
  auto graph = [](std::vector<int64_t> out, int64_t qmin) {
    Builder b;
    b.input("xq", DType::Int8, {1, 8, 3, 3});
    b.dq("xq", "x", 0.1, 2);
    b.value("v", DType::Float32, out);
    b.node("aten.view_copy", {"x"}, {{"size", out}}, {"v"});
    b.value("vq", DType::Int8, out);
    b.node(kQ, {"v"}, q_args(0.1, 2, qmin, 127), {"vq"});
    b.output("vq");
    return b;
  };
  {
    Builder b = graph({1, 72}, -128);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_view"})) << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"xq"}));
    EXPECT_EQ(arg_i(b.g.nodes[0], "zero_point"), 2);
    expect_quant(b.g.value("vq"), 0.1, 2, -128, 127);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.view_copy -> q (node 0..2) into q8ta_view 'vq' (a "
                         "view of the int8 data)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b = graph({8, 3, 3}, -128);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"identity"})) << all_lines(r);
    expect_valid(b.g);
  }
  {  // -128 clamped to -127: the view, then a q8ta_clamp to the q's range
    Builder b = graph({1, 72}, -127);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_view", "q8ta_clamp"})) << all_lines(r);
    EXPECT_EQ(arg_i(b.g.nodes[1], "activation_min"), -127);
    EXPECT_EQ(arg_i(b.g.nodes[1], "activation_max"), 127);
    expect_quant(b.g.value("vq"), 0.1, 2, -127, 127);
    expect_valid(b.g);
  }
}

// An int8 view_copy on its own is lowered to q8ta_view, with the zero point of what it views.
TEST(Fuse, Int8ViewCopyLowersToQ8taView) {
  Builder b;
  b.input("x", DType::Float32, {2, 8, 1, 1});
  b.q("x", "xq", 0.1, 5);
  b.value("v", DType::Int8, {2, 8});
  b.node("aten.view_copy", {"xq"}, {{"size", std::vector<int64_t>{2, 8}}}, {"v"});
  b.dq("v", "y", 0.1, 5);
  b.output("y");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g),
            (std::vector<std::string>{"q8ta_quantize", "q8ta_view", "q8ta_dequantize"}))
      << all_lines(r);
  EXPECT_EQ(arg_i(b.g.nodes[1], "zero_point"), 5);
  EXPECT_EQ(b.g.value("v").dtype, DType::Int8x4);
  expect_quant(b.g.value("v"), 0.1, 5, -128, 127);
  EXPECT_TRUE(has_line(r, "lowered 3 node(s): 1 q8ta_dequantize, 1 q8ta_quantize, 1 q8ta_view"))
      << all_lines(r);
  expect_valid(b.g);
}

}  // namespace
