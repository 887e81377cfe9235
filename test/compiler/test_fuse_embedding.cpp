// fuse_and_lower on edge-dialect graphs built in C++ (FuseTestUtil.h): q8ta_embedding and the
// float embedding (compiler/ops/Embedding.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "test/compiler/FuseTestUtil.h"
#include "test/reference/QuantReference.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::fuse_test;
using vkd::DType;

// A float32 table [5, 6] of values on both sides of the int8 range at scale 0.05.
std::vector<float> table_values() {
  std::vector<float> t(30);
  for (size_t i = 0; i < t.size(); ++i) t[i] = -7.3f + 0.49f * static_cast<float>(i);
  return t;
}

// ids int32 [2, 3] -> aten.embedding(table) -> e [2, 3, 6] [-> q (0.05, -3) -> yq].
Builder embedding_graph(bool quantized) {
  Builder b;
  b.input("ids", DType::Int32, {2, 3});
  b.constant("table", DType::Float32, {5, 6}, f32_bytes(table_values()));
  b.value("e", DType::Float32, {2, 3, 6});
  b.node("aten.embedding", {"table", "ids"}, {{"padding_idx", int64_t{0}}}, {"e"});
  if (quantized) {
    b.q("e", "yq", 0.05, -3);
    b.output("yq");
  } else {
    b.output("e");
  }
  return b;
}

// Followed by a quantize: q8ta_embedding gathers rows of the table quantized at compile time
// with the quantize's parameters (values past the int8 range saturate); alone: the float rows.
TEST(Fuse, EmbeddingQuantizesItsTableAtCompileTime) {
  {
    Builder b = embedding_graph(true);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_embedding"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    ASSERT_EQ(n.inputs.size(), 2u);
    EXPECT_EQ(n.inputs[0], "ids");
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(arg_d(n, "output_scale"), 0.05);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
    const Value& table = b.g.value(n.inputs[1]);
    EXPECT_EQ(table.dtype, DType::Int8);
    EXPECT_EQ(table.shape, (std::vector<int64_t>{5, 6}));
    const std::vector<int8_t> want =
        vkd::testing::reference_quantize(table_values(), 0.05f, -3, -128, 127);
    ASSERT_TRUE(table.data.has_value());
    EXPECT_EQ(std::vector<int8_t>(table.data->begin(), table.data->end()), want);
    EXPECT_EQ(want.front(), -128);  // saturated: the test covers the clamp
    expect_quant(b.g.value("yq"), 0.05, -3, -128, 127);
    EXPECT_TRUE(has_line(r,
                         "fused aten.embedding -> q (node 0..1) into q8ta_embedding 'yq' "
                         "(table '" +
                             table.name + "')"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b = embedding_graph(false);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"embedding"})) << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"ids", "table"}));
    EXPECT_EQ(b.g.value("e").dtype, DType::Float32);
    expect_valid(b.g);
  }
}

// A quantize into a narrowed range is not folded in (the kernel writes the full int8 range): the
// float rows, then q8ta_quantize; a table computed at run time is no constant: the host's.
TEST(Fuse, EmbeddingLimits) {
  {
    Builder b = embedding_graph(true);
    b.g.nodes[1].args = q_args(0.05, -3, -100, 100);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"embedding", "q8ta_quantize"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: aten.embedding -> q (node 0..1) as q8ta_embedding: the "
                         "quantize is not alone into the full int8 range"))
        << all_lines(r);
  }
  {
    Builder b;
    b.input("ids", DType::Int32, {4});
    b.input("table", DType::Float32, {5, 6});
    b.value("e", DType::Float32, {4, 6});
    b.node("aten.embedding", {"table", "ids"}, {}, {"e"});
    b.q("e", "yq", 0.05, -3);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g)[0], "aten.embedding") << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: aten.embedding -> q (node 0..1) as q8ta_embedding: the "
                         "table 'table' is not a float32 constant"))
        << all_lines(r);
  }
}

// BERT's embeddings: the word rows (q8ta_embedding) + the position rows, an int8 constant of the
// same shape dequantized per tensor => q8ta_add whose `b` is that constant as int8x4 (packed into
// the activation's layout when the blob loads); the constant keeps its bytes and qparams.
TEST(Fuse, EmbeddingPlusConstantRowsRunsAsOneAdd) {
  Builder b = embedding_graph(true);
  b.g.outputs.clear();
  const std::vector<int64_t> shape = {2, 3, 6};
  std::vector<uint8_t> rows(36);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint8_t>(i * 7);
  b.constant("pos", DType::Int8, shape, rows);
  b.dq("yq", "e_f", 0.05, -3);
  b.dq("pos", "pos_f", 0.02, 5);
  b.value("s", DType::Float32, shape);
  b.node("aten.add.Tensor", {"e_f", "pos_f"}, {}, {"s"});
  b.q("s", "zq", 0.06, 1);
  b.output("zq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_embedding", "q8ta_add"})) << all_lines(r);
  const Node& add = b.g.nodes[1];
  ASSERT_EQ(add.inputs.size(), 2u);
  EXPECT_EQ(add.inputs[0], "yq");
  const Value& pos = b.g.value(add.inputs[1]);
  EXPECT_EQ(pos.dtype, DType::Int8x4);
  EXPECT_EQ(pos.shape, shape);
  ASSERT_TRUE(pos.data.has_value());
  EXPECT_EQ(*pos.data, rows);
  EXPECT_EQ(arg_d(add, "b_scale"), 0.02);
  EXPECT_EQ(arg_i(add, "b_zero_point"), 5);
  EXPECT_EQ(arg_d(add, "output_scale"), 0.06);
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq -> aten.add.Tensor -> q (node 2..5) into q8ta_add 'zq' "
                       "(activation none)"))
      << all_lines(r);
  expect_valid(b.g);
}

// A constant operand is taken with an activation of its own shape only: broadcast rows are not.
TEST(Fuse, ConstantAddOperandLimits) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 6});
  b.dq("xq", "x", 0.1, 0);
  b.constant("pos", DType::Int8, {1, 1, 6}, std::vector<uint8_t>(6, 3));
  b.dq("pos", "pos_f", 0.02, 5);
  b.value("s", DType::Float32, {1, 4, 6});
  b.node("aten.add.Tensor", {"x", "pos_f"}, {}, {"s"});
  b.q("s", "yq", 0.1, 0);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(count_op(b.g, "q8ta_add"), 0) << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq, dq -> aten.add.Tensor -> q (node 0..3) as q8ta_add: a "
                       "constant operand needs an activation of its shape ([1, 4, 6] + [1, 1, 6])"))
      << all_lines(r);
}

}  // namespace

namespace {

// ids int32 [2, 3] -> aten.embedding(table) -> e [2, 3, 6] -> + pos -> s1 -> + type -> s2,
// where pos and type are float32 constants of `pos_shape` and `type_shape` (BERT's position and
// token type rows, folded by the exporter).
Builder embedding_add_graph(const std::vector<int64_t>& pos_shape,
                            const std::vector<int64_t>& type_shape) {
  Builder b = embedding_graph(false);
  b.g.outputs.clear();
  const auto ramp = [](const std::vector<int64_t>& shape, float step) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = step * static_cast<float>(i) - 1.0f;
    return f32_bytes(v);
  };
  b.constant("pos", DType::Float32, pos_shape, ramp(pos_shape, 0.37f));
  b.constant("type", DType::Float32, type_shape, ramp(type_shape, 0.011f));
  b.value("s1", DType::Float32, {2, 3, 6});
  b.value("s2", DType::Float32, {2, 3, 6});
  b.node("aten.add.Tensor", {"e", "pos"}, {}, {"s1"});
  b.node("aten.add.Tensor", {"type", "s1"}, {{"alpha", int64_t{1}}}, {"s2"});
  b.output("s2");
  return b;
}

}  // namespace

// The float rows + two float32 constants: one embedding_add reading the constants in the
// graph's order (not folded into one: float addition is not associative); a constant of the
// rows' trailing dims ([1, 3, 6], [6]) is broadcast along the leading ones.
TEST(Fuse, EmbeddingPlusConstantsRunsAsOneEmbeddingAdd) {
  for (const std::vector<int64_t>& type_shape :
       {std::vector<int64_t>{2, 3, 6}, std::vector<int64_t>{6}}) {
    Builder b = embedding_add_graph({1, 3, 6}, type_shape);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"embedding_add"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"ids", "table", "pos", "type"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"s2"}));
    EXPECT_TRUE(n.args.empty());
    EXPECT_FALSE(b.g.has_value("e"));
    EXPECT_FALSE(b.g.has_value("s1"));
    EXPECT_TRUE(has_line(r,
                         "fused aten.embedding -> aten.add.Tensor -> aten.add.Tensor (node 0..2) "
                         "into embedding_add 's2' (adds 'pos' then 'type' in order)"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// What embedding_add does not take stays apart, with the reason: an operand computed at run
// time, alpha 2, a constant broadcast along an inner dim, a constant that is a graph output.
TEST(Fuse, EmbeddingAddLimits) {
  struct Refused {
    const char* what;
    std::function<void(Builder&)> change;
    std::string why;
  };
  const std::vector<Refused> refused = {
      {"input",
       [](Builder& b) {
         b.g.nodes[1].inputs[1] = "pos_in";
         b.input("pos_in", DType::Float32, {2, 3, 6});
       },
       "'pos_in' is not a constant"},
      {"alpha", [](Builder& b) { b.g.nodes[1].args["alpha"] = 2.0; }, "alpha is not 1"},
      {"inner broadcast",
       [](Builder& b) {
         b.constant("col", DType::Float32, {3, 1}, f32_bytes({1.0f, 2.0f, 3.0f}));
         b.g.nodes[1].inputs[1] = "col";
       },
       "'col' [3, 1] is broadcast along an inner dim; embedding_add takes the rows' trailing "
       "dims [2, 3, 6]"},
      {"output", [](Builder& b) { b.output("pos"); }, "'pos' is a graph output"},
  };
  for (const Refused& c : refused) {
    Builder b = embedding_add_graph({1, 3, 6}, {1, 3, 6});
    c.change(b);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"embedding", "float_add", "float_add"}))
        << c.what << "\n"
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: aten.embedding -> aten.add.Tensor (node 0..1) as "
                         "embedding_add: " +
                             c.why))
        << c.what << "\n"
        << all_lines(r);
  }
}

// The chain stops where its value has another reader (or is a graph output) and after two adds
// (the kernel's bindings): the rest stays float_add, the first adds still fused.
TEST(Fuse, EmbeddingAddChainStops) {
  {
    Builder b = embedding_add_graph({1, 3, 6}, {1, 3, 6});
    b.output("e");  // the rows are read twice: nothing fused
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"embedding", "float_add", "float_add"}))
        << all_lines(r);
  }
  {
    Builder b = embedding_add_graph({1, 3, 6}, {1, 3, 6});
    b.output("s1");  // the first sum is read twice: the second add stays apart
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"embedding_add", "float_add"}))
        << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"ids", "table", "pos"}));
    EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"s1"}));
    expect_valid(b.g);
  }
  {
    Builder b = embedding_add_graph({1, 3, 6}, {1, 3, 6});
    b.g.outputs.clear();
    b.value("s3", DType::Float32, {2, 3, 6});
    b.node("aten.add.Tensor", {"s2", "pos"}, {}, {"s3"});
    b.output("s3");  // a third add: float_add after the fused two
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"embedding_add", "float_add"}))
        << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"s2"}));
    expect_valid(b.g);
  }
}
