// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): q8ta_add / q8ta_mul /
// q8ta_mul_scalar (compiler/ops/Elementwise.cpp), broadcasting.
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

// ---- add --------------------------------------------------------------------------------------

TEST(Fuse, AddReluQuantized) {
  Builder b;
  b.input("aq", DType::Int8, {1, 4, 2, 2});
  b.input("bq", DType::Int8, {1, 4, 2, 2});
  b.dq("aq", "a", 0.1, 1);
  b.dq("bq", "bf", 0.3, -2);
  b.value("s", DType::Float32, {1, 4, 2, 2});
  b.node("aten.add.Tensor", {"a", "bf"}, {{"alpha", int64_t{1}}}, {"s"});
  b.value("r", DType::Float32, {1, 4, 2, 2});
  b.node("aten.relu", {"s"}, {}, {"r"});
  b.q("r", "yq", 0.2, 3);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_add");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"aq", "bq"}));
  EXPECT_EQ(arg_d(n, "a_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "a_zero_point"), 1);
  EXPECT_EQ(arg_d(n, "b_scale"), 0.3);
  EXPECT_EQ(arg_i(n, "b_zero_point"), -2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(arg_i(n, "activation_min"), 3);
  EXPECT_EQ(arg_i(n, "activation_max"), 127);
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"aq", "bq", "yq"}));
  expect_quant(g.value("aq"), 0.1, 1, -128, 127);
  expect_quant(g.value("bq"), 0.3, -2, -128, 127);
  EXPECT_EQ(r.lines.at(0),
            "fused dq, dq -> aten.add.Tensor -> aten.relu -> q (node 0..4) into "
            "q8ta_add 'yq' (activation relu)");
  expect_valid(g);
}

// The fused node goes where its last matched node was: here b is only quantized after a's dq.
TEST(Fuse, AddIsPlacedAfterItsLastInput) {
  Builder b;
  b.input("aq", DType::Int8, {1, 4, 2, 2});
  b.input("f", DType::Float32, {1, 4, 2, 2});
  b.dq("aq", "a", 0.1, 0);   // 0
  b.q("f", "bq", 0.1, 0);    // 1
  b.dq("bq", "bf", 0.1, 0);  // 2
  b.value("s", DType::Float32, {1, 4, 2, 2});
  b.node("aten.add.Tensor", {"a", "bf"}, {}, {"s"});  // 3
  b.q("s", "yq", 0.2, 0);                             // 4
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_quantize", "q8ta_add"})) << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq -> aten.add.Tensor -> q (nodes 0, 2..4) into q8ta_add "
                       "'yq' (activation none)"))
      << all_lines(r);
  expect_valid(b.g);
}

TEST(Fuse, AddHalfMatches) {
  {  // one side is a float graph input
    Builder b;
    b.input("aq", DType::Int8, {1, 4, 2, 2});
    b.input("bf", DType::Float32, {1, 4, 2, 2});
    b.dq("aq", "a", 0.1, 0);
    b.value("s", DType::Float32, {1, 4, 2, 2});
    b.node("aten.add.Tensor", {"a", "bf"}, {}, {"s"});
    b.q("s", "yq", 0.2, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.add.Tensor -> q (node 0..2) as q8ta_add: "
                         "'bf' is not dequantized (a graph input)"))
        << all_lines(r);
    // The float add left over runs as float_add between the lowered dq and q.
    EXPECT_EQ(ops_of(b.g),
              (std::vector<std::string>{"q8ta_dequantize", "float_add", "q8ta_quantize"}));
    expect_valid(b.g);
  }
  {  // float output: q8ta_add has no float-output variant
    Builder b;
    b.input("aq", DType::Int8, {1, 4, 2, 2});
    b.input("bq", DType::Int8, {1, 4, 2, 2});
    b.dq("aq", "a", 0.1, 0);
    b.dq("bq", "bf", 0.1, 0);
    b.value("s", DType::Float32, {1, 4, 2, 2});
    b.node("aten.add.Tensor", {"a", "bf"}, {}, {"s"});
    b.output("s");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.add.Tensor (node 0..2) as q8ta_add: 's' "
                         "is a graph output, not quantized (q8ta_add has no float-output "
                         "variant)"))
        << all_lines(r);
    EXPECT_EQ(count_op(b.g, "float_add"), 1);
  }
  {  // alpha != 1
    Builder b;
    b.input("aq", DType::Int8, {4});
    b.input("bq", DType::Int8, {4});
    b.dq("aq", "a", 0.1, 0);
    b.dq("bq", "bf", 0.1, 0);
    b.value("s", DType::Float32, {4});
    b.node("aten.add.Tensor", {"a", "bf"}, {{"alpha", 2.0}}, {"s"});
    b.q("s", "yq", 0.2, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.add.Tensor -> q (node 0..3) as q8ta_add: "
                         "alpha is not 1"))
        << all_lines(r);
  }
}

// ---- q8ta_add broadcasting ----------------------------------------------------------------------

TEST(Fuse, AddBroadcastsAChannelOrScalarOperandInEitherPosition) {
  for (const std::vector<int64_t>& small :
       {std::vector<int64_t>{1, 4, 1, 1}, {2, 4, 1, 1}, {1, 1, 1, 1}}) {
    for (bool small_first : {false, true}) {
      const std::vector<int64_t> big = {2, 4, 3, 3};
      Builder b = small_first ? add_graph(small, big, big) : add_graph(big, small, big);
      const PassReport r = fuse_and_lower(b.g);
      EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_add"})) << all_lines(r);
      expect_valid(b.g);
    }
  }
  Builder b = add_graph({1, 4, 3, 3}, {1, 4, 1, 3}, {1, 4, 3, 3});  // [1, 4, 1, 3] is neither form
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq, dq -> aten.add.Tensor -> q (node 0..3) as q8ta_add: "
                       "broadcasting add ([1, 4, 3, 3] + [1, 4, 1, 3]; q8ta_add broadcasts "
                       "only a 4-D [N or 1, C, 1, 1] or [1, 1, 1, 1] operand)"))
      << all_lines(r);
}

// ---- mul ----------------------------------------------------------------------------------------

// Squeeze-excite: dq(scale [N or 1, C, 1, 1]) * dq(x) -> q, the broadcast operand in either
// position, as q8ta_add broadcasts; other broadcasts are reported.
TEST(Fuse, MulOfTwoInt8TensorsBecomesQ8taMul) {
  for (const std::vector<int64_t>& small :
       {std::vector<int64_t>{1, 4, 1, 1}, {2, 4, 1, 1}, {1, 1, 1, 1}, {2, 4, 3, 3}}) {
    for (bool small_first : {false, true}) {
      const std::vector<int64_t> big = {2, 4, 3, 3};
      Builder b = small_first ? add_graph(small, big, big, "aten.mul.Tensor")
                              : add_graph(big, small, big, "aten.mul.Tensor");
      const PassReport r = fuse_and_lower(b.g);
      ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul"})) << all_lines(r);
      const Node& n = b.g.nodes[0];
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"aq", "bq"}));
      EXPECT_EQ(arg_d(n, "a_scale"), 0.1);
      EXPECT_EQ(arg_i(n, "a_zero_point"), 0);
      EXPECT_EQ(arg_d(n, "b_scale"), 0.2);
      EXPECT_EQ(arg_i(n, "b_zero_point"), 1);
      EXPECT_EQ(arg_d(n, "output_scale"), 0.3);
      EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
      EXPECT_TRUE(has_line(r,
                           "fused dq, dq -> aten.mul.Tensor -> q (node 0..3) into q8ta_mul "
                           "'yq' (activation none)"))
          << all_lines(r);
      expect_valid(b.g);
    }
  }
  Builder b = add_graph({1, 4, 3, 3}, {1, 4, 1, 3}, {1, 4, 3, 3}, "aten.mul.Tensor");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq, dq -> aten.mul.Tensor -> q (node 0..3) as q8ta_mul: "
                       "broadcasting mul ([1, 4, 3, 3] * [1, 4, 1, 3]; q8ta_mul broadcasts "
                       "only a 4-D [N or 1, C, 1, 1] or [1, 1, 1, 1] operand)"))
      << all_lines(r);
}

// A relu / hardtanh after the mul is its epilogue's range, like q8ta_add's; a float mul output
// is reported (no float-output variant).
TEST(Fuse, MulFusesItsActivationAndNeedsAQuantizedOutput) {
  {
    Builder b = add_graph({1, 4, 3, 3}, {1, 4, 1, 1}, {1, 4, 3, 3}, "aten.mul.Tensor");
    b.g.nodes.pop_back();  // the q: hardtanh(0, 6) first, then q (0.05, -100)
    b.g.remove_value("yq");
    b.value("h", DType::Float32, {1, 4, 3, 3});
    b.node("aten.hardtanh", {"s"}, {{"min_val", 0.0}, {"max_val", 6.0}}, {"h"});
    b.q("h", "yq", 0.05, -100);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul"})) << all_lines(r);
    // 0 -> -100, 6 / 0.05 = 120 -> 20
    EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{-100, 20}));
    EXPECT_TRUE(has_line(r,
                         "fused dq, dq -> aten.mul.Tensor -> aten.hardtanh -> q (node 0..4) "
                         "into q8ta_mul 'yq' (activation hardtanh(0, 6))"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b = add_graph({1, 4, 3, 3}, {1, 4, 3, 3}, {1, 4, 3, 3}, "aten.mul.Tensor");
    b.g.nodes.pop_back();
    b.g.remove_value("yq");
    b.g.outputs = {"s"};
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.mul.Tensor (node 0..2) as q8ta_mul: 's' is "
                         "a graph output, not quantized (q8ta_mul has no float-output "
                         "variant)"))
        << all_lines(r);
  }
}

// dq -> mul by a number (aten.mul.Scalar), by a float32 one-element constant, or by an int8
// one-element constant behind its dequantize (FX's quantized buffer) [-> relu] -> q becomes
// q8ta_mul_scalar: the float32 scalar as the reference multiplies by it, the range from the
// chain over all 256 inputs (relu after a negative scalar keeps the inputs below the zero point).
TEST(Fuse, MulByAScalarBecomesQ8taMulScalar) {
  {
    Builder b =
        unary_graph("aten.mul.Scalar", {1, 4, 3, 3}, {{"other", 0.5}}, {1, 4, 3, 3}, 0.1, 2);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul_scalar"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(arg_d(n, "scalar"), 0.5);
    EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "output_zero_point"), 2);
    // (q - 2) * 0.5 + 2 over -128..127: -63..64.
    EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-63, 64}));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.mul.Scalar -> q (node 0..2) into q8ta_mul_scalar "
                         "'yq' (scalar 0.5, activation range -63..64)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // float32 constant [1] as the first operand, then relu
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 3, 3});
    b.dq("xq", "x", 0.1, 0);
    b.constant("k", DType::Float32, {1}, f32_bytes({-2.0f}));
    b.value("m", DType::Float32, {1, 4, 3, 3});
    b.node("aten.mul.Tensor", {"k", "x"}, {}, {"m"});
    b.value("r", DType::Float32, {1, 4, 3, 3});
    b.node("aten.relu", {"m"}, {}, {"r"});
    b.q("r", "yq", 0.2, -128);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul_scalar"})) << all_lines(r);
    EXPECT_EQ(arg_d(b.g.nodes[0], "scalar"), -2.0);
    EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"xq"}));
    // relu(-0.2 q) / 0.2 - 128: q = -128 gives 128 - 128 = 0; q >= 0 gives -128.
    EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{-128, 0}));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.mul.Tensor -> aten.relu -> q (node 0..3) into "
                         "q8ta_mul_scalar 'yq' (scalar -2, activation range -128..0)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // int8 constant behind a dequantize: scalar = (100 - (-128)) * 0.0025 = 0.57
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 3, 3});
    b.constant("kq", DType::Int8, {1}, {100});
    b.dq("kq", "k", 0.0025, -128);
    b.dq("xq", "x", 0.1, 0);
    b.value("m", DType::Float32, {1, 4, 3, 3});
    b.node("aten.mul.Tensor", {"x", "k"}, {}, {"m"});
    b.q("m", "yq", 0.1, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul_scalar"})) << all_lines(r);
    EXPECT_EQ(arg_d(b.g.nodes[0], "scalar"), static_cast<double>(228.0f * 0.0025f));
    EXPECT_FALSE(b.g.has_value("kq"));
    EXPECT_TRUE(has_line(r, "folded 1 weight dequantize node(s) (node 0)")) << all_lines(r);
    expect_valid(b.g);
  }
  {  // a scalar of higher rank than x broadcasts it: not this kernel
    Builder b;
    b.input("xq", DType::Int8, {4, 3});
    b.dq("xq", "x", 0.1, 0);
    b.constant("k", DType::Float32, {1, 1, 1}, f32_bytes({3.0f}));
    b.value("m", DType::Float32, {1, 4, 3});
    b.node("aten.mul.Tensor", {"x", "k"}, {}, {"m"});
    b.q("m", "yq", 0.1, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.mul.Tensor -> q (node 0..2) as "
                         "q8ta_mul_scalar: the scalar 'k' broadcasts [4, 3] to [1, 4, 3]"))
        << all_lines(r);
  }
  {  // a per-channel float constant is no scalar and no int8 operand
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 3, 3});
    b.dq("xq", "x", 0.1, 0);
    b.constant("k", DType::Float32, {1, 4, 1, 1}, f32_bytes({1, 2, 3, 4}));
    b.value("m", DType::Float32, {1, 4, 3, 3});
    b.node("aten.mul.Tensor", {"x", "k"}, {}, {"m"});
    b.q("m", "yq", 0.1, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.mul.Tensor -> q (node 0..2) as q8ta_mul: 'k' "
                         "is not dequantized (a constant)"))
        << all_lines(r);
  }
}

}  // namespace
