// Layout propagation, identity folding and blob emission on small lowered graphs. Conversion
// counts are exact.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/Emit.h"
#include "compiler/Fold.h"
#include "compiler/LayoutPropagation.h"
#include "core/Error.h"
#include "serialization/Deserializer.h"

namespace {

using namespace vkd::compiler;
using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;

const std::vector<int64_t> kShape = {1, 8, 6, 10};

Value tensor(const std::string& name, DType dtype, std::vector<int64_t> shape = kShape) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  if (dtype == DType::Int8x4) v.quant = QuantInfo{0.1, 2, -128, 127};
  return v;
}

Value constant(const std::string& name, DType dtype, std::vector<int64_t> shape) {
  Value v = tensor(name, dtype, shape);
  v.quant.reset();
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  v.data = std::vector<uint8_t>(static_cast<size_t>(n) * (dtype == DType::Int8 ? 1 : 4), 0);
  return v;
}

Node node(const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
          Args args = {}) {
  static int counter = 0;
  return {op, std::move(in), std::move(args), std::move(out),
          "node " + std::to_string(counter++) + " (" + op + ")"};
}

Args quant_args() {
  return {{"scale", 0.1},
          {"zero_point", int64_t{2}},
          {"quant_min", int64_t{-128}},
          {"quant_max", int64_t{127}}};
}

// Adds conv/linear weights (schema-only ops: their kernels come later, layouts work now).
std::vector<std::string> weights(Graph& g, const std::string& prefix, int64_t out_ch,
                                 std::vector<int64_t> weight_shape) {
  g.add_value(constant(prefix + "_w", DType::Int8, weight_shape));
  g.add_value(constant(prefix + "_ws", DType::Float32, {out_ch}));
  g.add_value(constant(prefix + "_b", DType::Float32, {out_ch}));
  return {prefix + "_w", prefix + "_ws", prefix + "_b"};
}

Node conv(Graph& g, const std::string& in, const std::string& out) {
  auto w = weights(g, out, 8, {8, 8, 1, 1});
  Args a = {{"input_scale", 0.1},
            {"input_zero_point", int64_t{2}},
            {"stride", std::vector<int64_t>{1, 1}},
            {"padding", std::vector<int64_t>{0, 0}},
            {"dilation", std::vector<int64_t>{1, 1}},
            {"groups", int64_t{1}},
            {"output_scale", 0.1},
            {"output_zero_point", int64_t{2}},
            {"activation_min", int64_t{-128}},
            {"activation_max", int64_t{127}}};
  return node("q8ta_conv2d", {in, w[0], w[1], w[2]}, {out}, a);
}

Node linear(Graph& g, const std::string& in, const std::string& out) {
  auto w = weights(g, out, 10, {10, 10});
  Args a = {{"input_scale", 0.1},
            {"input_zero_point", int64_t{2}},
            {"output_scale", 0.1},
            {"output_zero_point", int64_t{2}},
            {"activation_min", int64_t{-128}},
            {"activation_max", int64_t{127}}};
  return node("q8ta_linear", {in, w[0], w[1], w[2]}, {out}, a);
}

size_t count_ops(const Graph& g, const std::string& op) {
  return static_cast<size_t>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op == op; }));
}

MemoryLayout layout_of(const Graph& g, const std::string& v) { return *g.value(v).layout; }

TEST(Layouts, QuantizedChainThroughCloneNeedsNoConversion) {
  Graph g;
  g.add_value(tensor("x", DType::Float32));
  g.add_value(tensor("q", DType::Int8x4));
  g.add_value(tensor("c", DType::Int8x4));
  g.add_value(tensor("y", DType::Float32));
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes = {node("q8ta_quantize", {"x"}, {"q"}, quant_args()), node("identity", {"q"}, {"c"}),
             node("q8ta_dequantize", {"c"}, {"y"}, quant_args())};
  const PassReport layouts = propagate_layouts(g, {});
  EXPECT_EQ(count_ops(g, "q8ta_convert"), 0u);
  EXPECT_EQ(layout_of(g, "q"), MemoryLayout::PackedInt8_4W4C);  // the quantize's preference
  EXPECT_EQ(layout_of(g, "c"), layout_of(g, "q"));
  const PassReport fold = fold_identities(g);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[1].inputs[0], "q");
  EXPECT_FALSE(g.has_value("c"));
  ASSERT_EQ(fold.lines.size(), 1u);
  EXPECT_NE(fold.lines[0].find("folded node"), std::string::npos) << fold.lines[0];
}

TEST(Layouts, TwoConsumersWithDifferentNeedsGetExactlyOneConversion) {
  Graph g;
  g.add_value(tensor("x", DType::Float32, {1, 8, 1, 10}));
  g.add_value(tensor("q", DType::Int8x4, {1, 8, 1, 10}));
  g.add_value(tensor("a", DType::Int8x4, {1, 8, 1, 10}));
  g.add_value(tensor("b", DType::Int8x4, {1, 8, 1, 10}));
  g.inputs = {"x"};
  g.outputs = {"a", "b"};
  g.nodes.push_back(node("q8ta_quantize", {"x"}, {"q"}, quant_args()));
  g.nodes.push_back(linear(g, "q", "a"));  // reads 4H4W only
  g.nodes.push_back(conv(g, "q", "b"));    // reads 4W4C or 4C1W
  const PassReport r = propagate_layouts(g, {});
  // 4W4C and 4H4W each satisfy two of three; the quantize's preference (4W4C) breaks the tie,
  // so the linear gets the one conversion.
  EXPECT_EQ(layout_of(g, "q"), MemoryLayout::PackedInt8_4W4C);
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_NE(r.lines[0].find("-> buffer 4H4W for node"), std::string::npos) << r.lines[0];
  EXPECT_EQ(count_ops(g, "q8ta_convert"), 1u);
  EXPECT_EQ(g.nodes[1].op, "q8ta_convert");  // inserted right before the linear
  EXPECT_EQ(g.nodes[2].op, "q8ta_linear");
  EXPECT_EQ(layout_of(g, g.nodes[2].inputs[0]), MemoryLayout::PackedInt8_4H4W);
}

TEST(Layouts, ConsumersThatAgreeShareOneConversion) {
  Graph g;
  g.add_value(tensor("x", DType::Float32, {1, 1, 10, 10}));
  g.add_value(tensor("q", DType::Int8x4, {1, 1, 10, 10}));
  for (const char* n : {"a", "b", "c"}) g.add_value(tensor(n, DType::Int8x4, {1, 1, 10, 10}));
  g.inputs = {"x"};
  g.outputs = {"a", "b", "c"};
  g.nodes.push_back(node("q8ta_quantize", {"x"}, {"q"}, quant_args()));
  g.nodes.push_back(linear(g, "q", "a"));
  g.nodes.push_back(linear(g, "q", "b"));
  g.nodes.push_back(node("q8ta_convert", {"q"}, {"c"}, {{"zero_point", int64_t{2}}}));
  g.nodes.push_back(node("q8ta_convert", {"q"}, {"d_unused"}, {{"zero_point", int64_t{2}}}));
  g.add_value(tensor("d_unused", DType::Int8x4, {1, 1, 10, 10}));
  propagate_layouts(g, {});
  // Two linears (4H4W) against quantize + two converts (anything): q stays 4W4C... unless the
  // count favours 4H4W: quantize(any int8) and converts accept 4H4W too, so 4H4W satisfies all.
  EXPECT_EQ(layout_of(g, "q"), MemoryLayout::PackedInt8_4H4W);
  EXPECT_EQ(count_ops(g, "q8ta_convert"), 2u);  // none inserted
}

TEST(Layouts, DisjointSetsAcrossATiedOpGetOneConversion) {
  // conv writes {4W4C, 4C1W}; an identity ties its input and output; a linear reads 4H4W.
  Graph g;
  g.add_value(tensor("x", DType::Int8x4, {1, 8, 1, 10}));
  g.add_value(tensor("h", DType::Int8x4, {1, 8, 1, 10}));
  g.add_value(tensor("v", DType::Int8x4, {1, 8, 1, 10}));
  g.add_value(tensor("y", DType::Int8x4, {1, 8, 1, 10}));
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes.push_back(conv(g, "x", "h"));
  g.nodes.push_back(node("identity", {"h"}, {"v"}));
  g.nodes.push_back(linear(g, "v", "y"));
  const PassReport r = propagate_layouts(g, {});
  EXPECT_EQ(layout_of(g, "h"), layout_of(g, "v"));
  EXPECT_EQ(count_ops(g, "q8ta_convert"), 1u);
  fold_identities(g);
  EXPECT_EQ(count_ops(g, "identity"), 0u);
  EXPECT_EQ(count_ops(g, "q8ta_convert"), 1u);
  ASSERT_EQ(g.nodes.size(), 3u);  // conv, convert, linear
  EXPECT_EQ(g.nodes[1].op, "q8ta_convert");
  EXPECT_EQ(layout_of(g, g.nodes[1].outputs[0]), MemoryLayout::PackedInt8_4H4W);
}

TEST(Layouts, UnsatisfiedProducerGetsItsConversionRightAfterIt) {
  // conv (writes 4W4C/4C1W) -> identity -> two linears (read 4H4W): 4H4W satisfies two of the
  // three constraints, so the conv writes a staging tensor converted right after it.
  Graph g;
  for (const char* n : {"x", "h", "v", "a", "b"}) {
    g.add_value(tensor(n, DType::Int8x4, {1, 8, 1, 10}));
  }
  g.inputs = {"x"};
  g.outputs = {"a", "b"};
  g.nodes.push_back(conv(g, "x", "h"));
  g.nodes.push_back(node("identity", {"h"}, {"v"}));
  g.nodes.push_back(linear(g, "v", "a"));
  g.nodes.push_back(linear(g, "v", "b"));
  const PassReport r = propagate_layouts(g, {});
  EXPECT_EQ(layout_of(g, "h"), MemoryLayout::PackedInt8_4H4W);
  EXPECT_EQ(count_ops(g, "q8ta_convert"), 1u);
  ASSERT_EQ(g.nodes[0].op, "q8ta_conv2d");
  EXPECT_EQ(g.nodes[1].op, "q8ta_convert");
  EXPECT_EQ(g.nodes[1].outputs[0], "h");
  EXPECT_EQ(layout_of(g, g.nodes[0].outputs[0]), MemoryLayout::PackedInt8_4W4C);
  ASSERT_FALSE(r.lines.empty());
  EXPECT_NE(r.lines.back().find("conversion after node"), std::string::npos) << r.lines.back();
  fold_identities(g);
  EXPECT_EQ(g.nodes.size(), 4u);  // conv, convert, linear, linear
}

TEST(Fold, ConversionsThatCancelAreRemoved) {
  Graph g;
  g.add_value(tensor("x", DType::Float32));
  g.add_value(tensor("q", DType::Int8x4));
  g.add_value(tensor("m", DType::Int8x4));
  g.add_value(tensor("r", DType::Int8x4));
  g.add_value(tensor("y", DType::Float32));
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes = {node("q8ta_quantize", {"x"}, {"q"}, quant_args()),
             node("q8ta_convert", {"q"}, {"m"}, {{"zero_point", int64_t{2}}}),
             node("q8ta_convert", {"m"}, {"r"}, {{"zero_point", int64_t{2}}}),
             node("q8ta_dequantize", {"r"}, {"y"}, quant_args())};
  for (const char* n : {"x", "y"}) {
    g.value(n).storage = StorageType::Buffer;
    g.value(n).layout = MemoryLayout::WidthPacked;
  }
  for (const char* n : {"q", "r"}) {
    g.value(n).storage = StorageType::Buffer;
    g.value(n).layout = MemoryLayout::PackedInt8_4W4C;
  }
  g.value("m").storage = StorageType::Buffer;
  g.value("m").layout = MemoryLayout::PackedInt8_4C1W;
  const PassReport r = fold_identities(g);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[1].inputs[0], "q");
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_NE(r.lines[0].find("removed conversions that cancel"), std::string::npos);
}

TEST(Fold, InputStraightToOutputKeepsOneCopy) {
  Graph g;
  g.add_value(tensor("x", DType::Float32));
  g.add_value(tensor("y", DType::Float32));
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes = {node("identity", {"x"}, {"y"})};
  propagate_layouts(g, {});
  fold_identities(g);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "float_convert");
  const auto blob = emit_blob(g);
  const auto d = vkd::serialization::deserialize(blob);
  ASSERT_EQ(d.ops.size(), 1u);
  EXPECT_EQ(d.ops[0].name, "float_convert");
}

TEST(Emit, BlobHasSchemaArgumentOrderAndNames) {
  Graph g;
  g.add_value(tensor("x", DType::Float32));
  g.add_value(tensor("q", DType::Int8x4));
  g.add_value(tensor("y", DType::Float32));
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes = {node("q8ta_quantize", {"x"}, {"q"}, quant_args()),
             node("q8ta_dequantize", {"q"}, {"y"}, quant_args())};
  propagate_layouts(g, {});
  const auto blob = emit_blob(g);
  EXPECT_EQ(blob, emit_blob(g));  // deterministic
  const auto d = vkd::serialization::deserialize(blob);
  ASSERT_EQ(d.ops.size(), 2u);
  EXPECT_EQ(d.ops[0].name, "q8ta_quantize");
  ASSERT_EQ(d.ops[0].args.size(), 6u);
  const auto& scale = std::get<vkd::serialization::FloatValue>(d.values[d.ops[0].args[1]]);
  EXPECT_DOUBLE_EQ(scale.value, 0.1);
  const auto& zp = std::get<vkd::serialization::IntValue>(d.values[d.ops[0].args[2]]);
  EXPECT_EQ(zp.value, 2);
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_EQ(d.inputs[0].name, "x");
  const auto& q = std::get<vkd::serialization::TensorValue>(d.values[d.ops[0].args[5]]);
  EXPECT_EQ(q.spec.layout, MemoryLayout::PackedInt8_4W4C);
}

TEST(Emit, MissingScalarArgumentNamesTheNode) {
  Graph g;
  g.add_value(tensor("x", DType::Float32));
  g.add_value(tensor("q", DType::Int8x4));
  g.inputs = {"x"};
  g.outputs = {"q"};
  Args args = quant_args();
  args.erase("quant_max");
  g.nodes = {node("q8ta_quantize", {"x"}, {"q"}, args)};
  propagate_layouts(g, {});
  try {
    emit_blob(g);
    FAIL() << "expected an error";
  } catch (const vkd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("(q8ta_quantize): missing argument 'quant_max'"),
              std::string::npos)
        << e.what();
  }
}

// A value the serializer refuses (an empty dim): the message names the value, not only its
// sizes ("tensor [1,0,7,9]: size 0 in dim 1" said neither which value nor where).
TEST(Emit, EmptyDimNamesTheValue) {
  Graph g;
  g.add_value(tensor("x", DType::Float32, {1, 0, 7, 9}));
  g.add_value(tensor("q", DType::Int8x4, {1, 0, 7, 9}));
  g.inputs = {"x"};
  g.outputs = {"q"};
  g.nodes = {node("q8ta_quantize", {"x"}, {"q"}, quant_args())};
  propagate_layouts(g, {});
  try {
    emit_blob(g);
    FAIL() << "expected an error";
  } catch (const vkd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("value 'x': tensor [1,0,7,9]: size 0 in dim 1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
