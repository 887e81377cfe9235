// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): sentence-transformers'
// pooling (mul by the token mask, sum over tokens, divided by the clamped token count) and
// F.normalize after it become one float_masked_mean / q8ta_masked_mean [_normalize]
// (compiler/ops/Reduce.cpp, fuse_masked_mean); what breaks the chain leaves the float ops.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

constexpr int64_t B = 2, T = 5, C = 6;

struct Pooling {
  bool int8 = true;           // hidden states dq(xq) (0.05, 3), else the float input 'x'
  bool view = true;           // mask [B, T] viewed as 'keep' [B, T, 1], else 'keep' the input
  bool normalize = true;      // F.normalize after the mean
  bool expand_as = true;      // F.normalize's expand_as of the clamped norm
  bool count_output = false;  // the token count also a graph output
  bool to_dtype = false;      // the view's output through aten.to.dtype (float32) to 'keep'
};

// The graph SentenceEncoder.forward exports after its last layer norm (node numbers for int8
// with the view): dq 0, view 1, mul 2, sum 3, sum of keep 4, clamp 5, div 6, norm 7,
// clamp_min 8, expand_as 9, div 10.
Builder pooling_graph(const Pooling& p) {
  Builder b;
  if (p.int8) {
    b.input("xq", DType::Int8, {B, T, C});
    b.dq("xq", "x", 0.05, 3);
  } else {
    b.input("x", DType::Float32, {B, T, C});
  }
  if (p.view) {
    b.input("mask", DType::Float32, {B, T});
    const std::string viewed = p.to_dtype ? "unsqueeze" : "keep";
    b.value(viewed, DType::Float32, {B, T, 1});
    b.node("aten.view_copy", {"mask"}, {{"size", std::vector<int64_t>{B, T, 1}}}, {viewed});
    if (p.to_dtype) {
      b.value("keep", DType::Float32, {B, T, 1});
      b.node("aten.to.dtype", {viewed}, {{"dtype", std::string("float32")}}, {"keep"});
    }
  } else {
    b.input("keep", DType::Float32, {B, T, 1});
  }
  b.value("hm", DType::Float32, {B, T, C});
  b.node("aten.mul.Tensor", {"x", "keep"}, {}, {"hm"});
  b.value("s", DType::Float32, {B, C});
  b.node("aten.sum.dim_IntList", {"hm"}, {{"dim", std::vector<int64_t>{1}}}, {"s"});
  b.value("n", DType::Float32, {B, 1});
  b.node("aten.sum.dim_IntList", {"keep"}, {{"dim", std::vector<int64_t>{1}}}, {"n"});
  b.value("nc", DType::Float32, {B, 1});
  b.node("aten.clamp", {"n"}, {{"min", 1e-9}}, {"nc"});
  b.value("e", DType::Float32, {B, C});
  b.node("aten.div.Tensor", {"s", "nc"}, {}, {"e"});
  if (p.count_output) b.output("n");
  if (!p.normalize) {
    b.output("e");
    return b;
  }
  b.value("l2", DType::Float32, {B, 1});
  b.node("aten.linalg_vector_norm", {"e"},
         {{"ord", 2.0}, {"dim", std::vector<int64_t>{1}}, {"keepdim", true}}, {"l2"});
  b.value("l2c", DType::Float32, {B, 1});
  b.node("aten.clamp_min", {"l2"}, {{"min", 1e-12}}, {"l2c"});
  std::string divisor = "l2c";
  if (p.expand_as) {
    b.value("l2e", DType::Float32, {B, C});
    b.node("aten.expand_as", {"l2c", "e"}, {}, {"l2e"});
    divisor = "l2e";
  }
  b.value("y", DType::Float32, {B, C});
  b.node("aten.div.Tensor", {"e", divisor}, {}, {"y"});
  b.output("y");
  return b;
}

// MiniLM's pooling from the int8 hidden states: one q8ta_masked_mean_normalize reading the int8
// tensor and the [B, T] mask, with the dequantization, the count's and the norm's lower bounds.
TEST(Fuse, MaskedMeanAndNormalizeFromInt8IsOneOp) {
  Builder b = pooling_graph({});
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_masked_mean_normalize"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "mask"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 3);
  EXPECT_EQ(arg_d(n, "mask_min"), 1e-9);
  EXPECT_EQ(arg_d(n, "eps"), 1e-12);
  EXPECT_TRUE(has_line(
      r,
      "fused dq, aten.view_copy -> aten.mul.Tensor -> aten.sum.dim_IntList -> "
      "aten.sum.dim_IntList -> aten.clamp -> aten.div.Tensor -> aten.linalg_vector_norm -> "
      "aten.clamp_min -> aten.expand_as -> aten.div.Tensor (node 0..10) into "
      "q8ta_masked_mean_normalize 'y' (B 2, T 5, C 6, mask 'mask', count clamped to >= "
      "1e-09, L2-normalised, norm clamped to >= 1e-12)"))
      << all_lines(r);
  for (const char* gone : {"x", "keep", "hm", "s", "n", "nc", "e", "l2", "l2c", "l2e"}) {
    EXPECT_FALSE(b.g.has_value(gone)) << gone;
  }
  expect_valid(b.g);
}

// Float hidden states, the mask given as [B, T, 1], F.normalize without expand_as, or no
// normalize at all: float_masked_mean[_normalize].
TEST(Fuse, MaskedMeanOfFloatHiddenStates) {
  {
    Pooling p;
    p.int8 = false;
    p.view = false;
    p.expand_as = false;
    Builder b = pooling_graph(p);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"float_masked_mean_normalize"}))
        << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"x", "keep"}));
    EXPECT_EQ(arg_names(b.g.nodes[0]), (std::vector<std::string>{"eps", "mask_min"}));
    expect_valid(b.g);
  }
  {
    Pooling p;
    p.int8 = false;
    p.normalize = false;
    Builder b = pooling_graph(p);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"float_masked_mean"})) << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"x", "mask"}));
    EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"e"}));
    EXPECT_TRUE(has_line(r,
                         "fused aten.view_copy -> aten.mul.Tensor -> aten.sum.dim_IntList -> "
                         "aten.sum.dim_IntList -> aten.clamp -> aten.div.Tensor (node 0..5) "
                         "into float_masked_mean 'e' (B 2, T 5, C 6, mask 'mask', "
                         "count clamped to >= 1e-09)"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// `mask.unsqueeze(-1).to(h.dtype)`: the fused op reads the [B, T] mask through both moves.
TEST(Fuse, MaskedMeanReadsTheMaskThroughViewAndTo) {
  Pooling p;
  p.to_dtype = true;
  Builder b = pooling_graph(p);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_masked_mean_normalize"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"xq", "mask"}));
  EXPECT_FALSE(b.g.has_value("unsqueeze"));
  EXPECT_FALSE(b.g.has_value("keep"));
  EXPECT_TRUE(has_line(r,
                       "fused dq, aten.view_copy, aten.to.dtype -> aten.mul.Tensor -> "
                       "aten.sum.dim_IntList -> aten.sum.dim_IntList -> aten.clamp -> "
                       "aten.div.Tensor -> aten.linalg_vector_norm -> aten.clamp_min -> "
                       "aten.expand_as -> aten.div.Tensor (node 0..11) into "
                       "q8ta_masked_mean_normalize 'y' (B 2, T 5, C 6, mask 'mask', count "
                       "clamped to >= 1e-09, L2-normalised, norm clamped to >= 1e-12)"))
      << all_lines(r);
  expect_valid(b.g);
}

// The token count also read elsewhere: the chain stays the float ops, and the report says why.
TEST(Fuse, MaskedMeanWhoseCountIsReadElsewhereStaysFloatOps) {
  Pooling p;
  p.count_output = true;
  Builder b = pooling_graph(p);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(count_op(b.g, "q8ta_masked_mean_normalize"), 0) << all_lines(r);
  EXPECT_EQ(count_op(b.g, "float_sum"), 2) << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq, aten.view_copy -> aten.mul.Tensor -> aten.sum.dim_IntList "
                       "-> aten.sum.dim_IntList -> aten.clamp -> aten.div.Tensor -> "
                       "aten.linalg_vector_norm -> aten.clamp_min -> aten.expand_as -> "
                       "aten.div.Tensor (node 0..10) as q8ta_masked_mean_normalize: the token "
                       "count is read by another node"))
      << all_lines(r);
}

}  // namespace
