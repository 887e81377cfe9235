// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): smooth activations as
// q8ta_lut tables (compiler/ops/Lut.cpp), each table checked against the test's own reference
// (test/reference/LutReference.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "test/compiler/FuseTestUtil.h"
#include "test/reference/LutReference.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// ---- smooth activations by table (q8ta_lut) ----------------------------------------------------

// xq [1, 3, 5, 7] -> dq (in_s, in_zp) -> `op` (`args`) [-> relu] -> q (out_s, out_zp, range)
// -> yq.
Builder lut_graph(const std::string& op, Args args, double in_s, int64_t in_zp, double out_s,
                  int64_t out_zp, bool relu = false, int64_t qmin = -128, int64_t qmax = 127) {
  Builder b;
  const std::vector<int64_t> shape = {1, 3, 5, 7};
  b.input("xq", DType::Int8, shape);
  b.dq("xq", "x", in_s, in_zp);  // 0
  b.value("a", DType::Float32, shape);
  b.node(op, {"x"}, std::move(args), {"a"});  // 1
  std::string last = "a";
  if (relu) {
    b.value("r", DType::Float32, shape);
    b.node("aten.relu", {"a"}, {}, {"r"});  // 2
    last = "r";
  }
  b.value("yq", DType::Int8, shape);
  b.node(kQ, {last}, q_args(out_s, out_zp, qmin, qmax), {"yq"});
  b.output("yq");
  return b;
}

// The int8 table of the fused graph's constant `name`.
std::vector<int8_t> table_of(const Graph& g, const std::string& name) {
  const Value& v = g.value(name);
  EXPECT_EQ(v.dtype, DType::Int8);
  EXPECT_EQ(v.shape, (std::vector<int64_t>{256}));
  EXPECT_TRUE(v.data.has_value()) << name;
  return v.data ? std::vector<int8_t>(v.data->begin(), v.data->end()) : std::vector<int8_t>{};
}

// Every table entry the compiler wrote equals the test's own reference (LutReference.h).
void expect_table(const std::vector<int8_t>& got, const std::array<int8_t, 256>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), 256u) << what;
  for (int v = -128; v <= 127; ++v) {
    EXPECT_EQ(got[static_cast<size_t>(v + 128)], want[static_cast<size_t>(v + 128)])
        << what << ": int8 input " << v;
  }
}

struct TableOp {
  const char* op;
  Args args;
  vkd::testing::RefActivation f;
  double in_s;
  int64_t in_zp;
  double out_s;
  int64_t out_zp;
};

// Each smooth activation between int8 tensors becomes one q8ta_lut whose 256-entry table is the
// chain dq -> op -> q, entry for entry (computed independently by the test), with the
// quantization of both ends; the report names the table and the outputs' range.
TEST(Fuse, SmoothActivationsBecomeQ8taLutWithTheChainsTable) {
  using vkd::testing::RefAct;
  const TableOp cases[] = {
      {"aten.hardswish", {}, {RefAct::Hardswish, "hardswish"}, 0.03225, -4, 0.0186, -108},
      {"aten.hardsigmoid", {}, {RefAct::Hardsigmoid, "hardsigmoid"}, 0.00697, 3, 1.0 / 256, -128},
      {"aten.sigmoid", {}, {RefAct::Sigmoid, "sigmoid"}, 0.05, 0, 1.0 / 256, -128},
      {"aten.tanh", {}, {RefAct::Tanh, "tanh"}, 0.031, 5, 2.0 / 256, 0},
      {"aten.silu", {}, {RefAct::Silu, "silu"}, 0.06, -10, 0.03, -100},
      {"aten.gelu", {}, {RefAct::GeluErf, "gelu"}, 0.05, 7, 0.04, -90},
      {"aten.gelu",
       {{"approximate", std::string("tanh")}},
       {RefAct::GeluTanh, "gelu_tanh"},
       0.05,
       7,
       0.04,
       -90},
      {"aten.elu",
       {{"alpha", 0.5}, {"scale", 1.25}, {"input_scale", 0.75}},
       {RefAct::Elu, "elu", 0.5, 1.25, 0.75},
       0.04,
       20,
       0.03,
       10},
      {"aten.leaky_relu",
       {{"negative_slope", 0.2}},
       {RefAct::LeakyRelu, "leaky_relu", 0.2},
       0.05,
       -3,
       0.04,
       2},
  };
  for (const TableOp& t : cases) {
    Builder b = lut_graph(t.op, t.args, t.in_s, t.in_zp, t.out_s, t.out_zp);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_lut"})) << t.f.name << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "yq_table"})) << t.f.name;
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"})) << t.f.name;
    EXPECT_EQ(arg_d(n, "input_scale"), t.in_s);
    EXPECT_EQ(arg_i(n, "input_zero_point"), t.in_zp);
    EXPECT_EQ(arg_d(n, "output_scale"), t.out_s);
    EXPECT_EQ(arg_i(n, "output_zero_point"), t.out_zp);
    const auto want =
        vkd::testing::ref_lut_table(t.f, {static_cast<float>(t.in_s), static_cast<int>(t.in_zp)},
                                    {static_cast<float>(t.out_s), static_cast<int>(t.out_zp)});
    const std::vector<int8_t> got = table_of(b.g, "yq_table");
    expect_table(got, want, t.f.name);
    const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
    EXPECT_TRUE(has_line(r, std::string("fused dq -> ") + t.op +
                                " -> q (node 0..2) into "
                                "q8ta_lut 'yq' (table 'yq_table', outputs " +
                                std::to_string(*lo) + ".." + std::to_string(*hi) + ")"))
        << all_lines(r);
    expect_quant(b.g.value("yq"), t.out_s, t.out_zp, -128, 127);
    EXPECT_EQ(b.g.value("xq").dtype, DType::Int8x4);
    expect_valid(b.g);
  }
}

// A relu after the activation and a narrowed quantize range are part of the table: relu then
// quantize = max(quantize, the zero point), then the range's clamp.
TEST(Fuse, LutTableIncludesATrailingReluAndTheQuantizeRange) {
  Builder b = lut_graph("aten.silu", {}, 0.06, -10, 0.03, -100, true, -110, 100);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_lut"})) << all_lines(r);
  auto want = vkd::testing::ref_lut_table({vkd::testing::RefAct::Silu, "silu"}, {0.06f, -10},
                                          {0.03f, -100, -110, 100});
  for (int8_t& v : want) v = std::max<int8_t>(v, -100);
  expect_table(table_of(b.g, "yq_table"), want, "silu -> relu");
  expect_quant(b.g.value("yq"), 0.03, -100, -110, 100);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.silu -> aten.relu -> q (node 0..3) into q8ta_lut "
                       "'yq' (table 'yq_table', outputs -100.." +
                           std::to_string(*std::max_element(want.begin(), want.end())) + ")"))
      << all_lines(r);
  expect_valid(b.g);
}

// MobileNetV3's pattern: a conv's requantized output, dequantized into hardswish and quantized
// again: the conv writes yq, q8ta_lut reads it.
TEST(Fuse, HardswishAfterAConvReadsTheConvsInt8Output) {
  Builder b = standalone_act_graph("aten.hardswish", {}, 0.05, -20, 0.04, -100);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_lut"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[1].inputs, (std::vector<std::string>{"yq", "hq_table"}));
  expect_table(table_of(b.g, "hq_table"),
               vkd::testing::ref_lut_table({vkd::testing::RefAct::Hardswish, "hardswish"},
                                           {0.05f, -20}, {0.04f, -100}),
               "hardswish");
  expect_valid(b.g);
}

// Without a quantize after it the activation is a float op: no backend op, left to the host.
TEST(Fuse, FloatSmoothActivationIsNotFused) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 5, 7});
  b.dq("xq", "x", 0.05, 0);
  b.value("g", DType::Float32, {1, 3, 5, 7});
  b.node("aten.silu", {"x"}, {}, {"g"});  // (a float aten.gelu is float_gelu: test_fuse_float_ops)
  b.output("g");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_dequantize", "aten.silu"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.silu (node 0..1) as q8ta_lut: 'g' is a graph "
                       "output, not quantized (q8ta_lut has int8 output only)"))
      << all_lines(r);
}

}  // namespace
