// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): data movement
// (compiler/ops/Permute.cpp + MoveChain): channel shuffles, permutes, int8 moves;
// sink_dequantize (SinkDequantize.cpp), the pass before.
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

// ---- data movement: channel shuffle, permute ---------------------------------------------------

// xq [1, 6, 4, 4] through `moves` (op, args, output shape), each followed by q -> dq with
// (0.1, 2) when `pairs` (FX's reference graphs), ending in `end` (q or none).
struct MoveStep {
  std::string op;
  Args args;
  std::vector<int64_t> shape;
};
Builder move_chain(const std::vector<MoveStep>& moves, bool pairs, bool final_q = true) {
  Builder b;
  b.input("xq", DType::Int8, {1, 6, 4, 4});
  b.dq("xq", "x", 0.1, 2);
  std::string cur = "x";
  for (size_t i = 0; i < moves.size(); ++i) {
    const std::string out = "m" + std::to_string(i);
    b.value(out, DType::Float32, moves[i].shape);
    b.node(moves[i].op, {cur}, moves[i].args, {out});
    cur = out;
    if (pairs && i + 1 < moves.size()) {
      b.q(cur, cur + "q", 0.1, 2);
      b.dq(cur + "q", cur + "d", 0.1, 2);
      cur += "d";
    }
  }
  if (final_q) {
    b.q(cur, "yq", 0.1, 2);
    b.output("yq");
  } else {
    b.output(cur);
  }
  return b;
}

// ShuffleNet's channel shuffle with groups 2: view [1, 2, 3, 4, 4], transpose(1, 2), contiguous,
// view [1, 6, 4, 4].
std::vector<MoveStep> shuffle_moves(const std::string& transpose = "aten.transpose_copy.int") {
  Args swap = transpose == "aten.permute_copy" ? Args{{"dims", std::vector<int64_t>{0, 2, 1, 3, 4}}}
                                               : Args{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}};
  return {{"aten.view_copy", {{"size", std::vector<int64_t>{1, 2, 3, 4, 4}}}, {1, 2, 3, 4, 4}},
          {transpose, swap, {1, 3, 2, 4, 4}},
          {"aten.clone", {}, {1, 3, 2, 4, 4}},
          {"aten.view_copy", {{"size", std::vector<int64_t>{1, 6, 4, 4}}}, {1, 6, 4, 4}}};
}

// FX's form (a q -> dq pair after every move) and the form without pairs both become one
// q8ta_channel_shuffle on the int8 data; the 5-D values disappear with the chain.
TEST(Fuse, ChannelShuffleBetweenQuantizesFuses) {
  for (bool pairs : {true, false}) {
    for (const char* transpose : {"aten.transpose_copy.int", "aten.permute_copy"}) {
      Builder b = move_chain(shuffle_moves(transpose), pairs);
      const PassReport r = fuse_and_lower(b.g);
      ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_channel_shuffle"})) << all_lines(r);
      const Node& n = b.g.nodes[0];
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
      EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
      EXPECT_EQ(arg_i(n, "groups"), 2);
      EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
      EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
      EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
      EXPECT_EQ(arg_i(n, "output_zero_point"), 2);
      EXPECT_EQ(b.g.value_names(), (std::vector<std::string>{"xq", "yq"}));
      expect_quant(b.g.value("yq"), 0.1, 2, -128, 127);
      expect_valid(b.g);
      if (pairs && std::string(transpose) == "aten.transpose_copy.int") {
        EXPECT_EQ(r.lines.at(0),
                  "fused dq -> aten.view_copy -> q -> dq -> aten.transpose_copy.int -> q -> dq -> "
                  "aten.clone -> q -> dq -> aten.view_copy -> q (node 0..11) into "
                  "q8ta_channel_shuffle 'yq' (channel shuffle (groups 2))");
      }
    }
  }
}

// Groups 3 of 6 channels, the 5-D view read back as [1, 6, 4, 4]: the groups come from what the
// chain does to the elements.
TEST(Fuse, ChannelShuffleGroupsComeFromTheElements) {
  Builder b = move_chain(
      {{"aten.view_copy", {{"size", std::vector<int64_t>{1, 3, 2, 16}}}, {1, 3, 2, 16}},
       {"aten.transpose.int", {{"dim0", int64_t{-3}}, {"dim1", int64_t{2}}}, {1, 2, 3, 16}},
       {"aten.view_copy", {{"size", std::vector<int64_t>{1, 6, 4, 4}}}, {1, 6, 4, 4}}},
      false);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_channel_shuffle"})) << all_lines(r);
  EXPECT_EQ(arg_i(b.g.nodes[0], "groups"), 3);
  expect_valid(b.g);
}

// dq -> view -> transpose -> contiguous -> view -> conv (no quantize between the shuffle and the
// conv): sink_dequantize moves the dq below the moves, so the shuffle runs on the int8 data and
// the conv is an int8 conv; the shuffle takes the quantization of the values it moves.
TEST(Fuse, ShuffleBeforeAConvStaysInt8) {
  Builder b;
  b.input("xq", DType::Int8, {1, 6, 4, 4});
  b.dq("xq", "x", 0.1, 2);  // 0
  std::string cur = "x";
  for (const MoveStep& m : shuffle_moves()) {  // 1..4
    const std::string out = "m" + std::to_string(b.g.nodes.size());
    b.value(out, DType::Float32, m.shape);
    b.node(m.op, {cur}, m.args, {out});
    cur = out;
  }
  b.per_channel_weight({4, 6, 1, 1}, {0.5f, 0.25f, 2.0f, 1.0f}, {0, 0, 0, 0});          // 5
  b.conv(cur, "wf", "", "y", {1, 4, 4, 4}, {{"padding", std::vector<int64_t>{0, 0}}});  // 6
  b.q("y", "yq", 0.2, -1);                                                              // 7
  b.output("yq");
  const PassReport sunk = sink_dequantize(b.g);
  EXPECT_EQ(sunk.lines, (std::vector<std::string>{
                            "moved dq (node 0) below aten.view_copy -> aten.transpose_copy.int -> "
                            "aten.clone -> aten.view_copy (node 1..4): they move the int8 values "
                            "of 'xq', 'm4' is dequantized after them"}));
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_channel_shuffle", "q8ta_conv2d"}))
      << all_lines(r);
  const Node& shuffle = b.g.nodes[0];
  EXPECT_EQ(shuffle.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(b.g.nodes[1].inputs.at(0), shuffle.outputs.at(0));
  EXPECT_EQ(arg_i(shuffle, "groups"), 2);
  EXPECT_EQ(arg_d(shuffle, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(shuffle, "output_zero_point"), 2);
  EXPECT_EQ(arg_d(b.g.nodes[1], "input_scale"), 0.1);
  expect_quant(b.g.value(shuffle.outputs[0]), 0.1, 2, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused aten.view_copy -> aten.transpose_copy.int -> aten.clone -> "
                       "aten.view_copy (node 0..3) into q8ta_channel_shuffle 'm4_int8' "
                       "(channel shuffle (groups 2))"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.convolution -> q (nodes 4, 6..7) into q8ta_conv2d "
                       "'yq' (activation none)"))
      << all_lines(r);
  expect_valid(b.g);
}

// The moved result read by two convs and a graph output: every reader gets a dequantize of its
// own (the convs fuse), the graph output stays the float result.
TEST(Fuse, SinkGivesEachReaderItsOwnDequantize) {
  Builder b = move_chain(
      {{"aten.permute_copy", {{"dims", std::vector<int64_t>{0, 1, 3, 2}}}, {1, 6, 4, 4}}}, false,
      false);
  b.per_channel_weight({4, 6, 1, 1}, {0.5f, 0.25f, 2.0f, 1.0f}, {0, 0, 0, 0});
  const Args pad0 = {{"padding", std::vector<int64_t>{0, 0}}};
  b.conv("m0", "wf", "", "y1", {1, 4, 4, 4}, pad0);
  b.q("y1", "y1q", 0.2, -1);
  b.conv("m0", "wf", "", "y2", {1, 4, 4, 4}, pad0);
  b.q("y2", "y2q", 0.3, 0);
  b.output("y1q");
  b.output("y2q");
  const PassReport sunk = sink_dequantize(b.g);
  EXPECT_EQ(sunk.lines.size(), 1u);
  EXPECT_NE(sunk.lines.at(0).find("(one dequantize per reader: 3)"), std::string::npos)
      << sunk.lines.at(0);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_permute", "q8ta_dequantize", "q8ta_conv2d",
                                                   "q8ta_conv2d"}))
      << all_lines(r);
  EXPECT_EQ(b.g.nodes[1].outputs, (std::vector<std::string>{"m0"}));  // the graph output
  EXPECT_EQ(arg_l(b.g.nodes[0], "dims"), (std::vector<int64_t>{0, 1, 3, 2}));
  expect_valid(b.g);
}

// A chain that ends in a quantize is left to fusion; a dequantize with nothing to move below
// stays.
TEST(Fuse, SinkLeavesQuantizedChainsAlone) {
  Builder b = move_chain(shuffle_moves(), false);
  EXPECT_TRUE(sink_dequantize(b.g).lines.empty());
  Builder c = conv_act_graph("", {}, 0.1, 2);
  EXPECT_TRUE(sink_dequantize(c.g).lines.empty());
}

// Permutes fold: a permute and its inverse are a view (identity here), one transpose is
// q8ta_permute over the 4-D sizes (a 3-D transpose padded with a leading 1).
TEST(Fuse, PermuteChainsBecomeOneOp) {
  {
    Builder b = move_chain(
        {{"aten.permute_copy", {{"dims", std::vector<int64_t>{0, 2, 3, 1}}}, {1, 4, 4, 6}},
         {"aten.permute", {{"dims", std::vector<int64_t>{0, -1, 1, 2}}}, {1, 6, 4, 4}}},
        true);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"identity"})) << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.permute_copy -> q -> dq -> aten.permute -> q "
                         "(node 0..5) into identity 'yq' (a view)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b;
    b.input("xq", DType::Int8, {6, 4, 5});
    b.dq("xq", "x", 0.1, 2);
    b.value("t", DType::Float32, {6, 5, 4});
    b.node("aten.transpose_copy.int", {"x"}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}}, {"t"});
    b.q("t", "yq", 0.1, 2);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_permute"})) << all_lines(r);
    EXPECT_EQ(arg_l(b.g.nodes[0], "dims"), (std::vector<int64_t>{0, 1, 3, 2}));
    expect_valid(b.g);
  }
}

// A quantize inside a chain with other parameters requantizes: the chain ends there (the op
// requantizes, checked for all 256 values) and the next one starts at its dequantize; a view
// never requantizes.
TEST(Fuse, RequantizingQuantizeSplitsAChain) {
  Builder b;
  b.input("xq", DType::Int8, {1, 6, 4, 4});
  b.dq("xq", "x", 0.1, 2);
  b.value("p", DType::Float32, {1, 4, 4, 6});
  b.node("aten.permute_copy", {"x"}, {{"dims", std::vector<int64_t>{0, 2, 3, 1}}}, {"p"});
  b.q("p", "pq", 0.08, -3);
  b.dq("pq", "pd", 0.08, -3);
  b.value("t", DType::Float32, {1, 4, 6, 4});
  b.node("aten.transpose_copy.int", {"pd"}, {{"dim0", int64_t{2}}, {"dim1", int64_t{3}}}, {"t"});
  b.q("t", "yq", 0.08, -3);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_permute", "q8ta_permute"}))
      << all_lines(r);
  EXPECT_EQ(arg_d(b.g.nodes[0], "input_scale"), 0.1);
  EXPECT_EQ(arg_d(b.g.nodes[0], "output_scale"), 0.08);
  EXPECT_EQ(arg_i(b.g.nodes[0], "output_zero_point"), -3);
  EXPECT_EQ(arg_d(b.g.nodes[1], "input_scale"), 0.08);
  EXPECT_EQ(arg_l(b.g.nodes[1], "dims"), (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.permute_copy -> q (node 0..2) into q8ta_permute 'pq' "
                       "(permute [0, 2, 3, 1])"))
      << all_lines(r);
  expect_valid(b.g);

  Builder v;
  v.input("xq", DType::Int8, {1, 6, 4, 4});
  v.dq("xq", "x", 0.1, 2);
  v.value("u", DType::Float32, {6, 1, 4, 4});
  v.node("aten.permute_copy", {"x"}, {{"dims", std::vector<int64_t>{1, 0, 2, 3}}}, {"u"});
  v.q("u", "yq", 0.05, 2);
  v.output("yq");
  // A permute that moves only a size-1 dim is a view: it requantizes in a q8ta_clamp after it.
  const PassReport rv = fuse_and_lower(v.g);
  ASSERT_EQ(ops_of(v.g), (std::vector<std::string>{"q8ta_view", "q8ta_clamp"})) << all_lines(rv);
  EXPECT_TRUE(has_line(rv,
                       "fused q (node 2) into q8ta_clamp 'yq' (requantizes the view "
                       "'u_int8': scale 0.1 zero_point 2 range -128..127 -> scale 0.05 "
                       "zero_point 2 range -128..127)"))
      << all_lines(rv);
  expect_valid(v.g);
}

// A conv's [1, C, H, W] flattened into tokens [1, H*W, C] (view [1, C, H*W], transpose(1, 2):
// a ViT's patch embedding): a 4-D permute [0, 2, 3, 1] into its own sizes, then a q8ta_view.
TEST(Fuse, PermuteThenAViewBecomesQ8taPermuteAndQ8taView) {
  Builder b = move_chain(
      {{"aten.view_copy", {{"size", std::vector<int64_t>{1, 6, 16}}}, {1, 6, 16}},
       {"aten.transpose_copy.int", {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}}, {1, 16, 6}}},
      true);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_permute", "q8ta_view"})) << all_lines(r);
  const Node& permute = b.g.nodes[0];
  const Node& view = b.g.nodes[1];
  EXPECT_EQ(permute.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(arg_l(permute, "dims"), (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(b.g.value(permute.outputs[0]).shape, (std::vector<int64_t>{1, 4, 4, 6}));
  EXPECT_EQ(view.inputs, permute.outputs);
  EXPECT_EQ(view.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.view_copy -> q -> dq -> aten.transpose_copy.int -> q "
                       "(node 0..4) into q8ta_permute 'yq_permuted' (permute [0, 2, 3, 1], then "
                       "a view)"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.view_copy -> q -> dq -> aten.transpose_copy.int -> q "
                       "(node 5) into q8ta_view 'yq' (the view after the permute)"))
      << all_lines(r);
  expect_valid(b.g);
}

// A 5-D transpose that is no channel shuffle stays an edge op, reported once for the chain and
// once per node kept beyond the device rank.
TEST(Fuse, MovementNoOpDoesIsReported) {
  Builder b = move_chain(
      {{"aten.view_copy", {{"size", std::vector<int64_t>{1, 2, 3, 4, 4}}}, {1, 2, 3, 4, 4}},
       {"aten.transpose_copy.int", {{"dim0", int64_t{1}}, {"dim1", int64_t{3}}}, {1, 4, 3, 2, 4}},
       {"aten.view_copy", {{"size", std::vector<int64_t>{1, 6, 4, 4}}}, {1, 6, 4, 4}}},
      false);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.view_copy -> aten.transpose_copy.int -> "
                       "aten.view_copy -> q (node 0..4) as a data-movement op: it moves "
                       "elements in a way no single backend op does (neither a view, a channel "
                       "shuffle nor a 4-D permute of [1, 6, 4, 4])"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "kept node 2 (aten.transpose_copy.int) as an edge op: value 'm0' has "
                       "rank 5 ([1, 2, 3, 4, 4]); device tensors are at most 4-D"))
      << all_lines(r);
  EXPECT_EQ(count_op(b.g, "aten.transpose_copy.int"), 1) << all_lines(r);
}

// Int8 moves (what sink_dequantize leaves) fuse the same way, with the quantization of what
// they move: a transpose is q8ta_permute, a permute of a unit dim is a view.
TEST(Fuse, Int8PermuteBecomesQ8taPermuteOrAView) {
  auto graph = [](const char* op, Args args, std::vector<int64_t> shape) {
    Builder b;
    b.input("x", DType::Float32, {1, 8, 3, 5});
    b.q("x", "xq", 0.1, 5);
    b.value("t", DType::Int8, shape);
    b.node(op, {"xq"}, std::move(args), {"t"});
    b.dq("t", "y", 0.1, 5);
    b.output("y");
    return b;
  };
  Builder b =
      graph("aten.transpose.int", {{"dim0", int64_t{2}}, {"dim1", int64_t{3}}}, {1, 8, 5, 3});
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g),
            (std::vector<std::string>{"q8ta_quantize", "q8ta_permute", "q8ta_dequantize"}))
      << all_lines(r);
  const Node& n = b.g.nodes[1];
  EXPECT_EQ(arg_l(n, "dims"), (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 5);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 5);
  expect_quant(b.g.value("t"), 0.1, 5, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused aten.transpose.int (node 1) into q8ta_permute 't' (permute "
                       "[0, 1, 3, 2])"))
      << all_lines(r);
  expect_valid(b.g);

  Builder v = graph("aten.permute", {{"dims", std::vector<int64_t>{1, 0, 2, 3}}}, {8, 1, 3, 5});
  const PassReport rv = fuse_and_lower(v.g);
  ASSERT_EQ(ops_of(v.g),
            (std::vector<std::string>{"q8ta_quantize", "q8ta_view", "q8ta_dequantize"}))
      << all_lines(rv);
  EXPECT_EQ(arg_i(v.g.nodes[1], "zero_point"), 5);
  expect_valid(v.g);
}

// An int8 chain no single op moves like is lowered node by node: the 4-D permute runs on the
// GPU, the 5-D moves stay edge ops.
TEST(Fuse, Int8ChainNoOpTakesLowersNodeByNode) {
  Builder b;
  b.input("x", DType::Float32, {1, 6, 4, 4});
  b.q("x", "xq", 0.1, 5);
  b.value("p", DType::Int8, {1, 4, 4, 6});
  b.node("aten.permute_copy", {"xq"}, {{"dims", std::vector<int64_t>{0, 2, 3, 1}}}, {"p"});
  b.value("v", DType::Int8, {1, 4, 4, 2, 3});
  b.node("aten.view_copy", {"p"}, {{"size", std::vector<int64_t>{1, 4, 4, 2, 3}}}, {"v"});
  b.value("t", DType::Int8, {1, 4, 4, 3, 2});
  b.node("aten.transpose_copy.int", {"v"}, {{"dim0", int64_t{3}}, {"dim1", int64_t{4}}}, {"t"});
  b.output("t");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: aten.permute_copy -> aten.view_copy -> "
                       "aten.transpose_copy.int (node 1..3) as a data-movement op: 't' has "
                       "rank 5 (device tensors are at most 4-D)"))
      << all_lines(r);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_quantize", "q8ta_permute",
                                                   "aten.view_copy", "aten.transpose_copy.int"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "lowered 2 node(s): 1 q8ta_permute, 1 q8ta_quantize")) << all_lines(r);
}

}  // namespace
