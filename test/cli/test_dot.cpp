// tools/vkd/Dot (vkd inspect --dot): escaping of names, edge directions from the op schema, the
// conversion highlight, constants, the legend and the error for an op the schema does not know.
// The blobs are built here with GraphBuilder and read back with deserialize(), as inspect does.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/Error.h"
#include "partitioner_schema/KernelSignatures.h"
#include "serialization/Serializer.h"
#include "tools/vkd/Dot.h"

namespace vkd::cli {
namespace {

using serialization::GraphBuilder;
using serialization::ValueId;

TensorSpec spec(DType dtype, MemoryLayout layout, std::vector<int64_t> sizes = {1, 4, 2, 2}) {
  TensorSpec s;
  s.sizes = std::move(sizes);
  s.dtype = dtype;
  s.layout = layout;
  return s;
}

// The line of `dot` that defines node `id` ("  t0 [...]"), or "" when there is none.
std::string node_line(const std::string& dot, const std::string& id) {
  const std::string key = "\n  " + id + " [";
  const size_t at = dot.find(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + 3;  // after "\n  "
  return dot.substr(begin, dot.find('\n', begin) - begin);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Dot, StringEscapesQuotesBackslashesAndLineBreaks) {
  EXPECT_EQ(dot_string("plain"), "\"plain\"");
  EXPECT_EQ(dot_string("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(dot_string("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(dot_string("a\\"), "\"a\\\\\"");  // a trailing backslash must not eat the quote
  EXPECT_EQ(dot_string("a\nb"), "\"a\\nb\"");
  EXPECT_EQ(dot_string(std::string("a\tb\x01\x7f", 5)), "\"a?b??\"");
  EXPECT_EQ(dot_string("\xc3\xa9t\xc3\xa9"), "\"\xc3\xa9t\xc3\xa9\"");  // UTF-8 kept
}

// x (float32) -> q8ta_quantize -> q (4W4C) -> q8ta_convert -> q2 (4C1W); a constant feeds a
// float_convert into a second output. Names with quotes and backslashes.
std::vector<uint8_t> model_blob() {
  GraphBuilder b;
  const ValueId x = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked), "in\"put\\x");
  const ValueId q = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4W4C), "q");
  const ValueId q2 = b.add_tensor(spec(DType::Int8x4, MemoryLayout::PackedInt8_4C1W));
  const ValueId c = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked, {4}), "bias",
                                 std::vector<uint8_t>(16, 0));
  const ValueId f = b.add_tensor(spec(DType::Float32, MemoryLayout::ChannelsPacked, {4}), "f");
  b.add_op("q8ta_quantize",
           {x, b.add_float(0.5), b.add_int(0), b.add_int(-128), b.add_int(127), q});
  b.add_op("q8ta_convert", {q, b.add_int(0), q2});
  b.add_op("float_convert", {c, f});
  b.set_inputs({x}, {"in\"put\\x"});
  b.set_outputs({q2, f}, {"", "f"});
  return b.finish();
}

std::string model_dot(const std::vector<uint8_t>& blob) {
  const serialization::OpSignatureTable ops = schema::kernel_signatures();
  return graph_to_dot(serialization::deserialize(blob, &ops), "dir\\m\"odel.vkd");
}

TEST(Dot, DrawsTensorsOpsAndEdgesFromTheSchema) {
  const std::vector<uint8_t> blob = model_blob();
  const std::string dot = model_dot(blob);
  EXPECT_TRUE(contains(dot, "digraph vkd {\n")) << dot;
  EXPECT_TRUE(contains(dot, "label=\"dir\\\\m\\\"odel.vkd\"")) << dot;
  EXPECT_EQ(node_line(dot, "t0"),
            "t0 [label=\"in\\\"put\\\\x\\n[1,4,2,2] float32 buffer width_packed\\ngraph input 0\", "
            "style=filled, fillcolor=\"#80b1d3\", peripheries=2];");
  // Unnamed tensors go by their value id.
  EXPECT_TRUE(contains(node_line(dot, "t2"),
                       "label=\"%2\\n[1,4,2,2] int8x4 buffer 4C1W\\ngraph output 0\""))
      << dot;
  // Inputs point at the op, outputs away from it; scalar arguments are not drawn.
  for (const char* edge :
       {"t0 -> op0;", "op0 -> t1;", "t1 -> op1;", "op1 -> t2;", "t3 -> op2;", "op2 -> t4;"}) {
    EXPECT_TRUE(contains(dot, std::string("\n  ") + edge + "\n")) << edge << "\n" << dot;
  }
  EXPECT_FALSE(contains(dot, "t5")) << dot;  // the scale, an int
}

TEST(Dot, HighlightsInsertedConversionsOnly) {
  const std::string dot = model_dot(model_blob());
  EXPECT_EQ(node_line(dot, "op0"),
            "op0 [shape=box, label=\"q8ta_quantize\", style=\"rounded,filled\", "
            "fillcolor=\"#f5f5f5\"];");
  for (const auto& [id, op] :
       {std::pair<std::string, std::string>{"op1", "q8ta_convert"}, {"op2", "float_convert"}}) {
    EXPECT_EQ(node_line(dot, id),
              id + " [shape=box, label=\"" + op +
                  "\\ninserted conversion\", style=\"bold,filled\", fillcolor=\"#fde0dd\", "
                  "color=red, fontcolor=red, penwidth=3];");
  }
}

TEST(Dot, ConstantsAreSmallAndGreyAndTheLegendListsEveryLayout) {
  const std::string dot = model_dot(model_blob());
  EXPECT_EQ(node_line(dot, "t3"),
            "t3 [label=\"bias\\n[4] float32 buffer width_packed\\nconstant\", style=filled, "
            "fillcolor=\"#eeeeee\", color=\"#999999\", fontcolor=\"#666666\", fontsize=9, "
            "height=0.3];");
  EXPECT_TRUE(contains(dot, "subgraph cluster_legend {")) << dot;
  for (MemoryLayout l : kAllFloatLayouts) {
    EXPECT_TRUE(contains(dot, "label=\"" + std::string(to_string(l)) + "\", style=filled")) << dot;
  }
  for (MemoryLayout l : kAllPackedInt8Layouts) {
    EXPECT_TRUE(contains(dot, "label=\"" + std::string(to_string(l)) + "\", style=filled")) << dot;
  }
  EXPECT_TRUE(contains(dot, "legend_conversion [shape=box, label=\"inserted conversion\"")) << dot;
}

TEST(Dot, AnOpTheSchemaDoesNotKnowIsAnErrorNamingIt) {
  GraphBuilder b;
  const ValueId x = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked), "x");
  const ValueId y = b.add_tensor(spec(DType::Float32, MemoryLayout::WidthPacked), "y");
  b.add_op("mystery_op", {x, y});
  b.set_inputs({x});
  b.set_outputs({y});
  const std::vector<uint8_t> blob = b.finish();
  try {
    graph_to_dot(serialization::deserialize(blob), "m.vkd");  // no known_ops: the op passes
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_TRUE(contains(e.what(), "op call 0 ('mystery_op'): not in the backend op schema"))
        << e.what();
  }
}

}  // namespace
}  // namespace vkd::cli
