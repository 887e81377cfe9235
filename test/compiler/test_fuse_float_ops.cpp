// fuse_and_lower of what a quantizer leaves float (FuseTestUtil.h graphs): the float32 element-wise
// ops and one-dim reductions lowered to runtime/ops/FloatElementwise's and Reduce's ops (the
// lowerings in compiler/ops/Elementwise.cpp, Reduce.cpp, Convert.cpp, Lut.cpp), their arguments,
// and what stays an edge op for the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// The sentence pooling and the attention mask of a BERT encoder, all float32:
//   m = rsub(mask, 1) * -10000 (mul.Scalar); h + pos (a [1, T, C] constant); h * mask[.., T, 1];
//   sum over dim 1; clamp(min 1e-9); div; vector norm over dim -1 keepdim; clamp_min; expand_as;
//   div.
Builder pooling_graph() {
  const int64_t T = 5, C = 6;
  Builder b;
  b.input("h", DType::Float32, {1, T, C});
  b.input("mask", DType::Float32, {1, T, 1});
  b.value("r", DType::Float32, {1, T, 1});
  b.node("aten.rsub.Scalar", {"mask"}, {{"other", 1.0}}, {"r"});  // 0
  b.value("m", DType::Float32, {1, T, 1});
  b.node("aten.mul.Scalar", {"r"}, {{"other", -10000.0}}, {"m"});  // 1
  b.constant("pos", DType::Float32, {1, T, C},
             float_bytes(std::vector<float>(static_cast<size_t>(T * C), 0.5f)));
  b.value("hp", DType::Float32, {1, T, C});
  b.node("aten.add.Tensor", {"h", "pos"}, {{"alpha", 2.0}}, {"hp"});  // 2
  b.value("hm", DType::Float32, {1, T, C});
  b.node("aten.mul.Tensor", {"hp", "mask"}, {}, {"hm"});  // 3
  b.value("s", DType::Float32, {1, C});
  b.node("aten.sum.dim_IntList", {"hm"}, {{"dim", std::vector<int64_t>{1}}}, {"s"});  // 4
  b.value("n", DType::Float32, {1, 1});
  b.node("aten.sum.dim_IntList", {"m"}, {{"dim", std::vector<int64_t>{1}}}, {"n"});  // 5
  b.value("nc", DType::Float32, {1, 1});
  b.node("aten.clamp", {"n"}, {{"min", 1e-9}}, {"nc"});  // 6
  b.value("e", DType::Float32, {1, C});
  b.node("aten.div.Tensor", {"s", "nc"}, {}, {"e"});  // 7
  b.value("l2", DType::Float32, {1, 1});
  b.node("aten.linalg_vector_norm", {"e"},
         {{"ord", 2.0}, {"dim", std::vector<int64_t>{-1}}, {"keepdim", true}}, {"l2"});  // 8
  b.value("l2c", DType::Float32, {1, 1});
  b.node("aten.clamp_min", {"l2"}, {{"min", 1e-12}}, {"l2c"});  // 9
  b.value("l2e", DType::Float32, {1, C});
  b.node("aten.expand_as", {"l2c", "e"}, {}, {"l2e"});  // 10
  b.value("y", DType::Float32, {1, C});
  b.node("aten.div.Tensor", {"e", "l2e"}, {}, {"y"});  // 11
  b.output("y");
  return b;
}

TEST(Fuse, FloatPoolingAndMaskLowerToFloatOps) {
  Builder b = pooling_graph();
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{
                           "float_affine_scalar", "float_affine_scalar", "float_add", "float_mul",
                           "float_sum", "float_sum", "float_clamp", "float_div",
                           "float_vector_norm", "float_clamp", "float_affine_scalar", "float_div"}))
      << all_lines(r);
  // rsub(x, 1): x * -1 + 1; mul.Scalar: x * -10000 + -0.0 (the sign of the zero kept).
  EXPECT_EQ(arg_d(g.nodes[0], "multiplier"), -1.0);
  EXPECT_EQ(arg_d(g.nodes[0], "addend"), 1.0);
  EXPECT_EQ(arg_d(g.nodes[1], "multiplier"), -10000.0);
  EXPECT_EQ(arg_d(g.nodes[1], "addend"), 0.0);
  EXPECT_TRUE(std::signbit(arg_d(g.nodes[1], "addend")));
  // The constant operand stays an input of the add; alpha goes along.
  EXPECT_EQ(g.nodes[2].inputs, (std::vector<std::string>{"h", "pos"}));
  EXPECT_EQ(arg_d(g.nodes[2], "alpha"), 2.0);
  EXPECT_EQ(g.nodes[3].inputs, (std::vector<std::string>{"hp", "mask"}));
  EXPECT_EQ(arg_i(g.nodes[4], "dim"), 1);
  EXPECT_EQ(arg_d(g.nodes[6], "min"), 1e-9);
  EXPECT_EQ(arg_d(g.nodes[6], "max"), kInf);
  EXPECT_EQ(arg_i(g.nodes[8], "dim"), 1);  // -1 of a rank-2 input
  EXPECT_EQ(arg_d(g.nodes[9], "min"), 1e-12);
  EXPECT_EQ(arg_d(g.nodes[9], "max"), kInf);
  // expand_as: a broadcast copy x * 1 + -0.0 of its first input alone.
  EXPECT_EQ(g.nodes[10].inputs, (std::vector<std::string>{"l2c"}));
  EXPECT_EQ(arg_d(g.nodes[10], "multiplier"), 1.0);
  EXPECT_TRUE(std::signbit(arg_d(g.nodes[10], "addend")));
  EXPECT_EQ(g.nodes[11].origin, "node 11 (aten.div.Tensor)");
  EXPECT_TRUE(has_line(r,
                       "lowered 12 node(s): 1 float_add, 3 float_affine_scalar, 2 float_clamp, 2 "
                       "float_div, 1 float_mul, 2 float_sum, 1 float_vector_norm"))
      << all_lines(r);
  expect_valid(g);
}

// A float32 aten.gelu (a dynamically quantized FFN's, between two q8da_linear) is float_gelu,
// approximate 'none' (or absent) 0 and 'tanh' 1; a rank-5 one stays an edge op; one between int8
// tensors is still q8ta_lut.
TEST(Fuse, FloatGeluLowersToFloatGelu) {
  Builder b;
  b.input("x", DType::Float32, {1, 16, 1536});
  const std::vector<std::string> forms = {"none", "", "tanh"};
  for (size_t k = 0; k < forms.size(); ++k) {
    const std::string y = "g" + std::to_string(k);
    b.value(y, DType::Float32, {1, 16, 1536});
    Args args;
    if (!forms[k].empty()) args["approximate"] = forms[k];
    b.node("aten.gelu", {"x"}, args, {y});  // 0..2
    b.output(y);
  }
  b.input("f", DType::Float32, {1, 2, 1, 2, 2});
  b.value("f2", DType::Float32, {1, 2, 1, 2, 2});
  b.node("aten.gelu", {"f"}, {}, {"f2"});  // 3: rank 5
  b.output("f2");
  b.input("xq", DType::Int8, {1, 4, 6});
  b.dq("xq", "xd", 0.05, 0);  // 4
  b.value("l", DType::Float32, {1, 4, 6});
  b.node("aten.gelu", {"xd"}, {}, {"l"});  // 5
  b.q("l", "lq", 0.04, -100);              // 6
  b.output("lq");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"float_gelu", "float_gelu", "float_gelu",
                                                 "aten.gelu", "q8ta_lut"}))
      << all_lines(r);
  for (size_t k = 0; k < forms.size(); ++k) {
    EXPECT_EQ(g.nodes[k].inputs, (std::vector<std::string>{"x"}));
    EXPECT_EQ(arg_i(g.nodes[k], "approximate"), forms[k] == "tanh" ? 1 : 0);
    EXPECT_EQ(g.nodes[k].origin, "node " + std::to_string(k) + " (aten.gelu)");
  }
  EXPECT_TRUE(has_line(r, "lowered 3 node(s): 3 float_gelu")) << all_lines(r);
  EXPECT_TRUE(has_line(r, "left 1 node(s) as edge ops: aten.gelu (node 3)")) << all_lines(r);
  expect_valid(g);
}

// Reductions over several dims or all of them, and a rank-5 add, stay edge ops (the host).
TEST(Fuse, FloatOpsTheKernelsDoNotTakeStayEdgeOps) {
  Builder b;
  b.input("x", DType::Float32, {2, 3, 4});
  b.value("s", DType::Float32, {3});
  b.node("aten.sum.dim_IntList", {"x"}, {{"dim", std::vector<int64_t>{0, 2}}}, {"s"});  // 0
  b.value("a", DType::Float32, {1});
  b.node("aten.sum.dim_IntList", {"x"}, {}, {"a"});  // 1: every dim
  b.input("f", DType::Float32, {1, 2, 1, 2, 2});
  b.value("f2", DType::Float32, {1, 2, 1, 2, 2});
  b.node("aten.add.Tensor", {"f", "f"}, {}, {"f2"});  // 2: rank 5
  b.output("s");
  b.output("a");
  b.output("f2");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"aten.sum.dim_IntList", "aten.sum.dim_IntList",
                                                   "aten.add.Tensor"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "left 3 node(s) as edge ops: aten.sum.dim_IntList (node 0), "
                       "aten.sum.dim_IntList (node 1), aten.add.Tensor (node 2)"))
      << all_lines(r);
}

}  // namespace
