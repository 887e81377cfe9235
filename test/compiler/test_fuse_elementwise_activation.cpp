// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): standalone int8 activations
// (compiler/ops/Elementwise.cpp): into an epilogue or a q8ta_clamp.
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

// ---- standalone int8 activations ---------------------------------------------------------------

// q -> dq -> hardtanh(0, 6) -> q with the conv's own scale and zero point: the conv writes hq,
// clamped to [q(0), q(6)] = [-128, -8]; the dq / hardtanh / q nodes disappear.
TEST(Fuse, StandaloneRelu6JoinsTheConvEpilogue) {
  Builder b = standalone_act_graph("aten.hardtanh", {{"min_val", 0.0}, {"max_val", 6.0}}, 0.05,
                                   -128, 0.05, -128);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d"})) << all_lines(r);
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"hq"}));
  EXPECT_EQ(activation_of(g.nodes[0]), (std::pair<int64_t, int64_t>{-128, -8}));
  EXPECT_FALSE(g.has_value("yq"));
  expect_quant(g.value("hq"), 0.05, -128, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.hardtanh -> q (node 4..6) into the epilogue of "
                       "q8ta_conv2d: it writes 'hq', activation range -128..127 -> -128..-8"))
      << all_lines(r);
  expect_valid(g);
}

// relu and clamp, and two activations in a row; a q whose range starts at the zero point.
TEST(Fuse, StandaloneActivationRanges) {
  using R = std::pair<int64_t, int64_t>;
  auto range = [](const std::string& act, Args args, int64_t zp, int64_t qmin = -128) {
    Builder b = standalone_act_graph(act, std::move(args), 0.1, zp, 0.1, zp, qmin);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d"})) << all_lines(r);
    expect_valid(b.g);
    return b.g.nodes.empty() ? R{} : activation_of(b.g.nodes[0]);
  };
  EXPECT_EQ(range("aten.relu", {}, 3), R(3, 127));
  EXPECT_EQ(range("aten.clamp", {{"min", -0.5}, {"max", 0.45}}, 3), R(-2, 7));  // 4.5 -> 4 (even)
  EXPECT_EQ(range("aten.relu", {}, 3, 3), R(3, 127));
  EXPECT_EQ(range("aten.hardtanh", {}, -5), R(-15, 5));  // defaults -1, 1
}

// The add writes 0.3 / 0; dq -> relu -> q with the same parameters narrows its range to [0, 127].
TEST(Fuse, StandaloneReluJoinsTheAddEpilogue) {
  Builder b = add_graph({1, 4, 3, 3}, {1, 4, 3, 3}, {1, 4, 3, 3});
  b.g.outputs.clear();
  b.dq("yq", "yf", 0.3, 0);
  b.value("rr", DType::Float32, {1, 4, 3, 3});
  b.node("aten.relu", {"yf"}, {}, {"rr"});
  b.q("rr", "rq", 0.3, 0);
  b.output("rq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_add"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"rq"}));
  EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{0, 127}));
  expect_valid(b.g);
}

// What keeps a standalone activation out of the epilogue, each with its report line.
TEST(Fuse, StandaloneActivationThatCannotJoinTheEpilogue) {
  {  // the q requantizes
    Builder b = standalone_act_graph("aten.relu", {}, 0.05, -128, 0.1, -128);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.relu -> q (node 4..6) as the epilogue of "
                         "q8ta_conv2d: the q (scale 0.1 zero_point -128 range -128..127) "
                         "requantizes (the dq is scale 0.05 zero_point -128 range -128..127)"))
        << all_lines(r);
  }
  {  // the dq reads the conv's output with other parameters
    Builder b = standalone_act_graph("aten.relu", {}, 0.1, 0, 0.1, 0, -128, -128);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.relu -> q (node 4..6) as the epilogue of "
                         "q8ta_conv2d: the dq (scale 0.1 zero_point 0 range -128..127) reads "
                         "'yq' with other parameters than it was written with (scale 0.1 "
                         "zero_point -128 range -128..127)"))
        << all_lines(r);
  }
  {  // the conv output is also a graph output
    Builder b = standalone_act_graph("aten.relu", {}, 0.05, -128, 0.05, -128);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.relu -> q (node 4..6) as the epilogue of "
                         "q8ta_conv2d: 'yq' is a graph output"))
        << all_lines(r);
  }
}

// A standalone activation that cannot join an epilogue becomes q8ta_clamp: requantizing, with
// the range for which its arithmetic equals the chain on all 256 int8 inputs.
TEST(Fuse, StandaloneActivationBecomesQ8taClamp) {
  {  // the q requantizes: after the conv's own epilogue
    Builder b = standalone_act_graph("aten.hardtanh", {{"min_val", 0.0}, {"max_val", 6.0}}, 0.05,
                                     -128, 0.1, -20);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_clamp"})) << all_lines(r);
    const Node& n = b.g.nodes[1];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"hq"}));
    EXPECT_EQ(arg_d(n, "input_scale"), 0.05);
    EXPECT_EQ(arg_i(n, "input_zero_point"), -128);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -20);
    // The conv writes 0 .. 12.75: 0 -> -20, 6 -> 40.
    EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-20, 40}));
    expect_quant(b.g.value("hq"), 0.1, -20, -128, 127);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.hardtanh -> q (node 4..6) into q8ta_clamp 'hq' "
                         "(activation range -20..40)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // nothing fused writes the dequantized value (a graph input), relu then clamp
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 2, 2});
    b.dq("xq", "x", 0.1, 0);
    b.value("rr", DType::Float32, {1, 4, 2, 2});
    b.node("aten.relu", {"x"}, {}, {"rr"});
    b.value("cc", DType::Float32, {1, 4, 2, 2});
    b.node("aten.clamp", {"rr"}, {{"max", 2.0}}, {"cc"});
    b.q("cc", "rq", 0.05, 3);
    b.output("rq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_clamp"})) << all_lines(r);
    EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{3, 43}));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.relu -> aten.clamp -> q (node 0..3) into "
                         "q8ta_clamp 'rq' (activation range 3..43)"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

}  // namespace
