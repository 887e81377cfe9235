// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): the head split,
// aten.scaled_dot_product_attention and the head merge into q8ta_attention
// (compiler/ops/Attention.cpp), and the chains it leaves, each with its reason; the shape rule
// of aten.scaled_dot_product_attention; the float chain into the float op attention.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ShapeInference.h"
#include "core/Error.h"
#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;
using I = std::vector<int64_t>;

constexpr const char* kSdpa = "aten.scaled_dot_product_attention";
constexpr int64_t T = 5, H = 2, D = 8;

struct Variant {
  bool mask = true;
  I mask_shape = {1, 1, 1, T};
  bool key_without_transpose = false;  // the key viewed straight to [1, H, T, D]
  bool query_view_read_elsewhere = false;
  double value_read_scale = 0.03;  // the dq before SDPA (the chain's own: 0.03)
  bool causal = false;
  // The mask made from 'm01' of this shape (empty: none) by rsub.Scalar(1) -> mul.Scalar(-10000)
  // -> view_copy [1, 1, T] -> view_copy [1, 1, 1, T] (BERT's), nodes 21..24.
  I made_from = {};
  bool made_read_elsewhere = false;  // the mul's output is also a graph output
  int64_t t = T;                     // the sequence length (mask_shape follows T's default)
  // q, k and v written by three linears of one input 'xq' [1, T, K] instead of graph inputs
  // (qkv_linears below); `q_read_elsewhere`: 'q' is also a graph output.
  bool linears = false;
  bool q_read_elsewhere = false;
};

constexpr int64_t K = 12;

// The test's own weights of linear `side` (0 q, 1 k, 2 v): [H*D, K] int8, per-channel scales
// and a bias, different for every side so their order in the merged op shows.
std::vector<uint8_t> side_weight(int side) {
  std::vector<uint8_t> w(static_cast<size_t>(H * D * K));
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<uint8_t>(i * 7 + side * 91 + 5);
  return w;
}
std::vector<float> side_floats(int side, float base) {
  std::vector<float> v(static_cast<size_t>(H * D));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base * static_cast<float>(side + 1) + 0.001f * i;
  return v;
}

// Per side: 'xq' -> dq (0.05, 1) -> aten.linear (the side's weight dq, bias) -> q (the side's
// parameters) -> the side's int8 [1, T, H*D] value.
void qkv_linear(Builder& b, const std::string& n, int side, double scale, int64_t zp, int64_t t) {
  b.per_channel_weight({H * D, K}, side_floats(side, 0.01f),
                       std::vector<int32_t>(static_cast<size_t>(H * D), 0), n + "w");
  b.g.value(n + "w").data = side_weight(side);
  b.constant(n + "b", DType::Float32, {H * D}, f32_bytes(side_floats(side, 0.5f)));
  b.dq("xq", n + "_x", 0.05, 1);
  b.value(n + "_y", DType::Float32, {1, t, H * D});
  b.node("aten.linear", {n + "_x", n + "wf", n + "b"}, {}, {n + "_y"});
  b.q(n + "_y", n, scale, zp);
}

// Per q, k, v: int8 [1, T, H*D] graph input -> dq -> view_copy [1, T, H, D] -> q -> dq ->
// transpose_copy(1, 2) -> q -> dq; SDPA(q, k, v, mask) -> q -> dq -> transpose_copy(1, 2) -> q ->
// dq -> view_copy [1, T, H*D] -> q -> 'yq' (nodes 0..28).
// The q, k and v sides' quantization.
const struct Side {
  const char* name;
  double scale;
  int64_t zp;
} kSides[] = {{"q", 0.1, -4}, {"k", 0.07, 3}, {"v", 0.03, 33}};

// Node n carries the sides' quantization as arguments `<prefix>scale` and `<prefix>zero_point`,
// prefixes[i] for side i.
void expect_side_qparams(const Node& n, const std::array<std::string, 3>& prefixes) {
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(arg_d(n, prefixes[i] + "scale"), kSides[i].scale) << prefixes[i];
    EXPECT_EQ(arg_i(n, prefixes[i] + "zero_point"), kSides[i].zp) << prefixes[i];
  }
}

Builder attention_graph(const Variant& o = {}) {
  Builder b;
  for (const Side& s : kSides) {
    const std::string n = s.name;
    if (o.linears) {
      if (n == "q") b.input("xq", DType::Int8, {1, o.t, K});
      qkv_linear(b, n, static_cast<int>(&s - kSides), s.scale, s.zp, o.t);
    } else {
      b.input(n, DType::Int8, {1, o.t, H * D});
    }
    b.dq(n, n + "_f", s.scale, s.zp);
    if (o.key_without_transpose && n == "k") {
      b.value("k_v", DType::Float32, {1, H, o.t, D});
      b.node("aten.view_copy", {"k_f"}, {{"size", I{1, H, o.t, D}}}, {"k_v"});
      b.q("k_v", "k_tq", s.scale, s.zp);
      b.dq("k_tq", "k_td", s.scale, s.zp);
      continue;
    }
    b.value(n + "_v", DType::Float32, {1, o.t, H, D});
    b.node("aten.view_copy", {n + "_f"}, {{"size", I{1, o.t, H, D}}}, {n + "_v"});
    b.q(n + "_v", n + "_vq", s.scale, s.zp);
    b.dq(n + "_vq", n + "_vd", s.scale, s.zp);
    b.value(n + "_t", DType::Float32, {1, H, o.t, D});
    b.node("aten.transpose_copy.int", {n + "_vd"}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}},
           {n + "_t"});
    b.q(n + "_t", n + "_tq", s.scale, s.zp);
    b.dq(n + "_tq", n + "_td", n == "v" ? o.value_read_scale : s.scale, s.zp);
  }
  if (o.query_view_read_elsewhere) b.output("q_v");
  if (o.q_read_elsewhere) b.output("q");
  std::vector<std::string> in = {"q_td", "k_td", "v_td"};
  if (!o.made_from.empty()) {
    b.input("m01", DType::Float32, o.made_from);
    b.value("inv", DType::Float32, o.made_from);
    b.node("aten.rsub.Scalar", {"m01"}, {{"other", 1.0}}, {"inv"});
    b.value("neg", DType::Float32, o.made_from);
    b.node("aten.mul.Scalar", {"inv"}, {{"other", -10000.0}}, {"neg"});
    b.value("m3", DType::Float32, {1, 1, o.t});
    b.node("aten.view_copy", {"neg"}, {{"size", I{1, 1, o.t}}}, {"m3"});
    b.value("mask", DType::Float32, {1, 1, 1, o.t});
    b.node("aten.view_copy", {"m3"}, {{"size", I{1, 1, 1, o.t}}}, {"mask"});
    if (o.made_read_elsewhere) b.output("neg");
    in.push_back("mask");
  } else if (o.mask) {
    b.input("mask", DType::Float32, o.mask_shape);
    in.push_back("mask");
  }
  b.value("a", DType::Float32, {1, H, o.t, D});
  Args args = {{"scale", 0.25}};
  if (o.causal) args["is_causal"] = true;
  b.node(kSdpa, in, args, {"a"});
  b.q("a", "aq", 0.02, 51);
  b.dq("aq", "ad", 0.02, 51);
  b.value("at", DType::Float32, {1, o.t, H, D});
  b.node("aten.transpose_copy.int", {"ad"}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}}, {"at"});
  b.q("at", "atq", 0.02, 51);
  b.dq("atq", "atd", 0.02, 51);
  b.value("y", DType::Float32, {1, o.t, H * D});
  b.node("aten.view_copy", {"atd"}, {{"size", I{1, o.t, H * D}}}, {"y"});
  b.q("y", "yq", 0.02, 51);
  b.output("yq");
  return b;
}

const std::string kChain =
    "dq -> aten.view_copy -> q -> dq -> aten.transpose_copy.int -> q -> dq (query; key, value "
    "alike) -> aten.scaled_dot_product_attention -> q -> dq -> aten.transpose_copy.int -> q -> "
    "dq -> aten.view_copy -> q";

// The whole chain becomes one q8ta_attention reading the three int8 inputs as they are; the
// report names the chain, its nodes, the heads and the mask.
TEST(Fuse, AttentionWithItsHeadMovesFuses) {
  Builder b = attention_graph();
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_attention"})) << all_lines(r);
  EXPECT_TRUE(has_line(r, "fused " + kChain +
                              " (node 0..28) into q8ta_attention 'yq' (2 heads of 8, mask "
                              "'mask' [1, 1, 1, 5])"))
      << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"q", "k", "v", "mask"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  expect_side_qparams(n, {"query_", "key_", "value_"});
  EXPECT_EQ(arg_i(n, "num_heads"), H);
  EXPECT_EQ(arg_d(n, "scale"), 0.25);
  EXPECT_EQ(std::get<bool>(n.args.at("is_causal")), false);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.02);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 51);
  expect_valid(b.g);
}

// Three plain linears of one input writing Q, K and V, each read by the attention alone, become
// one q8ta_linear_qkv whose weights, scales and biases are the three's, q's rows first, and the
// attention reads its column blocks.
TEST(Fuse, AttentionTakesItsThreeLinearsAsOne) {
  Variant o;
  o.linears = true;
  Builder b = attention_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_linear_qkv", "q8ta_attention_qkv"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "merged 3 linears (q, k, v) 'q' (node 1..3), 'k' (node 12..14), 'v' (node "
                       "23..25) into one q8ta_linear_qkv (N 48) feeding q8ta_attention 'yq': "
                       "q8ta_attention_qkv reads 'q_qkv''s column blocks 0, 16, 32"))
      << all_lines(r);
  const Node& linear = b.g.nodes[0];
  const Node& attention = b.g.nodes[1];
  ASSERT_EQ(linear.inputs.size(), 4u);
  EXPECT_EQ(linear.inputs[0], "xq");
  EXPECT_EQ(linear.outputs, (std::vector<std::string>{"q_qkv"}));
  EXPECT_EQ(b.g.value("q_qkv").shape, (I{1, T, 3 * H * D}));
  std::vector<uint8_t> weight;
  std::vector<float> scales, bias;
  for (int side = 0; side < 3; ++side) {
    const std::vector<uint8_t> w = side_weight(side);
    weight.insert(weight.end(), w.begin(), w.end());
    const std::vector<float> s = side_floats(side, 0.01f), c = side_floats(side, 0.5f);
    scales.insert(scales.end(), s.begin(), s.end());
    bias.insert(bias.end(), c.begin(), c.end());
  }
  EXPECT_EQ(b.g.value(linear.inputs[1]).shape, (I{3 * H * D, K}));
  EXPECT_EQ(*b.g.value(linear.inputs[1]).data, weight);
  EXPECT_EQ(floats_of(b.g.value(linear.inputs[2])), scales);
  EXPECT_EQ(floats_of(b.g.value(linear.inputs[3])), bias);
  expect_side_qparams(linear, {"q_", "k_", "v_"});
  EXPECT_EQ(attention.inputs, (std::vector<std::string>{"q_qkv", "mask"}));
  EXPECT_EQ(arg_d(attention, "key_scale"), 0.07);
  for (const char* gone : {"q", "k", "v", "qw", "kw", "vw", "qb", "kb", "vb"}) {
    EXPECT_FALSE(b.g.has_value(gone)) << gone;
  }
  expect_valid(b.g);
}

// Q's output read by the graph too, or epilogue fusion off: the three linears stay apart.
TEST(Fuse, AttentionLinearsThatMustNotMergeStayApart) {
  const std::vector<std::string> apart = {"q8ta_linear", "q8ta_linear", "q8ta_linear",
                                          "q8ta_attention"};
  const std::string what =
      "not merged: 3 linears (q, k, v) 'q' (node 1..3), 'k' (node 12..14), 'v' (node 23..25) "
      "into one q8ta_linear_qkv (N 48) feeding q8ta_attention 'yq': ";
  Variant o;
  o.linears = true;
  o.q_read_elsewhere = true;
  Builder b = attention_graph(o);
  PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), apart) << all_lines(r);
  EXPECT_TRUE(has_line(r, what + "the query's linear output 'q': 'q' is a graph output"))
      << all_lines(r);
  expect_valid(b.g);

  o.q_read_elsewhere = false;
  b = attention_graph(o);
  FuseOptions options;
  options.fuse_epilogues = false;
  r = fuse_and_lower(b.g, options);
  EXPECT_EQ(ops_of(b.g), apart) << all_lines(r);
  EXPECT_TRUE(has_line(r, what + "epilogue fusion is off (--no-fuse-epilogue)")) << all_lines(r);
  expect_valid(b.g);
}

// At one token the head split and merge only reshape ([1, 1, H, D] -> [1, H, 1, D] keeps the
// flat order), which a view's own pattern would take first: the attention is tried before it.
TEST(Fuse, AttentionAtOneTokenFuses) {
  Variant o;
  o.t = 1;
  o.mask_shape = {1, 1, 1, 1};
  Builder b = attention_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_attention"})) << all_lines(r);
  EXPECT_TRUE(has_line(r, "fused " + kChain +
                              " (node 0..28) into q8ta_attention 'yq' (2 heads of 8, mask "
                              "'mask' [1, 1, 1, 1])"))
      << all_lines(r);
  expect_valid(b.g);
  o.made_from = {1, 1};  // BERT's mask, made in the kernel
  Builder made = attention_graph(o);
  const PassReport m = fuse_and_lower(made.g);
  EXPECT_EQ(ops_of(made.g), (std::vector<std::string>{"q8ta_attention_mask_affine"}))
      << all_lines(m);
  expect_valid(made.g);
}

// Without a mask the op reads zeros (a constant of Tk elements); a per-query-row mask is taken.
TEST(Fuse, AttentionMaskForms) {
  {
    Variant o;
    o.mask = false;
    Builder b = attention_graph(o);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_attention"})) << all_lines(r);
    EXPECT_TRUE(has_line(
        r, "fused " + kChain + " (node 0..28) into q8ta_attention 'yq' (2 heads of 8, no mask)"))
        << all_lines(r);
    const Value& zeros = b.g.value(b.g.nodes[0].inputs[3]);
    EXPECT_EQ(zeros.shape, (I{T}));
    EXPECT_EQ(floats_of(zeros), std::vector<float>(T, 0.0f));
    expect_valid(b.g);
  }
  {
    Variant o;
    o.mask_shape = {T, T};  // [Tq, Tk]: one row per query, shared by batches and heads
    Builder b = attention_graph(o);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_attention"})) << all_lines(r);
  }
}

// BERT's mask, (1 - m01) * -10000 viewed to [1, 1, 1, T], is made in the kernel from m01: the
// two steps as multiply-adds in the order applied (rsub: -1, +1; mul: -10000, -0.0), their
// nodes taken by the match when nothing else reads their values; kept (and lowered) when
// something does; the plain mask when m01's elements do not lie as the mask's.
TEST(Fuse, AttentionMakesBertsMaskInTheKernel) {
  {
    Variant o;
    o.made_from = {1, T};
    Builder b = attention_graph(o);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_attention_mask_affine"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r, "fused " + kChain +
                                " (node 0..32) into q8ta_attention_mask_affine 'yq' (2 heads of 8, "
                                "mask made in the kernel from 'm01' [1, 5] by aten.rsub.Scalar -> "
                                "aten.mul.Scalar -> aten.view_copy -> aten.view_copy, node 21..24 "
                                "taken)"))
        << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"q", "k", "v", "m01"}));
    EXPECT_EQ(arg_d(n, "mask_multiplier_0"), -1.0);
    EXPECT_EQ(arg_d(n, "mask_addend_0"), 1.0);
    EXPECT_EQ(arg_d(n, "mask_multiplier_1"), -10000.0);
    EXPECT_EQ(arg_d(n, "mask_addend_1"), 0.0);
    EXPECT_TRUE(std::signbit(arg_d(n, "mask_addend_1")));  // -0.0: adds nothing to -0.0 either
    EXPECT_EQ(arg_d(n, "query_scale"), 0.1);
    EXPECT_FALSE(b.g.has_value("neg"));
    expect_valid(b.g);
  }
  {
    Variant o;
    o.made_from = {1, T};
    o.made_read_elsewhere = true;
    Builder b = attention_graph(o);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(count_op(b.g, "q8ta_attention_mask_affine"), 1) << all_lines(r);
    EXPECT_EQ(count_op(b.g, "float_affine_scalar"), 2) << all_lines(r);
    EXPECT_TRUE(
        has_line(r, "fused " + kChain +
                        " (nodes 0..20, 25..32) into q8ta_attention_mask_affine 'yq' (2 heads "
                        "of 8, mask made in the kernel from 'm01' [1, 5] by aten.rsub.Scalar "
                        "-> aten.mul.Scalar -> aten.view_copy -> aten.view_copy)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Variant o;
    o.made_from = {1, T, 1};  // T rows of one column, not one row of T
    Builder b = attention_graph(o);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(count_op(b.g, "q8ta_attention"), 1) << all_lines(r);
    EXPECT_EQ(count_op(b.g, "q8ta_attention_mask_affine"), 0) << all_lines(r);
    EXPECT_EQ(b.g.nodes.back().inputs[3], "mask") << all_lines(r);
    expect_valid(b.g);
  }
}

// Chains the kernel does not compute stay as they were, each with its reason.
TEST(Fuse, AttentionChainsThatDoNotFitAreLeft) {
  const auto refused = [](const Variant& o, const std::string& why) {
    Builder b = attention_graph(o);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(count_op(b.g, "q8ta_attention"), 0) << all_lines(r);
    EXPECT_EQ(count_op(b.g, kSdpa), 1) << all_lines(r);
    bool found = false;
    for (const std::string& l : r.lines) {
      found = found || (l.rfind("not fused: ", 0) == 0 &&
                        l.find("as q8ta_attention: " + why) != std::string::npos);
    }
    EXPECT_TRUE(found) << why << "\n" << all_lines(r);
  };
  Variant per_head;
  per_head.mask_shape = {1, H, 1, T};
  refused(per_head,
          "the mask [1, 2, 1, 5] is not a float32 [1 or B, 1, 1 or Tq, Tk] = [1 or 1, 1, 1 or 5, "
          "5] (per head, or another shape)");
  Variant no_transpose;
  no_transpose.key_without_transpose = true;
  refused(no_transpose, "key: the moves do not split [1, 5, 16] into [B, H, T, D] heads");
  Variant shared;
  shared.query_view_read_elsewhere = true;
  refused(shared,
          "query: not a head split (dq -> view_copy -> transpose_copy -> q, one reader each)");
  Variant requantized;
  requantized.value_read_scale = 0.05;
  refused(requantized,
          "value: input (scale 0.03 zero_point 33 range -128..127) and output (scale 0.05 "
          "zero_point 33 range -128..127) quantization differ");
}

// is_causal (no mask): the op's own flag, reading zeros as its mask.
TEST(Fuse, CausalAttentionFuses) {
  Variant o;
  o.causal = true;
  o.mask = false;
  Builder b = attention_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_attention"})) << all_lines(r);
  EXPECT_TRUE(has_line(
      r, "fused " + kChain + " (node 0..28) into q8ta_attention 'yq' (2 heads of 8, causal)"))
      << all_lines(r);
  EXPECT_EQ(std::get<bool>(b.g.nodes[0].args.at("is_causal")), true);
  expect_valid(b.g);
}

// Float Q, K, V [1, T, h*d] -> view_copy [1, T, h, d] -> transpose_copy(1, 2); SDPA with a mask;
// transpose_copy(1, 2) -> view_copy [1, T, h*d] -> 'y' (nodes 0..8).
Builder float_attention_graph(int64_t h, int64_t d) {
  Builder b;
  for (const std::string n : {"q", "k", "v"}) {
    b.input(n, DType::Float32, {1, T, h * d});
    b.value(n + "_v", DType::Float32, {1, T, h, d});
    b.node("aten.view_copy", {n}, {{"size", I{1, T, h, d}}}, {n + "_v"});
    b.value(n + "_t", DType::Float32, {1, h, T, d});
    b.node("aten.transpose_copy.int", {n + "_v"}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}},
           {n + "_t"});
  }
  b.input("mask", DType::Float32, {1, 1, 1, T});
  b.value("a", DType::Float32, {1, h, T, d});
  b.node(kSdpa, {"q_t", "k_t", "v_t", "mask"}, {}, {"a"});
  b.value("at", DType::Float32, {1, T, h, d});
  b.node("aten.transpose_copy.int", {"a"}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}}, {"at"});
  b.value("y", DType::Float32, {1, T, h * d});
  b.node("aten.view_copy", {"at"}, {{"size", I{1, T, h * d}}}, {"y"});
  b.output("y");
  return b;
}

// On float32 data the same chain becomes the float op `attention` (the default scale 1/sqrt(D));
// heads wider than its 64 columns stay as they were, with the reason.
TEST(Fuse, FloatAttentionWithItsHeadMovesFuses) {
  {
    Builder b = float_attention_graph(H, D);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"attention"})) << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "fused aten.view_copy -> aten.transpose_copy.int (query; key, value "
                         "alike) -> aten.scaled_dot_product_attention -> aten.transpose_copy.int "
                         "-> aten.view_copy (node 0..8) into attention 'y' (2 heads of 8, mask "
                         "'mask' [1, 1, 1, 5])"))
        << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"q", "k", "v", "mask"}));
    EXPECT_EQ(arg_i(n, "num_heads"), H);
    EXPECT_DOUBLE_EQ(arg_d(n, "scale"), 1.0 / std::sqrt(8.0));
    EXPECT_EQ(n.args.count("query_scale"), 0u);
    expect_valid(b.g);
  }
  {
    Builder b = float_attention_graph(1, 128);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(count_op(b.g, "attention"), 0) << all_lines(r);
    EXPECT_EQ(count_op(b.g, kSdpa), 1) << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: (query; key, value alike) -> "
                         "aten.scaled_dot_product_attention (node 6) as attention: 1 heads of 128: "
                         "the kernel takes heads of a multiple of 4 columns, at most 64"))
        << all_lines(r);
  }
}

// The shape rule: broadcast batch dims, the mask's broadcast, dropout and is_causal with a mask.
TEST(ShapeInference, ScaledDotProductAttention) {
  Builder b;
  b.input("q", DType::Float32, {2, 3, 7, 8});
  b.input("k", DType::Float32, {1, 3, 9, 8});
  b.input("v", DType::Float32, {1, 3, 9, 4});
  b.input("m", DType::Float32, {2, 1, 1, 9});
  b.node(kSdpa, {"q", "k", "v", "m"}, {}, {"o"});
  infer_shapes(b.g);
  EXPECT_EQ(b.g.value("o").shape, (I{2, 3, 7, 4}));
  const auto error = [&](Args args, const std::string& mask, const std::string& says) {
    Builder e = b;
    e.g.nodes.clear();
    std::vector<std::string> in = {"q", "k", "v"};
    if (!mask.empty()) in.push_back(mask);
    e.node(kSdpa, in, std::move(args), {"o"});
    try {
      infer_shapes(e.g);
      ADD_FAILURE() << "no error: " << says;
    } catch (const vkd::Error& err) {
      EXPECT_NE(std::string(err.what()).find(says), std::string::npos) << err.what();
    }
  };
  b.input("bad", DType::Float32, {2, 1, 7, 8});
  error({}, "bad", "does not broadcast to the scores [2, 3, 7, 9]");
  error({{"dropout_p", 0.1}}, "", "argument 'dropout_p': 0.1 must be 0");
  error({{"is_causal", true}}, "m", "argument 'is_causal': true together with an attn_mask");
  error({{"enable_gqa", true}}, "", "argument 'enable_gqa': true is not supported");
}

}  // namespace
