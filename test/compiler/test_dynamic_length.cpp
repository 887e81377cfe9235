// A graph IR with a dynamic sequence length (compiler/DynamicLength.h): the "dynamic" section
// read and checked, the blob's table (serialization/DynamicLength.h) from blobs compiled at
// several lengths, and the refusals when a length's blob differs otherwise.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/Compiler.h"
#include "compiler/DynamicLength.h"
#include "compiler/Parse.h"
#include "core/Error.h"
#include "serialization/Deserializer.h"
#include "test/compiler/GraphText.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::compiler::graph_text;
namespace ser = vkd::serialization;

const std::string kQ = "quantized_decomposed.quantize_per_tensor";
const std::string kDq = "quantized_decomposed.dequantize_per_tensor";

std::string shaped(const std::string& dtype, const std::string& shape) {
  return "{\"dtype\": \"" + dtype + "\", \"shape\": " + shape + "}";
}

// Mean pooling over the tokens: x [1, 8, T, 4] quantized, averaged over T and the last dim
// (q8ta_mean, whose count is T * 4), T from 2 to 16; `dynamic`: the section, or "" for the
// default one.
std::string mean_pool(const std::string& dynamic = "") {
  const std::string section =
      dynamic.empty() ? "{\"name\": \"T\", \"min\": 2, \"max\": 16, \"values\": {\"x\": [[2, 1, "
                        "0]], \"xq\": [[2, 1, 0]], \"xd\": [[2, 1, 0]]}}"
                      : dynamic;
  return "{\"vkd_graph\": 1, \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"values\": {"
         "\"x\": " +
         shaped("float32", "[1, 8, 16, 4]") + ", \"xq\": " + shaped("int8", "[1, 8, 16, 4]") +
         ", \"xd\": " + shaped("float32", "[1, 8, 16, 4]") +
         ", \"m\": " + shaped("float32", "[1, 8, 1, 1]") +
         ", \"mq\": " + shaped("int8", "[1, 8, 1, 1]") +
         ", \"y\": " + shaped("float32", "[1, 8, 1, 1]") + "}, \"nodes\": [" +
         node(kQ, "x", q_args(0.05, 1), "xq") + ", " + node(kDq, "xq", q_args(0.05, 1), "xd") +
         ", " + node("aten.mean.dim", "xd", "{\"dim\": [2, 3], \"keepdim\": true}", "m") + ", " +
         node(kQ, "m", q_args(0.02, -3), "mq") + ", " + node(kDq, "mq", q_args(0.02, -3), "y") +
         "], \"dynamic\": " + section + "}";
}

std::string tensor_name(const ser::DeserializedGraph& g, ser::ValueId id) {
  const auto* t = std::get_if<ser::TensorValue>(&g.values.at(id));
  return t ? t->name : "v" + std::to_string(id);
}

TEST(DynamicLength, BlobRecordsWhatFollowsTheLength) {
  const Graph g = parse_graph(mean_pool(), "test", nullptr);
  ASSERT_TRUE(g.dynamic.has_value());
  EXPECT_EQ(g.dynamic->dims.size(), 3u);
  const CompileResult r = compile_graph(g, {});
  ASSERT_TRUE(r.ok());
  const ser::DeserializedGraph blob = ser::deserialize(r.blob);
  ASSERT_TRUE(blob.dynamic.has_value());
  EXPECT_EQ(blob.dynamic->name, "T");
  EXPECT_EQ(blob.dynamic->min, 2);
  EXPECT_EQ(blob.dynamic->max, 16);
  // The float input and its int8 copy follow T in dim 2; the pooled [1, 8, 1, 1] does not.
  std::vector<std::string> entries;
  for (const auto& e : blob.dynamic->entries) {
    entries.push_back(tensor_name(blob, e.value) + ":" + std::to_string(e.element) + "=" +
                      std::to_string(e.a) + "T+" + std::to_string(e.b));
  }
  EXPECT_EQ(entries, (std::vector<std::string>{"x:2=1T+0", "xq:2=1T+0"}));
  // The graph as compiled at 16, byte for byte, but for the table.
  Graph fixed = g;
  fixed.dynamic.reset();
  const CompileResult at_max = compile_graph(fixed, {});
  const ser::DeserializedGraph plain = ser::deserialize(at_max.blob);
  EXPECT_FALSE(plain.dynamic.has_value());
  ASSERT_EQ(plain.values.size(), blob.values.size());
  for (size_t id = 0; id < plain.values.size(); ++id) {
    const auto* t = std::get_if<ser::TensorValue>(&plain.values[id]);
    if (!t) continue;
    const auto& u = std::get<ser::TensorValue>(blob.values[id]);
    EXPECT_EQ(t->spec.describe(), u.spec.describe()) << t->name;
  }
}

TEST(DynamicLength, CheckedLengths) {
  EXPECT_EQ(checked_lengths(2, 5), (std::vector<int64_t>{2, 3, 4, 5}));
  const auto many = checked_lengths(1, 512);
  EXPECT_EQ(many.front(), 1);
  EXPECT_EQ(many.back(), 512);
  EXPECT_LE(many.size(), 64u);  // the 16 shortest, the 16 longest, 32 between (some coincide)
  EXPECT_EQ(many[15], 16);
  EXPECT_EQ(many[many.size() - 16], 497);
}

// The message compiling `json` gives (parse and compile), "" when it compiles.
std::string compile_error(const std::string& json) {
  try {
    compile_graph(parse_graph(json, "g.json", nullptr), {});
  } catch (const vkd::Error& e) {
    return e.what();
  }
  return "";
}

TEST(DynamicLength, MalformedSectionsAreRefused) {
  auto with = [](const std::string& values, const std::string& extra = "") {
    return mean_pool("{\"name\": \"T\", \"min\": 2, \"max\": 16, \"values\": " + values + extra +
                     "}");
  };
  EXPECT_EQ(compile_error(with("{\"nope\": [[2, 1, 0]]}")),
            "g.json: field 'dynamic': value 'nope': not a value of the graph");
  EXPECT_EQ(compile_error(with("{\"x\": [[2, 1, 1]]}")),
            "g.json: field 'dynamic': value 'x' dim 2: 1 * 16 + 1 = 17, but the graph (written at "
            "the maximum length) holds 16");
  EXPECT_EQ(compile_error(with("{\"x\": [[4, 1, 0]]}")),
            "g.json: field 'dynamic': value 'x': dim 4 out of range (shape [1, 8, 16, 4])");
  EXPECT_EQ(compile_error(with("{\"x\": [[2, 1]]}")),
            "g.json: field 'dynamic': value 'x': must be a list of 3 items, got [2,1]");
  EXPECT_EQ(compile_error(with("{}")),
            "g.json: field 'dynamic': no value dimension follows the length");
  EXPECT_EQ(compile_error(with("{\"x\": [[2, 1, 0]]}", ", \"args\": [[9, \"end\", -1, 1, 0]]")),
            "g.json: field 'dynamic': args[0]: node 9 out of range (the graph has 5 nodes)");
  EXPECT_EQ(compile_error(with("{\"x\": [[2, 1, 0]]}", ", \"args\": [[2, \"dim\", 0, 1, 0]]")),
            "g.json: field 'dynamic': args[0]: 1 * 16 + 0 = 16, but the graph (written at the "
            "maximum length) holds 2");
  EXPECT_EQ(compile_error(with("{\"x\": [[2, 1, 0]]}", ", \"args\": [[2, \"dim\", 5, 1, 0]]")),
            "g.json: field 'dynamic': args[0]: arg 'dim' of node 2 (aten.mean.dim) has no int item "
            "5");
  EXPECT_EQ(compile_error(mean_pool("{\"name\": \"T\", \"min\": 16, \"max\": 16}")),
            "g.json: field 'dynamic': lengths [16, 16] must satisfy 1 <= min < max <= 2147483648");
  EXPECT_EQ(
      compile_error(mean_pool("{\"name\": \"T\", \"min\": 2, \"max\": 16, \"step\": 2}")),
      "g.json: field 'dynamic': unknown field 'step' (expected name, min, max, values, args)");
}

// What differs between the blobs of two lengths other than by a * L + b: compile_dynamic with a
// compile that changes the graph at T = 5 only.
TEST(DynamicLength, BlobsThatDoNotFollowTheLengthAreRefused) {
  const Graph g = parse_graph(mean_pool(), "test", nullptr);
  auto refusal = [&](const std::function<void(Graph&)>& change_at_5) {
    try {
      compile_dynamic(g, [&](Graph at) {
        if (at.value("x").shape[2] == 5) change_at_5(at);
        return compile_graph(std::move(at), {});
      });
    } catch (const vkd::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A float (a scale computed from the length).
  EXPECT_EQ(refusal([](Graph& at) { at.nodes[0].args["scale"] = 0.04; }),
            "the dynamic length T (2 to 16): compiled at T = 5, value 1 (float) is 0.04 instead of "
            "0.05 than at the maximum; export with another range or at a fixed length");
  // An int that does not follow a * T + b of the two longest lengths.
  const std::string off = refusal([](Graph& at) { at.nodes[0].args["zero_point"] = int64_t{2}; });
  EXPECT_NE(off.find("compiled at T = 5, value 2 (int) element 0 is 2, not 1"), std::string::npos)
      << off;
  // A length the backend cannot compile.
  const std::string unsupported =
      refusal([](Graph& at) { at.nodes[2].args["dim"] = std::vector<int64_t>{1}; });
  EXPECT_EQ(unsupported,
            "the dynamic length T (2 to 16): compiled at T = 5, node 2 (aten.mean.dim): argument "
            "'dim': only the spatial dims [-1, -2] / [2, 3] are supported, got [1]");
  EXPECT_EQ(refusal([](Graph&) {}), "");  // the same compile: no refusal
}

TEST(DynamicLength, PartitionedCompileRefusesIt) {
  try {
    compile_partitioned(parse_graph(mean_pool(), "test", nullptr), {});
    FAIL() << "no error";
  } catch (const vkd::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "the graph has a dynamic length (T up to 16), which only a whole-graph compile "
              "takes (without --partition) for now");
  }
}

}  // namespace
