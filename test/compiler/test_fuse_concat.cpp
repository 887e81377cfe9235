// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): q8ta_cat and the splits as
// q8ta_slice (compiler/ops/Concat.cpp).
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

// ---- cat and the splits ------------------------------------------------------------------------

// dq(a), dq(b), dq(c) -> aten.cat (dim 1) -> q: the inputs with quantizations of their own.
Builder cat_graph(int64_t dim = 1) {
  Builder b;
  b.input("aq", DType::Int8, {1, 3, 4, 4});
  b.input("bq", DType::Int8, {1, 5, 4, 4});
  b.input("cq", DType::Int8, {1, 2, 4, 4});
  b.dq("aq", "a", 0.1, -3);
  b.dq("bq", "b", 0.05, 7);
  b.dq("cq", "c", 0.1, -3);
  b.value("y", DType::Float32, {1, 10, 4, 4});
  b.node("aten.cat", {"a", "b", "c"}, {{"dim", dim}}, {"y"});
  b.q("y", "yq", 0.1, -3);
  b.output("yq");
  return b;
}

TEST(Fuse, CatBecomesQ8taCat) {
  Builder b = cat_graph(-3);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_cat"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"aq", "bq", "cq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_i(n, "dim"), 1);  // -3 of rank 4
  EXPECT_EQ(std::get<std::vector<double>>(n.args.at("input_scales")),
            (std::vector<double>{0.1, 0.05, 0.1}));
  EXPECT_EQ(arg_l(n, "input_zero_points"), (std::vector<int64_t>{-3, 7, -3}));
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
  EXPECT_EQ(arg_i(n, "quant_min"), -128);
  EXPECT_EQ(arg_i(n, "quant_max"), 127);
  expect_quant(b.g.value("bq"), 0.05, 7, -128, 127);
  expect_quant(b.g.value("yq"), 0.1, -3, -128, 127);
  EXPECT_EQ(b.g.value("aq").dtype, DType::Int8x4);
  EXPECT_FALSE(b.g.has_value("y"));
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq, dq -> aten.cat -> q (node 0..4) into q8ta_cat 'yq' "
                       "(3 inputs along dim 1)"))
      << all_lines(r);
  expect_valid(b.g);
}

// A ViT's class token: dq(int8 constant [1, 1, 6]), dq(tokens [1, 4, 6]) -> cat (dim 1) -> q
// reads the constant as an int8x4 copy (as q8ta_add reads one) with its own quantization; a cat
// of constants alone is not fused.
TEST(Fuse, CatWithAConstantInputBecomesQ8taCat) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 6});
  std::vector<uint8_t> token(6);
  for (size_t i = 0; i < token.size(); ++i) token[i] = static_cast<uint8_t>(i * 40);
  b.constant("cls", DType::Int8, {1, 1, 6}, token);
  b.dq("cls", "c", 0.1, -3);
  b.dq("xq", "x", 0.1, -3);
  b.value("y", DType::Float32, {1, 5, 6});
  b.node("aten.cat", {"c", "x"}, {{"dim", int64_t{1}}}, {"y"});
  b.q("y", "yq", 0.1, -3);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_cat"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  ASSERT_EQ(n.inputs.size(), 2u);
  EXPECT_EQ(n.inputs[1], "xq");
  const Value& cls = b.g.value(n.inputs[0]);
  EXPECT_EQ(cls.dtype, DType::Int8x4);
  EXPECT_EQ(cls.shape, (std::vector<int64_t>{1, 1, 6}));
  ASSERT_TRUE(cls.data.has_value());
  EXPECT_EQ(*cls.data, token);
  EXPECT_EQ(arg_l(n, "input_zero_points"), (std::vector<int64_t>{-3, -3}));
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq -> aten.cat -> q (node 0..3) into q8ta_cat 'yq' "
                       "(2 inputs along dim 1)"))
      << all_lines(r);
  expect_valid(b.g);

  Builder only;
  only.constant("a", DType::Int8, {1, 1, 6}, token);
  only.constant("b", DType::Int8, {1, 1, 6}, token);
  only.dq("a", "af", 0.1, -3);
  only.dq("b", "bf", 0.1, -3);
  only.value("y", DType::Float32, {1, 2, 6});
  only.node("aten.cat", {"af", "bf"}, {{"dim", int64_t{1}}}, {"y"});
  only.q("y", "yq", 0.1, -3);
  only.output("yq");
  const PassReport none = fuse_and_lower(only.g);
  EXPECT_EQ(count_op(only.g, "q8ta_cat"), 0) << all_lines(none);
  EXPECT_TRUE(has_line(none,
                       "not fused: dq, dq -> aten.cat -> q (node 0..3) as q8ta_cat: every input "
                       "is a constant"))
      << all_lines(none);
}

TEST(Fuse, CatThatCannotFuseSaysWhy) {
  {  // an input that is no dequantized activation
    Builder b = cat_graph();
    b.input("f", DType::Float32, {1, 2, 4, 4});
    b.g.nodes[3].inputs[2] = "f";
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.cat -> q (nodes 0..1, 3..4) as q8ta_cat: "
                         "'f' is not dequantized (a graph input)"))
        << all_lines(r);
  }
  {  // an activation after the cat
    Builder b = cat_graph();
    b.value("r", DType::Float32, {1, 10, 4, 4});
    b.node("aten.relu", {"y"}, {}, {"r"});
    b.g.nodes[4].inputs[0] = "r";  // the q now quantizes the relu
    std::swap(b.g.nodes[4], b.g.nodes[5]);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq, dq -> aten.cat -> aten.relu -> q (node 0..5) as "
                         "q8ta_cat: an activation follows (it fuses none)"))
        << all_lines(r);
  }
  {  // a dequantized input also read elsewhere
    Builder b = cat_graph();
    b.output("b");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq, dq -> aten.cat -> q (node 0..4) as q8ta_cat: "
                         "'b' is a graph output"))
        << all_lines(r);
  }
}

// dq -> aten.chunk (2, dim 1) of [1, 10, 3, 3] -> q per piece, each with its own quantization;
// or a split whose middle output nobody reads.
TEST(Fuse, SplitsBecomeOneQ8taSlicePerOutput) {
  {
    Builder b;
    b.input("xq", DType::Int8, {1, 10, 3, 3});
    b.dq("xq", "x", 0.2, 4);
    b.value("p", DType::Float32, {1, 5, 3, 3});
    b.value("s", DType::Float32, {1, 5, 3, 3});
    b.node("aten.chunk", {"x"}, {{"chunks", int64_t{2}}, {"dim", int64_t{1}}}, {"p", "s"});
    b.q("p", "pq", 0.2, 4);
    b.q("s", "sq", 0.4, -1);
    b.output("pq");
    b.output("sq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice", "q8ta_slice"})) << all_lines(r);
    for (size_t k = 0; k < 2; ++k) {
      const Node& n = b.g.nodes[k];
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
      EXPECT_EQ(arg_i(n, "dim"), 1);
      EXPECT_EQ(arg_i(n, "start"), k == 0 ? 0 : 5);
      EXPECT_EQ(arg_i(n, "step"), 1);
      EXPECT_EQ(arg_d(n, "input_scale"), 0.2);
      EXPECT_EQ(arg_d(n, "output_scale"), k == 0 ? 0.2 : 0.4);
    }
    EXPECT_EQ(b.g.nodes[1].outputs, (std::vector<std::string>{"sq"}));
    expect_quant(b.g.value("sq"), 0.4, -1, -128, 127);
    EXPECT_FALSE(b.g.has_value("x"));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.chunk -> q (node 0..2) into q8ta_slice 'pq' "
                         "(output 0 of 2: dim 1, 5 from index 0)"))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.chunk -> q (node 3) into q8ta_slice 'sq' "
                         "(output 1 of 2: dim 1, 5 from index 5)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b;
    b.input("xq", DType::Int8, {2, 7, 5});
    b.dq("xq", "x", 0.2, 4);
    b.value("s0", DType::Float32, {2, 2, 5});
    b.value("s1", DType::Float32, {2, 3, 5});
    b.value("s2", DType::Float32, {2, 2, 5});
    b.node("aten.split_with_sizes_copy", {"x"},
           {{"split_sizes", std::vector<int64_t>{2, 3, 2}}, {"dim", int64_t{-2}}},
           {"s0", "s1", "s2"});
    b.q("s2", "s2q", 0.2, 4);
    b.output("s2q");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice"})) << all_lines(r);
    EXPECT_EQ(arg_i(b.g.nodes[0], "start"), 5);
    EXPECT_FALSE(b.g.has_value("s0"));
    EXPECT_FALSE(b.g.has_value("s1"));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.split_with_sizes_copy -> q (node 0..2) into "
                         "q8ta_slice 's2q' (output 2 of 3: dim 1, 2 from index 5)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // slice_copy with a negative start and a step
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 9});
    b.dq("xq", "x", 0.2, 4);
    b.value("s", DType::Float32, {1, 4, 3});
    b.node("aten.slice_copy.Tensor", {"x"},
           {{"dim", int64_t{2}}, {"start", int64_t{-7}}, {"end", NoneArg{}}, {"step", int64_t{3}}},
           {"s"});
    b.q("s", "sq", 0.2, 4);
    b.output("sq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice"})) << all_lines(r);
    EXPECT_EQ(arg_i(b.g.nodes[0], "start"), 2);
    EXPECT_EQ(arg_i(b.g.nodes[0], "step"), 3);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.slice_copy.Tensor -> q (node 0..2) into "
                         "q8ta_slice 'sq' (output 0 of 1: dim 2, 3 from index 2, step 3)"))
        << all_lines(r);
  }
}

// x[:, :, 1:-1, 1:-1] between a dq and a q is two slice_copy nodes: one q8ta_slice per dim
// (the first into a new int8 value, copied), and slices along one dim compose into one.
TEST(Fuse, ChainsOfCutsBecomeOneQ8taSlicePerDim) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 9, 8});
  b.dq("xq", "x", 0.2, 4, -127, 127);
  auto slice = [&](const std::string& in, const std::string& out, int64_t dim, int64_t start,
                   int64_t end, int64_t step, std::vector<int64_t> shape) {
    b.value(out, DType::Float32, std::move(shape));
    b.node("aten.slice_copy.Tensor", {in},
           {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}}, {out});
  };
  slice("x", "h", 2, 1, -1, 1, {1, 4, 7, 8});
  slice("h", "w", 3, 1, -1, 1, {1, 4, 7, 6});
  slice("w", "w2", 3, 1, 6, 2, {1, 4, 7, 3});  // widths 2, 4, 6 of the input
  b.q("w2", "yq", 0.1, 0);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice", "q8ta_slice"})) << all_lines(r);
  const Node& rows = b.g.nodes[0];
  const Node& cols = b.g.nodes[1];
  EXPECT_EQ(rows.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(cols.inputs, rows.outputs);
  EXPECT_EQ(b.g.value(rows.outputs[0]).shape, (std::vector<int64_t>{1, 4, 7, 8}));
  EXPECT_EQ((std::vector<int64_t>{arg_i(rows, "dim"), arg_i(rows, "start"), arg_i(rows, "step")}),
            (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ((std::vector<int64_t>{arg_i(cols, "dim"), arg_i(cols, "start"), arg_i(cols, "step")}),
            (std::vector<int64_t>{3, 2, 2}));
  // The copy keeps the input's scale and zero point over the full range; the last requantizes.
  expect_quant(b.g.value(rows.outputs[0]), 0.2, 4, -128, 127);
  EXPECT_EQ(arg_d(cols, "output_scale"), 0.1);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.slice_copy.Tensor -> aten.slice_copy.Tensor -> "
                       "aten.slice_copy.Tensor -> q (node 0..2) into q8ta_slice 'w2_run0' "
                       "(output 0 of 1: dim 2, 7 from index 1)"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.slice_copy.Tensor -> aten.slice_copy.Tensor -> "
                       "aten.slice_copy.Tensor -> q (node 3..4) into q8ta_slice 'yq' "
                       "(output 0 of 1: dim 3, 3 from index 2, step 2)"))
      << all_lines(r);
  expect_valid(b.g);
}

// x[:, 0] (a ViT's class token: slice_copy, then a view dropping the 1) between a dq and a q
// with other parameters: the q8ta_slice requantizes into a new int8 value, a q8ta_view gives it
// the q's name and shape.
TEST(Fuse, SliceThenAViewDroppingTheOneBecomesQ8taSlice) {
  Builder b;
  b.input("xq", DType::Int8, {1, 5, 8});
  b.dq("xq", "x", 0.2, 4);
  b.value("s", DType::Float32, {1, 1, 8});
  b.node("aten.slice_copy.Tensor", {"x"},
         {{"dim", int64_t{1}}, {"start", int64_t{0}}, {"end", int64_t{1}}, {"step", int64_t{1}}},
         {"s"});
  b.value("v", DType::Float32, {1, 8});
  b.node("aten.view_copy", {"s"}, {{"size", std::vector<int64_t>{1, 8}}}, {"v"});
  b.q("v", "vq", 0.1, -2);
  b.output("vq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice", "q8ta_view"})) << all_lines(r);
  const Node& slice = b.g.nodes[0];
  const Node& view = b.g.nodes[1];
  EXPECT_EQ(slice.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(b.g.value(slice.outputs[0]).shape, (std::vector<int64_t>{1, 1, 8}));
  EXPECT_EQ(arg_d(slice, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(slice, "output_zero_point"), -2);
  EXPECT_EQ(view.inputs, slice.outputs);
  EXPECT_EQ(view.outputs, (std::vector<std::string>{"vq"}));
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.slice_copy.Tensor -> aten.view_copy -> q (node 0..2) "
                       "into q8ta_slice 'v_run0' (output 0 of 1: dim 1, 1 from index 0)"))
      << all_lines(r);
  expect_valid(b.g);

  // a view that moves data (not only 1s in front) is no part of it
  Builder m;
  m.input("xq", DType::Int8, {1, 4, 6});
  m.dq("xq", "x", 0.2, 4);
  m.value("s", DType::Float32, {1, 2, 6});
  m.node("aten.slice_copy.Tensor", {"x"},
         {{"dim", int64_t{1}}, {"start", int64_t{0}}, {"end", int64_t{2}}, {"step", int64_t{1}}},
         {"s"});
  m.value("v", DType::Float32, {1, 12});
  m.node("aten.view_copy", {"s"}, {{"size", std::vector<int64_t>{1, 12}}}, {"v"});
  m.q("v", "vq", 0.2, 4);
  m.output("vq");
  const PassReport none = fuse_and_lower(m.g);
  EXPECT_EQ(count_op(m.g, "q8ta_slice"), 0) << all_lines(none);
}

TEST(Fuse, SplitWithAnOutputNoQuantizeReadsIsNotFused) {
  Builder b;
  b.input("xq", DType::Int8, {1, 6, 2, 2});
  b.dq("xq", "x", 0.2, 4);
  b.value("p", DType::Float32, {1, 3, 2, 2});
  b.value("s", DType::Float32, {1, 3, 2, 2});
  b.node("aten.split_copy.Tensor", {"x"}, {{"split_size", int64_t{3}}, {"dim", int64_t{1}}},
         {"p", "s"});
  b.q("p", "pq", 0.2, 4);
  b.value("r", DType::Float32, {1, 3, 2, 2});
  b.node("aten.relu", {"s"}, {}, {"r"});
  b.output("pq");
  b.output("r");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(count_op(b.g, "q8ta_slice"), 0) << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.split_copy.Tensor -> ... (node 0..2) as "
                       "q8ta_slice: output 1: 's' feeds aten.relu (node 3), not "
                       "quantize_per_tensor"))
      << all_lines(r);
}

}  // namespace
