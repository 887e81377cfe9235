// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): q8ta_layer_norm,
// q8ta_layer_norm_dq, the float layer_norm and its quantized forms layer_norm_q and
// layer_norm_dual (compiler/ops/LayerNorm.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test/compiler/FuseTestUtil.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

const std::vector<int64_t> kShape = {2, 3, 10};

// The layer norm's inputs after `x`: weight and bias constants of 10 elements when `affine`.
std::vector<std::string> affine_inputs(Builder& b, bool affine) {
  if (!affine) return {};
  std::vector<float> w(10), bias(10);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = 0.5f + 0.1f * static_cast<float>(i);
    bias[i] = -0.2f + 0.05f * static_cast<float>(i);
  }
  b.constant("w", DType::Float32, {10}, f32_bytes(w));
  b.constant("b", DType::Float32, {10}, f32_bytes(bias));
  return {"w", "b"};
}

// xq [2, 3, 10] -> dq (0.05, 3) -> aten.layer_norm (normalized_shape `normalized`, eps 1e-12)
// [-> q (0.04, -2) -> yq].
Builder layer_norm_graph(bool quantized, bool affine = true,
                         std::vector<int64_t> normalized = {10}) {
  Builder b;
  b.input("xq", DType::Int8, kShape);
  b.dq("xq", "x", 0.05, 3);
  b.value("y", DType::Float32, kShape);
  std::vector<std::string> in = {"x"};
  for (const std::string& v : affine_inputs(b, affine)) in.push_back(v);
  b.node("aten.layer_norm", in, {{"normalized_shape", normalized}, {"eps", 1e-12}}, {"y"});
  if (quantized) {
    b.q("y", "yq", 0.04, -2);
    b.output("yq");
  } else {
    b.output("y");
  }
  return b;
}

// Followed by a quantize: q8ta_layer_norm writes the int8 output, reading the weight and bias
// constants as they are; alone: q8ta_layer_norm_dq writes the float one.
TEST(Fuse, LayerNormOverTheLastDimFuses) {
  {
    Builder b = layer_norm_graph(true);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_layer_norm"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "b"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(arg_d(n, "input_scale"), 0.05);
    EXPECT_EQ(arg_i(n, "input_zero_point"), 3);
    EXPECT_EQ(arg_d(n, "eps"), 1e-12);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.04);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -2);
    expect_quant(b.g.value("yq"), 0.04, -2, -128, 127);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.layer_norm -> q (node 0..2) into q8ta_layer_norm 'yq' "
                         "(rows of 10, eps 1e-12)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b = layer_norm_graph(false);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_layer_norm_dq"})) << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"y"}));
    EXPECT_EQ(b.g.value("y").dtype, DType::Float32);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.layer_norm (node 0..1) into q8ta_layer_norm_dq 'y' "
                         "(rows of 10, eps 1e-12)"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// A LayerNorm without weight and bias gets constants of ones and zeros.
TEST(Fuse, LayerNormWithoutAffineGetsOnesAndZeros) {
  Builder b = layer_norm_graph(true, false);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_layer_norm"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(floats_of(b.g.value(n.inputs[1])), std::vector<float>(10, 1.0f));
  EXPECT_EQ(floats_of(b.g.value(n.inputs[2])), std::vector<float>(10, 0.0f));
  expect_valid(b.g);
}

// A float32 input (no dequantize before it): the float op layer_norm, eps kept, ones / zeros for
// absent parameters.
TEST(Fuse, FloatLayerNormLowers) {
  for (bool affine : {true, false}) {
    Builder b;
    b.input("x", DType::Float32, kShape);
    b.value("y", DType::Float32, kShape);
    std::vector<std::string> in = {"x"};
    for (const std::string& v : affine_inputs(b, affine)) in.push_back(v);
    b.node("aten.layer_norm", in, {{"normalized_shape", std::vector<int64_t>{10}}, {"eps", 1e-6}},
           {"y"});
    b.output("y");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"layer_norm"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    ASSERT_EQ(n.inputs.size(), 3u);
    EXPECT_EQ(n.inputs[0], "x");
    EXPECT_EQ(arg_d(n, "eps"), 1e-6);
    if (!affine) EXPECT_EQ(floats_of(b.g.value(n.inputs[1])), std::vector<float>(10, 1.0f));
    expect_valid(b.g);
  }
}

// x [2, 3, 10] float32 -> aten.layer_norm (eps 1e-12) -> y [-> `clones` aten.clone] -> q (0.04,
// -2, range qmin..qmax) -> yq -> dq -> d (a graph output); with `float_reader` also
// s = aten.add.Tensor(float output, d) (a graph output), before the quantize when `add_first`.
Builder float_layer_norm_graph(bool float_reader, int clones = 0, bool add_first = false,
                               int64_t qmin = -128, int64_t qmax = 127) {
  Builder b;
  b.input("x", DType::Float32, kShape);
  b.value("y", DType::Float32, kShape);
  std::vector<std::string> in = {"x"};
  for (const std::string& v : affine_inputs(b, true)) in.push_back(v);
  b.node("aten.layer_norm", in, {{"normalized_shape", std::vector<int64_t>{10}}, {"eps", 1e-12}},
         {"y"});
  std::string y = "y";
  for (int k = 0; k < clones; ++k) {
    const std::string next = "y" + std::to_string(k + 1);
    b.value(next, DType::Float32, kShape);
    b.node("aten.clone", {y}, {}, {next});
    y = next;
  }
  const auto add = [&] {
    b.value("s", DType::Float32, kShape);
    b.node("aten.add.Tensor", {y, add_first ? y : "d"}, {}, {"s"});
    b.output("s");
  };
  if (float_reader && add_first) add();
  b.value("yq", DType::Int8, kShape);
  b.node(kQ, {y}, q_args(0.04, -2, qmin, qmax), {"yq"});
  b.dq("yq", "d", 0.04, -2, qmin, qmax);
  b.output("d");
  if (float_reader && !add_first) add();
  return b;
}

// A float32 layer norm whose output only a quantize reads: layer_norm_q writes the int8 output
// (the float32 one is gone); read by an add too: layer_norm_dual writes both, the add still
// reads the float32 one.
TEST(Fuse, FloatLayerNormQuantizedFuses) {
  {
    Builder b = float_layer_norm_graph(false);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"layer_norm_q", "q8ta_dequantize"}))
        << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "b"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(arg_d(n, "eps"), 1e-12);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.04);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -2);
    EXPECT_FALSE(b.g.has_value("y"));
    EXPECT_TRUE(has_line(r,
                         "fused aten.layer_norm -> q (node 0..1) into layer_norm_q 'yq' (rows of "
                         "10, eps 1e-12)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b = float_layer_norm_graph(true);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g).at(0), "layer_norm_dual") << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "b"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"y", "yq"}));
    EXPECT_EQ(arg_d(n, "output_scale"), 0.04);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -2);
    EXPECT_EQ(b.g.value("y").dtype, DType::Float32);
    EXPECT_EQ(b.g.nodes.size(), 3u) << all_lines(r);  // the dequantize and the add follow
    EXPECT_EQ(b.g.nodes[2].inputs.at(0), "y");
    EXPECT_TRUE(has_line(r,
                         "fused aten.layer_norm -> q (node 0..1) into layer_norm_dual 'y' (rows of "
                         "10, eps 1e-12; int8 'yq', float32 also read by node 3)"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// Clones (eval dropout) between the layer norm and its readers go with it: the fused node writes
// the last clone's output; a float output that is a graph output makes the dual form.
TEST(Fuse, FloatLayerNormThroughClonesAndAsGraphOutput) {
  {
    Builder b = float_layer_norm_graph(true, 2);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g).at(0), "layer_norm_dual") << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"y2", "yq"}));
    EXPECT_FALSE(b.g.has_value("y"));
    EXPECT_FALSE(b.g.has_value("y1"));
    EXPECT_TRUE(has_line(r,
                         "fused aten.layer_norm -> aten.clone -> aten.clone -> q (node 0..3) into "
                         "layer_norm_dual 'y2' (rows of 10, eps 1e-12; int8 'yq', float32 also "
                         "read by node 5)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b = float_layer_norm_graph(false, 1);
    b.output("y1");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g).at(0), "layer_norm_dual") << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"y1", "yq"}));
    EXPECT_TRUE(has_line(r,
                         "fused aten.layer_norm -> aten.clone -> q (node 0..2) into "
                         "layer_norm_dual 'y1' (rows of 10, eps 1e-12; int8 'yq', float32 also "
                         "read by the graph's outputs)"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// A quantize over less than the full int8 range, or a float reader before the quantize: the
// float op layer_norm and a separate q8ta_quantize, the report says why.
TEST(Fuse, FloatLayerNormQuantizedLimits) {
  {
    Builder b = float_layer_norm_graph(false, 0, false, -100, 100);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g),
              (std::vector<std::string>{"layer_norm", "q8ta_quantize", "q8ta_dequantize"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: aten.layer_norm -> q (node 0..1) as layer_norm_q: the "
                         "quantize's range -100..100 is not the full int8 range"))
        << all_lines(r);
  }
  {
    Builder b = float_layer_norm_graph(true, 0, true);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g).at(0), "layer_norm") << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: aten.layer_norm -> q (nodes 0, 2) as layer_norm_dual: node 1 "
                         "reads the float output before the quantize (node 2)"))
        << all_lines(r);
  }
}

// Over more than the last dim, or with a weight that is no constant, the layer norm stays a
// host op (the dequantize before it runs on the GPU); the report says why.
TEST(Fuse, LayerNormLimits) {
  {
    Builder b = layer_norm_graph(true, true, {3, 10});
    b.g.value("w").shape = {3, 10};  // the shape rule's normalized_shape (not read here)
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g),
              (std::vector<std::string>{"q8ta_dequantize", "aten.layer_norm", "q8ta_quantize"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.layer_norm -> q (node 0..2) as q8ta_layer_norm: "
                         "normalized_shape [3, 10] spans more than the last dim (only the last "
                         "dim is supported)"))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not lowered: node 1 (aten.layer_norm) as layer_norm: normalized_shape "
                         "[3, 10] spans more than the last dim (only the last dim is supported)"))
        << all_lines(r);
  }
  {
    Builder b;
    b.input("xq", DType::Int8, kShape);
    b.dq("xq", "x", 0.05, 3);
    b.input("w", DType::Float32, {10});
    b.value("y", DType::Float32, kShape);
    b.node("aten.layer_norm", {"x", "w"},
           {{"normalized_shape", std::vector<int64_t>{10}}, {"eps", 1e-5}}, {"y"});
    b.output("y");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_dequantize", "aten.layer_norm"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.layer_norm (node 0..1) as q8ta_layer_norm_dq: "
                         "weight 'w' is not a float32 constant of 10 elements"))
        << all_lines(r);
  }
}

}  // namespace
