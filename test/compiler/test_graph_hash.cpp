// compiler::graph_ir_hash (compiler/GraphHash.h), the hash a compiled blob records of the graph
// IR it came from: the same graph however its JSON is written, another hash for any change of
// an op, argument, connection, shape, dtype or weight, and the value the compiler writes into
// every blob it makes (whole or per partition).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "compiler/Compiler.h"
#include "compiler/GraphHash.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "serialization/Blob.h"

namespace vkd::compiler {
namespace {

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

SafetensorsFile weights(float first = 1.0f, const std::string& name = "lin.weight") {
  std::vector<int8_t> w(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(i) - 5;
  w[0] = static_cast<int8_t>(first);
  std::vector<uint8_t> wb(w.size());
  std::memcpy(wb.data(), w.data(), w.size());
  return SafetensorsFile::from_bytes(
      serialize_safetensors(
          {{name, "I8", {3, 4}, wb}, {"lin.scale", "F32", {3}, bytes_of({0.5f, 0.25f, 0.125f})}}),
      "w.safetensors");
}

// dq -> linear -> q on a [2, 4] input, weights from the safetensors file.
std::string graph_json(const std::string& zero_point = "3", const std::string& shape = "[2, 4]",
                       const std::string& weight_key = "lin.weight") {
  const std::string q = "{\"scale\": 0.5, \"zero_point\": " + zero_point +
                        ", \"quant_min\": -128, \"quant_max\": 127, \"dtype\": \"int8\"}";
  return "{\"vkd_graph\": 1, \"inputs\": [\"x\"], \"outputs\": [\"y\"],\n"
         " \"values\": {\"x\": {\"dtype\": \"float32\", \"shape\": " +
         shape +
         "},\n"
         "   \"w\": {\"dtype\": \"int8\", \"shape\": [3, 4], \"data\": \"" +
         weight_key +
         "\"},\n"
         "   \"s\": {\"dtype\": \"float32\", \"shape\": [3], \"data\": \"lin.scale\"}},\n"
         " \"nodes\": [\n"
         "  {\"op\": \"quantized_decomposed.quantize_per_tensor\", \"inputs\": [\"x\"], "
         "\"args\": " +
         q +
         ", \"outputs\": [\"xq\"]},\n"
         "  {\"op\": \"quantized_decomposed.dequantize_per_tensor\", \"inputs\": [\"xq\"], "
         "\"args\": " +
         q +
         ", \"outputs\": [\"xd\"]},\n"
         "  {\"op\": \"quantized_decomposed.dequantize_per_channel\", \"inputs\": [\"w\", \"s\"], "
         "\"args\": {\"axis\": 0, \"quant_min\": -127, \"quant_max\": 127, \"dtype\": \"int8\"}, "
         "\"outputs\": [\"wf\"]},\n"
         "  {\"op\": \"aten.linear\", \"inputs\": [\"xd\", \"wf\"], \"args\": {}, \"outputs\": "
         "[\"l\"]},\n"
         "  {\"op\": \"quantized_decomposed.quantize_per_tensor\", \"inputs\": [\"l\"], "
         "\"args\": " +
         q +
         ", \"outputs\": [\"yq\"]},\n"
         "  {\"op\": \"quantized_decomposed.dequantize_per_tensor\", \"inputs\": [\"yq\"], "
         "\"args\": " +
         q + ", \"outputs\": [\"y\"]}]}";
}

uint64_t hash_of(const std::string& json, const SafetensorsFile& w = weights()) {
  return graph_ir_hash(parse_graph(json, "g.json", &w));
}

TEST(GraphHash, SameGraphHoweverItIsWritten) {
  const uint64_t h = hash_of(graph_json());
  EXPECT_EQ(hash_of(graph_json()), h);  // deterministic
  // One line, other whitespace.
  std::string compact = graph_json();
  for (size_t at; (at = compact.find('\n')) != std::string::npos;) compact.erase(at, 1);
  EXPECT_EQ(hash_of(compact), h);
  // Keys in another order: the values, a node's fields and its args.
  std::string reordered = graph_json();
  const std::string x = "\"x\": {\"dtype\": \"float32\", \"shape\": [2, 4]},\n";
  const std::string s =
      "   \"s\": {\"dtype\": \"float32\", \"shape\": [3], \"data\": \"lin.scale\"}";
  reordered.replace(reordered.find(x), x.size(), "");
  reordered.replace(reordered.find(s), s.size(), s + ",\n   " + x.substr(0, x.size() - 2));
  const std::string args = "{\"scale\": 0.5, \"zero_point\": 3,";
  reordered.replace(reordered.find(args), args.size(), "{\"zero_point\": 3, \"scale\": 0.5,");
  ASSERT_NE(reordered, graph_json());
  EXPECT_EQ(hash_of(reordered), h);
  // The weights under another name in the file (the graph's "data" renamed with it).
  EXPECT_EQ(hash_of(graph_json("3", "[2, 4]", "other"), weights(1.0f, "other")), h);
}

TEST(GraphHash, AnyChangeGivesAnotherHash) {
  std::string relu = graph_json();  // an op inserted: linear -> relu -> q
  relu.replace(relu.find("\"outputs\": [\"l\"]"), 16,
               "\"outputs\": [\"l0\"]},\n  "
               "{\"op\": \"aten.relu\", \"inputs\": [\"l0\"], \"args\": {}, \"outputs\": [\"l\"]");
  const std::vector<uint64_t> hashes = {
      hash_of(graph_json()),
      hash_of(graph_json("4")),              // an argument
      hash_of(graph_json("3", "[5, 4]")),    // a shape
      hash_of(graph_json(), weights(2.0f)),  // one weight byte
      hash_of(relu),                         // an op
  };
  EXPECT_EQ(std::set<uint64_t>(hashes.begin(), hashes.end()).size(), hashes.size());
}

TEST(GraphHash, CompiledBlobsRecordIt) {
  const SafetensorsFile w = weights();
  const Graph parsed = parse_graph(graph_json(), "g.json", &w);
  const uint64_t h = graph_ir_hash(parsed);
  ASSERT_NE(h, 0u);
  const CompileResult r = compile_graph(parsed, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(serialization::parse_header(r.blob.data(), r.blob.size()).source_graph_hash, h);
  const PartitionedResult p = compile_partitioned(parsed, {});
  ASSERT_FALSE(p.parts.empty());
  for (const CompileResult& part : p.parts) {
    EXPECT_EQ(serialization::parse_header(part.blob.data(), part.blob.size()).source_graph_hash, h);
  }
}

}  // namespace
}  // namespace vkd::compiler
