// The compile driver (compiler/Compiler.h) on graphs written here as JSON: how the
// passes work together, with exact node and conversion counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "compiler/Compiler.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "core/Error.h"
#include "partitioner_schema/KernelSignatures.h"
#include "serialization/Deserializer.h"
#include "test/compiler/GraphText.h"

namespace {

using namespace vkd::compiler;

using namespace vkd::compiler::graph_text;

// Two quantized pixel shuffles with a float relu between them that no pattern absorbs (its
// output is also a graph output, so it is no standalone int8 activation): the relu stays a float
// op, fenced by a dequantize before and a quantize after, and no layout conversion is needed
// anywhere.
TEST(Pipeline, FloatOpBetweenTwoQuantizedOpsGetsDequantizeAndQuantizeAtItsBoundaries) {
  const std::string dq = "quantized_decomposed.dequantize_per_tensor";
  const std::string q = "quantized_decomposed.quantize_per_tensor";
  const std::string json =
      "{\"vkd_graph\": 1, \"inputs\": [\"xq\"], \"outputs\": [\"c\", \"r\"],"
      " \"values\": {\"xq\": {\"dtype\": \"int8\", \"shape\": [1, 16, 2, 2]}},"
      " \"nodes\": [" +
      node(dq, "xq", q_args(0.5, 1), "x") + ", " +
      node("aten.pixel_shuffle", "x", "{\"upscale_factor\": 2}", "s1") + ", " +
      node(q, "s1", q_args(0.5, 1), "a") + ", " + node(dq, "a", q_args(0.5, 1), "af") + ", " +
      node("aten.relu", "af", "{}", "r") + ", " + node(q, "r", q_args(0.25, -3), "b") + ", " +
      node(dq, "b", q_args(0.25, -3), "bf") + ", " +
      node("aten.pixel_shuffle", "bf", "{\"upscale_factor\": 2}", "s2") + ", " +
      node(q, "s2", q_args(0.25, -3), "c") + "]}";
  const CompileResult r = compile_graph(parse_graph(json, "test", nullptr), {});
  EXPECT_EQ(ops_of(r.graph),
            (std::vector<std::string>{"q8ta_pixel_shuffle", "q8ta_dequantize", "relu",
                                      "q8ta_quantize", "q8ta_pixel_shuffle"}));
  const Node& relu = r.graph.nodes[2];
  EXPECT_EQ(r.graph.value(relu.inputs[0]).dtype, vkd::DType::Float32);
  EXPECT_EQ(r.graph.value(relu.outputs[0]).dtype, vkd::DType::Float32);
  EXPECT_EQ(r.graph.value("a").dtype, vkd::DType::Int8x4);
  EXPECT_EQ(r.graph.value("b").dtype, vkd::DType::Int8x4);
  for (const auto& name : r.graph.value_names()) {
    EXPECT_TRUE(r.graph.value(name).layout.has_value()) << name;
  }
  const auto conversions = std::count_if(
      r.graph.nodes.begin(), r.graph.nodes.end(),
      [](const Node& n) { return n.op == "q8ta_convert" || n.op == "float_convert"; });
  EXPECT_EQ(conversions, 0);
}

std::vector<uint8_t> f32(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> i8_ramp(size_t n) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(static_cast<int8_t>(int(i % 13) - 6));
  return b;
}

// One graph with every fusion pattern: conv + relu, add + relu (in the conv's epilogue), pixel
// shuffle, linear. The report names each fusion and the final placement of every tensor.
TEST(Pipeline, ReportOnAGraphWithEveryFusionPattern) {
  const std::string dq = "quantized_decomposed.dequantize_per_tensor";
  const std::string dqc = "quantized_decomposed.dequantize_per_channel";
  const std::string q = "quantized_decomposed.quantize_per_tensor";
  const std::string wq =
      "{\"axis\": 0, \"quant_min\": -127, \"quant_max\": 127, \"dtype\": \"int8\"}";
  const std::string conv_args =
      "{\"stride\": [1, 1], \"padding\": [0, 0], \"dilation\": [1, 1], \"transposed\": false,"
      " \"output_padding\": [0, 0], \"groups\": 1}";
  const std::string json =
      "{\"vkd_graph\": 1, \"inputs\": [\"xq\"], \"outputs\": [\"y\"],"
      " \"values\": {\"xq\": {\"dtype\": \"int8\", \"shape\": [1, 8, 4, 4]},"
      "  \"cw\": {\"dtype\": \"int8\", \"shape\": [8, 8, 1, 1], \"data\": \"cw\"},"
      "  \"cws\": {\"dtype\": \"float32\", \"shape\": [8], \"data\": \"cws\"},"
      "  \"lw\": {\"dtype\": \"int8\", \"shape\": [5, 8], \"data\": \"lw\"},"
      "  \"lws\": {\"dtype\": \"float32\", \"shape\": [5], \"data\": \"lws\"}},"
      " \"nodes\": [" +
      node(dq, "xq", q_args(0.5, 1), "x") + ", " + "{\"op\": \"" + dqc +
      "\", \"inputs\": [\"cw\", \"cws\"], \"args\": " + wq + ", \"outputs\": [\"cwf\"]}, " +
      "{\"op\": \"aten.convolution\", \"inputs\": [\"x\", \"cwf\"], \"args\": " + conv_args +
      ", \"outputs\": [\"cv\"]}, " + node("aten.relu", "cv", "{}", "cr") + ", " +
      node(q, "cr", q_args(0.25, -128), "c") + ", " + node(dq, "c", q_args(0.25, -128), "a1") +
      ", " + node(dq, "xq", q_args(0.5, 1), "a2") + ", " +
      "{\"op\": \"aten.add.Tensor\", \"inputs\": [\"a1\", \"a2\"], \"args\": {}, \"outputs\": "
      "[\"sm\"]}, " +
      node("aten.relu", "sm", "{}", "sr") + ", " + node(q, "sr", q_args(0.5, -128), "s") + ", " +
      node(dq, "s", q_args(0.5, -128), "sf") + ", " +
      node("aten.pixel_shuffle", "sf", "{\"upscale_factor\": 2}", "ps") + ", " +
      node(q, "ps", q_args(0.5, -128), "p") + ", " + node(dq, "p", q_args(0.5, -128), "pf") + ", " +
      "{\"op\": \"" + dqc + "\", \"inputs\": [\"lw\", \"lws\"], \"args\": " + wq +
      ", \"outputs\": [\"lwf\"]}, " +
      "{\"op\": \"aten.linear\", \"inputs\": [\"pf\", \"lwf\"], \"args\": {}, \"outputs\": "
      "[\"l\"]}, " +
      node(q, "l", q_args(0.125, 3), "y") + "]}";
  const SafetensorsFile weights = SafetensorsFile::from_bytes(
      serialize_safetensors({{"cw", "I8", {8, 8, 1, 1}, i8_ramp(64)},
                             {"cws", "F32", {8}, f32(std::vector<float>(8, 0.01f))},
                             {"lw", "I8", {5, 8}, i8_ramp(40)},
                             {"lws", "F32", {5}, f32(std::vector<float>(5, 0.02f))}}),
      "weights");
  const CompileResult r = compile_graph(parse_graph(json, "test", &weights), {});
  EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_conv2d_add", "q8ta_pixel_shuffle",
                                                       "q8ta_convert", "q8ta_linear"}));
  const std::string report = format_report(r);
  for (const char* line :
       {"fused dq -> aten.convolution -> aten.relu -> q (nodes 0, 2..4) into q8ta_conv2d 'c' "
        "(activation relu)",
        "fused dq, dq -> aten.add.Tensor -> aten.relu -> q (node 5..9) into the epilogue of "
        "q8ta_conv2d 'c': q8ta_conv2d_add adds 'xq' and writes 's' (activation relu)",
        "fused dq -> aten.pixel_shuffle -> q (node 10..12) into q8ta_pixel_shuffle 'p'",
        "fused dq -> aten.linear -> q (nodes 13, 15..16) into q8ta_linear 'y'",
        // the pixel shuffle writes 4W4C, the linear reads 4H4W only: the one forced conversion
        "conversion 'p' buffer 4W4C -> buffer 4H4W for node 15 (aten.linear) fused into "
        "q8ta_linear (reads {buffer 4H4W})",
        "folded 2 weight dequantize node(s)", "[placements]", "  p: int8x4 buffer 4W4C",
        "  y: int8x4 buffer 4H4W"}) {
    EXPECT_NE(report.find(line), std::string::npos) << line << "\n" << report;
  }
}

// ---- ops the backend cannot run: unknown ops and tensors above rank 4 ----------------------

const std::string kQ = "quantized_decomposed.quantize_per_tensor";
const std::string kDq = "quantized_decomposed.dequantize_per_tensor";

// Every partition blob is a model the runtime's loader accepts (same check as emit's).
void expect_valid_blobs(const PartitionedResult& r) {
  const auto table = vkd::schema::kernel_signatures();
  for (const CompileResult& part : r.parts) {
    ASSERT_TRUE(part.ok());
    EXPECT_NO_THROW(vkd::serialization::deserialize(part.blob, &table));
  }
}

std::vector<std::string> host_ops(const PartitionedResult& r) {
  std::vector<std::string> ops;
  for (const PartitionStep& s : r.plan.steps) {
    if (!s.delegate) ops.push_back(r.lowered.nodes[s.index].op);
  }
  return ops;
}

// q -> aten.frobnicate (no descriptor; its int8 output declared) -> dq.
std::string unknown_op_graph() {
  return "{\"vkd_graph\": 1, \"inputs\": [\"x\"], \"outputs\": [\"y\"],"
         " \"values\": {\"x\": {\"dtype\": \"float32\", \"shape\": [1, 4, 4, 4]},"
         "  \"f\": {\"dtype\": \"int8\", \"shape\": [1, 4, 4, 4]}},"
         " \"nodes\": [" +
         node(kQ, "x", q_args(0.5, 1), "xq") + ", " +
         node("aten.frobnicate", "xq", "{\"mode\": \"fast\", \"dims\": [1, 2]}", "f") + ", " +
         node(kDq, "f", q_args(0.5, 1), "y") + "]}";
}

TEST(Pipeline, UnknownOpIsListedAsUnsupportedWithoutPartition) {
  const CompileResult r = compile_graph(parse_graph(unknown_op_graph(), "test", nullptr), {});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.blob.empty());
  EXPECT_EQ(r.unsupported, std::vector<std::string>{
                               "node 1 (aten.frobnicate): not supported by the backend (no fusion "
                               "pattern or backend op for 'aten.frobnicate')"});
  try {
    r.throw_if_unsupported();
    ADD_FAILURE() << "expected Unsupported";
  } catch (const vkd::Error& e) {
    EXPECT_EQ(e.code(), vkd::ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("1 node(s) cannot be compiled:\n  node 1 "
                                         "(aten.frobnicate): not supported by the backend"),
              std::string::npos)
        << e.what();
  }
}

// Under --partition an op the host cannot run either (no CPU reference) makes the compile fail
// naming it, as the model loader would refuse the plan (host_refusal): no plan is made.
TEST(Pipeline, UnknownOpIsRefusedUnderPartition) {
  try {
    compile_partitioned(parse_graph(unknown_op_graph(), "test", nullptr), {});
    FAIL() << "expected Unsupported";
  } catch (const vkd::Error& e) {
    EXPECT_EQ(e.code(), vkd::ErrorCode::Unsupported);
    EXPECT_STREQ(
        e.what(),
        "1 node(s) can run neither on the backend nor on the host:\n  node 1 "
        "(aten.frobnicate): not supported by the backend (no fusion pattern or backend op "
        "for 'aten.frobnicate'); the host cannot run it: the CPU reference interpreter has "
        "no function for 'aten.frobnicate'");
  }
}

// A host step keeps its args in the plan (float hardtanh: its backend op 'clamp' has no kernel).
TEST(Pipeline, HostStepKeepsItsArgsInThePlan) {
  const std::string json =
      "{\"vkd_graph\": 1, \"inputs\": [\"x\"], \"outputs\": [\"y\"],"
      " \"values\": {\"x\": {\"dtype\": \"float32\", \"shape\": [1, 4, 4, 4]}},"
      " \"nodes\": [" +
      node(kQ, "x", q_args(0.5, 1), "xq") + ", " + node(kDq, "xq", q_args(0.5, 1), "xd") + ", " +
      node("aten.hardtanh", "xd", "{\"min_val\": -0.5, \"max_val\": 2.5}", "y") + "]}";
  const PartitionedResult r = compile_partitioned(parse_graph(json, "test", nullptr), {});
  EXPECT_EQ(host_ops(r), std::vector<std::string>{"aten.hardtanh"});
  expect_valid_blobs(r);
  const std::string plan = partition_plan_json(r, {"m.p0.vkd"});
  for (const char* part : {"\"host\": \"aten.hardtanh\"", "\"min_val\": -0.5", "\"max_val\": 2.5",
                           "\"origin\": \"node 2 (aten.hardtanh)\""}) {
    EXPECT_NE(plan.find(part), std::string::npos) << part << "\n" << plan;
  }
}

// A float add of a constant into a rank-5 result (beyond the device's tensors) runs on the host:
// the host step reads the constant, and the plan names the weights file's tensor it came from
// ("data"), which is what the host looks up.
TEST(Pipeline, PlanNamesTheWeightsTensorOfAHostStepsConstant) {
  const std::string json =
      "{\"vkd_graph\": 1, \"inputs\": [\"x\"], \"outputs\": [\"y\"],"
      " \"values\": {\"x\": {\"dtype\": \"float32\", \"shape\": [1, 4, 4, 4]},"
      "  \"b\": {\"dtype\": \"float32\", \"shape\": [1, 1, 4, 1, 1], \"data\": \"head.bias\"}},"
      " \"nodes\": [" +
      node(kQ, "x", q_args(0.25, 0), "xq") + ", " + node(kDq, "xq", q_args(0.25, 0), "xd") +
      ", "
      "{\"op\": \"aten.add.Tensor\", \"inputs\": [\"xd\", \"b\"], \"args\": {},"
      " \"outputs\": [\"y\"]}]}";
  const SafetensorsFile weights = SafetensorsFile::from_bytes(
      serialize_safetensors({{"head.bias", "F32", {1, 1, 4, 1, 1}, std::vector<uint8_t>(16)}}),
      "weights");
  const PartitionedResult r = compile_partitioned(parse_graph(json, "test", &weights), {});
  EXPECT_EQ(host_ops(r), std::vector<std::string>{"aten.add.Tensor"});
  const std::string plan = partition_plan_json(r, {"m.p0.vkd"});
  EXPECT_NE(plan.find("\"constant\": true,\n      \"data\": \"head.bias\""), std::string::npos)
      << plan;
}

// dq -> aten.view_copy (to 5-D) -> relu -> aten.view_copy (to 4-D) -> q: the relu reads and
// writes 5-D tensors, so it is no backend op whatever --partition says; the host runs it, the
// views and the dequantize (which sink_dequantize moves below the first view).
std::string rank5_graph() {
  const std::string f32_4 = "{\"dtype\": \"float32\", \"shape\": [1, 4, 4, 4]}";
  return "{\"vkd_graph\": 1, \"inputs\": [\"xq\"], \"outputs\": [\"y\"],"
         " \"values\": {\"xq\": {\"dtype\": \"int8\", \"shape\": [1, 4, 4, 4]},"
         "  \"u\": {\"dtype\": \"float32\", \"shape\": [1, 1, 4, 4, 4]}, \"s\": " +
         f32_4 +
         "},"
         " \"nodes\": [" +
         node(kDq, "xq", q_args(0.5, 1), "x") + ", " +
         node("aten.view_copy", "x", "{\"size\": [1, 1, 4, 4, 4]}", "u") + ", " +
         node("aten.relu", "u", "{}", "r") + ", " +
         node("aten.view_copy", "r", "{\"size\": [1, 4, 4, 4]}", "s") + ", " +
         node(kQ, "s", q_args(0.5, 1), "y") + "]}";
}

TEST(Pipeline, Rank5TensorIsNeverOnTheBackend) {
  const CompileResult r = compile_graph(parse_graph(rank5_graph(), "test", nullptr), {});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{"aten.view_copy", kDq, "aten.relu",
                                                       "aten.view_copy", "q8ta_quantize"}));
  const std::string rank5 =
      "node 2 (aten.relu): not supported by the backend (value 'u' has rank 5 ([1, 1, 4, 4, 4]);"
      " device tensors are at most 4-D)";
  EXPECT_NE(std::find(r.unsupported.begin(), r.unsupported.end(), rank5), r.unsupported.end());
  EXPECT_EQ(r.unsupported.size(), 4u);  // and the 5-D views and dequantize
  EXPECT_NE(format_report(r).find("kept node 2 (aten.relu) as an edge op: value 'u' has rank 5"),
            std::string::npos);

  const PartitionedResult p = compile_partitioned(parse_graph(rank5_graph(), "test", nullptr), {});
  EXPECT_EQ(host_ops(p),
            (std::vector<std::string>{"aten.view_copy", kDq, "aten.relu", "aten.view_copy"}));
  ASSERT_EQ(p.parts.size(), 1u);
  expect_valid_blobs(p);
  for (const Partition& part : p.plan.partitions) {
    for (const std::string& v : part.graph.value_names()) {
      EXPECT_LE(part.graph.value(v).shape.size(), 4u) << v;
    }
  }
}

// A quantized relu of int8 input xq into output y, with `inputs` / `outputs` besides them,
// `values` declared besides xq and `nodes` after the relu's.
std::string relu_beside(const std::string& inputs, const std::string& outputs,
                        const std::string& values, const std::string& nodes) {
  return "{\"vkd_graph\": 1, \"inputs\": [\"xq\"" + inputs + "], \"outputs\": [\"y\"" + outputs +
         "], \"values\": {\"xq\": {\"dtype\": \"int8\", \"shape\": [1, 4, 4, 4]}" + values +
         "}, \"nodes\": [" + node(kDq, "xq", q_args(0.5, 1), "x") + ", " +
         node("aten.relu", "x", "{}", "r") + ", " + node(kQ, "r", q_args(0.5, 1), "y") + nodes +
         "]}";
}

// A bool mask beside a quantized relu: the clone reading it is refused with the mask named (no
// device tensor is bool), the relu still lowers; under --partition the host cannot hold a bool
// either, so no plan is made.
TEST(Pipeline, BoolValueIsNeverOnTheBackendNorTheHost) {
  const std::string json = relu_beside(", \"m\"", ", \"c\"",
                                       ", \"m\": {\"dtype\": \"bool\", \"shape\": [1, 4]}, "
                                       "\"c\": {\"dtype\": \"bool\", \"shape\": [1, 4]}",
                                       ", " + node("aten.clone", "m", "{}", "c"));
  const CompileResult r = compile_graph(parse_graph(json, "test", nullptr), {});
  EXPECT_EQ(r.unsupported,
            std::vector<std::string>{"node 3 (aten.clone): not supported by the backend (value "
                                     "'m' is bool; device tensors are float32, float16, int8 "
                                     "or int32)"});
  const std::vector<std::string> ops = ops_of(r.graph);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "aten.relu"), 0);  // fused into a backend op
  try {
    compile_partitioned(parse_graph(json, "test", nullptr), {});
    ADD_FAILURE() << "a plan with a bool host step was made";
  } catch (const vkd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 3 (aten.clone): not supported by the backend "
                                         "(value 'm' is bool; device tensors are float32, "
                                         "float16, int8 or int32); the host cannot run it: its "
                                         "interpreter holds no bool tensor ('m')"),
              std::string::npos)
        << e.what();
  }
}

// A graph returning one of its constants (the exporter folds a weight's transpose into one):
// no device op writes it, so no blob (the runtime would refuse it); the output is named.
TEST(Pipeline, ConstantOutputIsRefusedByName) {
  const std::string json = relu_beside(
      "", ", \"w\"", ", \"w\": {\"dtype\": \"float32\", \"shape\": [4], \"data\": \"w\"}", "");
  const SafetensorsFile weights = SafetensorsFile::from_bytes(
      serialize_safetensors({{"w", "F32", {4}, std::vector<uint8_t>(16)}}), "weights");
  const CompileResult r = compile_graph(parse_graph(json, "test", &weights), {});
  EXPECT_EQ(r.unsupported, std::vector<std::string>{"output 'w': is a constant, which no "
                                                    "device op computes"});
  EXPECT_FALSE(r.ok());
}

// Two quantized branches joined by aten.cat, then cut by aten.chunk (the middle piece unread),
// from JSON to a blob: one q8ta_cat whose inputs share the output's placement (a value_list
// in the blob) and one q8ta_slice per piece read; the blob reads back through the validating
// deserializer.
TEST(Pipeline, CatAndChunkCompileToABlob) {
  const std::string dq = "quantized_decomposed.dequantize_per_tensor";
  const std::string q = "quantized_decomposed.quantize_per_tensor";
  const std::string json =
      "{\"vkd_graph\": 1, \"inputs\": [\"aq\", \"bq\"], \"outputs\": [\"y0\", \"y2\"],"
      " \"values\": {\"aq\": {\"dtype\": \"int8\", \"shape\": [1, 3, 4, 4]},"
      "              \"bq\": {\"dtype\": \"int8\", \"shape\": [1, 6, 4, 4]}},"
      " \"nodes\": [" +
      node(dq, "aq", q_args(0.5, 1), "a") + ", " + node(dq, "bq", q_args(0.25, -2), "b") + ", " +
      "{\"op\": \"aten.cat\", \"inputs\": [\"a\", \"b\"], \"args\": {\"dim\": 1}, "
      "\"outputs\": [\"c\"]}, " +
      node(q, "c", q_args(0.5, 1), "cq") + ", " + node(dq, "cq", q_args(0.5, 1), "cd") + ", " +
      "{\"op\": \"aten.chunk\", \"inputs\": [\"cd\"], \"args\": {\"chunks\": 3, \"dim\": 1}, "
      "\"outputs\": [\"k0\", \"k1\", \"k2\"]}, " +
      node(q, "k0", q_args(0.5, 1), "y0") + ", " + node(q, "k2", q_args(0.125, 0), "y2") + "]}";
  const CompileResult r = compile_graph(parse_graph(json, "test", nullptr), {});
  ASSERT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_cat", "q8ta_slice", "q8ta_slice"}))
      << format_report(r);
  for (const char* v : {"aq", "bq"}) {
    EXPECT_EQ(r.graph.value(v).layout, r.graph.value("cq").layout) << v;
  }
  const auto table = vkd::schema::kernel_signatures();
  const auto blob = vkd::serialization::deserialize(r.blob, &table);
  ASSERT_EQ(blob.ops.size(), 3u);
  EXPECT_EQ(blob.ops[0].name, "q8ta_cat");
  const auto* list =
      std::get_if<vkd::serialization::ValueListValue>(&blob.values.at(blob.ops[0].args.at(0)));
  ASSERT_NE(list, nullptr);
  EXPECT_EQ(list->items.size(), 2u);
}

// A batch cat and a batch chunk quantized alike: every part is a contiguous byte range, so the
// report says the cat's producers write in place and the slices are views (the runtime decides
// the same: test/unit/test_concat_errors.cpp); a channel cat in 4W4C copies (and a tensor shares
// the bytes of one other at most: test_concat_errors and the report agree on that too).
TEST(Pipeline, InPlaceReportNamesFreeCatsAndViews) {
  const std::string dq = "quantized_decomposed.dequantize_per_tensor";
  const std::string q = "quantized_decomposed.quantize_per_tensor";
  const std::string json =
      "{\"vkd_graph\": 1, \"inputs\": [\"aq\", \"bq\", \"eq\"],"
      " \"outputs\": [\"y0\", \"y2\", \"dq\"],"
      " \"values\": {\"aq\": {\"dtype\": \"int8\", \"shape\": [1, 5, 3, 4]},"
      "              \"bq\": {\"dtype\": \"int8\", \"shape\": [2, 5, 3, 4]},"
      "              \"eq\": {\"dtype\": \"int8\", \"shape\": [1, 5, 3, 4]}},"
      " \"nodes\": [" +
      node(dq, "aq", q_args(0.5, 1), "a") + ", " + node(dq, "bq", q_args(0.5, 1), "b") + ", " +
      "{\"op\": \"aten.cat\", \"inputs\": [\"a\", \"b\"], \"outputs\": [\"c\"]}, " +
      node(q, "c", q_args(0.5, 1), "cq") + ", " + node(dq, "cq", q_args(0.5, 1), "cd") + ", " +
      "{\"op\": \"aten.chunk\", \"inputs\": [\"cd\"], \"args\": {\"chunks\": 3}, "
      "\"outputs\": [\"k0\", \"k1\", \"k2\"]}, " +
      node(q, "k0", q_args(0.5, 1), "y0") + ", " + node(q, "k2", q_args(0.5, 1), "y2") + ", " +
      node(dq, "eq", q_args(0.5, 1), "a2") + ", " + node(dq, "eq", q_args(0.5, 1), "a3") + ", " +
      "{\"op\": \"aten.cat\", \"inputs\": [\"a2\", \"a3\"], \"args\": {\"dim\": 1}, "
      "\"outputs\": [\"d\"]}, " +
      node(q, "d", q_args(0.5, 1), "dq") + "]}";
  const CompileResult r = compile_graph(parse_graph(json, "test", nullptr), {});
  ASSERT_TRUE(r.ok()) << format_report(r);
  const std::string report = format_report(r);
  for (const char* line :
       {"[in place]\n"
        "  q8ta_cat 'cq': free: every input's producer writes it in place (contiguous parts in "
        "4W4C, where the device's buffer alignment allows)\n"
        "  q8ta_slice 'y0': free: a view of 'cq' from byte 0 (where the device's buffer "
        "alignment allows)\n"
        "  q8ta_slice 'y2': free: a view of 'cq' from byte 192 (where the device's buffer "
        "alignment allows)\n"
        "  q8ta_cat 'dq': copies its 2 input(s) (dim 1 of [1, 10, 3, 4] in 4W4C is cut into "
        "strided parts)\n"}) {
    EXPECT_NE(report.find(line), std::string::npos) << report;
  }
}

// JSON pieces of the joined-convolution graphs below: a per-channel weight dequantize of int8
// constant `w` (scales `w`s) into `w`f, a convolution (stride 1, dilation 1), and the values of
// weight `w` [C_out, ...] (`shape`) with its C_out scales.
std::string weight_dq_json(const std::string& w) {
  return "{\"op\": \"quantized_decomposed.dequantize_per_channel\", \"inputs\": [\"" + w +
         "\", \"" + w +
         "s\"], \"args\": {\"axis\": 0, \"quant_min\": -127, \"quant_max\": 127, "
         "\"dtype\": \"int8\"}, \"outputs\": [\"" +
         w + "f\"]}, ";
}

std::string conv_json(const std::string& in, const std::string& w, const std::string& out,
                      int padding, int groups) {
  const std::string p = std::to_string(padding);
  return "{\"op\": \"aten.convolution\", \"inputs\": [\"" + in + "\", \"" + w +
         "\"], \"args\": {\"stride\": [1, 1], \"padding\": [" + p + ", " + p +
         "], \"dilation\": [1, 1], \"transposed\": false, \"output_padding\": [0, 0], "
         "\"groups\": " +
         std::to_string(groups) + "}, \"outputs\": [\"" + out + "\"]}";
}

std::string weight_values_json(const std::string& w, const std::vector<int>& shape) {
  std::string dims;
  for (int d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  return ", \"" + w + "\": {\"dtype\": \"int8\", \"shape\": [" + dims + "], \"data\": \"" + w +
         "\"}, \"" + w + "s\": {\"dtype\": \"float32\", \"shape\": [" + std::to_string(shape[0]) +
         "], \"data\": \"" + w + "s\"}";
}

// A depthwise 3x3 over 8 channels of [1, 8, 4, 4] and the 1x1 8 -> 8 reading it, [after a
// 1x1 expansion 4 -> 8 of 'xq' [1, 4, 4, 4],] [then a host op: a view of 'y' to 5-D].
std::string depthwise_pointwise_json(bool expand, bool host_step) {
  // The expansion writes 'eq', which the depthwise reads; without it the depthwise reads 'xq'.
  const std::string dw_in = expand ? "eq" : "xq";
  std::string nodes;
  if (expand) {
    nodes = node(kDq, "xq", q_args(0.5, 1), "xi") + ", " + weight_dq_json("ew") +
            conv_json("xi", "ewf", "e", 0, 1) + ", " + node(kQ, "e", q_args(0.375, -2), "eq") +
            ", ";
  }
  nodes +=
      node(kDq, dw_in, expand ? q_args(0.375, -2) : q_args(0.5, 1), "x") + ", " +
      weight_dq_json("dw") + conv_json("x", "dwf", "m", 1, 8) + ", " +
      node(kQ, "m", q_args(0.25, -3), "mq") + ", " + node(kDq, "mq", q_args(0.25, -3), "mf") +
      ", " + weight_dq_json("pw") + conv_json("mf", "pwf", "p", 0, 1) + ", " +
      node(kQ, "p", q_args(0.125, 2), "y") +
      (host_step ? ", " + node("aten.view_copy", "y", "{\"size\": [1, 1, 8, 4, 4]}", "f") : "");
  return "{\"vkd_graph\": 1, \"inputs\": [\"xq\"], \"outputs\": [\"" +
         std::string(host_step ? "f" : "y") +
         "\"], \"values\": {\"xq\": {\"dtype\": \"int8\", "
         "\"shape\": [1, " +
         (expand ? "4" : "8") + ", 4, 4]}" + weight_values_json("dw", {8, 1, 3, 3}) +
         weight_values_json("pw", {8, 8, 1, 1}) +
         (expand ? weight_values_json("ew", {8, 4, 1, 1}) : "") +
         (host_step ? ", \"f\": {\"dtype\": \"int8\", \"shape\": [1, 1, 8, 4, 4]}" : "") +
         "}, \"nodes\": [" + nodes + "]}";
}

SafetensorsFile depthwise_pointwise_weights(bool expand) {
  std::vector<SafetensorsTensor> entries = {{"dw", "I8", {8, 1, 3, 3}, i8_ramp(72)},
                                            {"dws", "F32", {8}, f32(std::vector<float>(8, 0.01f))},
                                            {"pw", "I8", {8, 8, 1, 1}, i8_ramp(64)},
                                            {"pws", "F32", {8}, f32(std::vector<float>(8, 0.02f))}};
  if (expand) {
    entries.push_back({"ew", "I8", {8, 4, 1, 1}, i8_ramp(32)});
    entries.push_back({"ews", "F32", {8}, f32(std::vector<float>(8, 0.03f))});
  }
  return SafetensorsFile::from_bytes(serialize_safetensors(entries), "weights");
}

// The graph `json(false)` compiles to the one op `op`, its int8 tensors `int8` in 4W4C (the
// only placement it takes), the blob read back through the validating deserializer with the
// schema's `args` arguments; `json(true)`, the graph with a host step, under --partition puts
// the same op in the one partition beside the host step.
void expect_one_op_blob(const std::function<std::string(bool host_step)>& json,
                        const SafetensorsFile& weights, const std::string& op, size_t args,
                        const std::vector<std::string>& int8) {
  const CompileResult r = compile_graph(parse_graph(json(false), "test", &weights), {});
  ASSERT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{op})) << format_report(r);
  for (const std::string& v : int8) {
    EXPECT_EQ(r.graph.value(v).layout, vkd::MemoryLayout::PackedInt8_4W4C) << v;
  }
  const auto table = vkd::schema::kernel_signatures();
  const auto blob = vkd::serialization::deserialize(r.blob, &table);
  ASSERT_EQ(blob.ops.size(), 1u);
  EXPECT_EQ(blob.ops[0].name, op);
  EXPECT_EQ(blob.ops[0].args.size(), args);

  const PartitionedResult p = compile_partitioned(parse_graph(json(true), "test", &weights), {});
  EXPECT_EQ(host_ops(p), std::vector<std::string>{"aten.view_copy"});
  ASSERT_EQ(p.parts.size(), 1u);
  EXPECT_EQ(ops_of(p.parts[0].graph), (std::vector<std::string>{op}));
  expect_valid_blobs(p);
}

void expect_depthwise_pointwise_blob(bool expand, const std::string& op, size_t args) {
  expect_one_op_blob(
      [expand](bool host_step) { return depthwise_pointwise_json(expand, host_step); },
      depthwise_pointwise_weights(expand), op, args, {"xq", "y"});
}

// A depthwise 3x3 and the 1x1 reading it, from JSON to a blob: q8ta_conv2d_dw_pw, 21 arguments.
TEST(Pipeline, DepthwisePointwiseCompilesToABlob) {
  expect_depthwise_pointwise_blob(false, "q8ta_conv2d_dw_pw", 21);
}

// The 1x1 expansion before them joins too: q8ta_conv2d_pw_dw_pw, 28 arguments.
TEST(Pipeline, ExpansionDepthwisePointwiseCompilesToABlob) {
  expect_depthwise_pointwise_blob(true, "q8ta_conv2d_pw_dw_pw", 28);
}

// A 1x1 8 -> 16 of 'xq' [1, 8, 4, 4] pixel-shuffled by 2 into 'mq' [1, 4, 8, 8], the 1x1 head
// 4 -> 4 reading it and the graph's last dequantize: float32 'y' [1, 4, 8, 8]. With a host step,
// 'xq' is a host op's output, a view of the 5-D input 'x0' (a host op after 'y' would read the
// dequantize, which then is no last dequantize).
std::string shuffled_head_json(bool host_step) {
  const std::string nodes =
      (host_step ? node("aten.view_copy", "x0", "{\"size\": [1, 8, 4, 4]}", "xq") + ", " : "") +
      node(kDq, "xq", q_args(0.5, 1), "x") + ", " + weight_dq_json("sw") +
      conv_json("x", "swf", "s", 0, 1) + ", " + node(kQ, "s", q_args(0.25, -3), "sq") + ", " +
      node(kDq, "sq", q_args(0.25, -3), "sf") + ", " +
      node("aten.pixel_shuffle", "sf", "{\"upscale_factor\": 2}", "p") + ", " +
      node(kQ, "p", q_args(0.25, -3), "mq") + ", " + node(kDq, "mq", q_args(0.25, -3), "mf") +
      ", " + weight_dq_json("hw") + conv_json("mf", "hwf", "h", 0, 1) + ", " +
      node(kQ, "h", q_args(0.125, 2), "hq") + ", " + node(kDq, "hq", q_args(0.125, 2), "y");
  const std::string input = host_step ? "x0" : "xq";
  return "{\"vkd_graph\": 1, \"inputs\": [\"" + input +
         "\"], \"outputs\": [\"y\"], "
         "\"values\": {\"" +
         input + "\": {\"dtype\": \"int8\", \"shape\": [1, " + (host_step ? "1, " : "") +
         "8, 4, 4]}" +
         (host_step ? ", \"xq\": {\"dtype\": \"int8\", \"shape\": [1, 8, 4, 4]}" : "") +
         weight_values_json("sw", {16, 8, 1, 1}) + weight_values_json("hw", {4, 4, 1, 1}) +
         "}, \"nodes\": [" + nodes + "]}";
}

// The pixel-shuffled 1x1 and the dequantizing head reading it, from JSON to a blob:
// q8ta_conv2d_ps_pw_q_dq, 19 arguments, its float32 output in the width-packed buffer it writes.
TEST(Pipeline, ShuffledHeadCompilesToABlob) {
  const SafetensorsFile weights = SafetensorsFile::from_bytes(
      serialize_safetensors({{"sw", "I8", {16, 8, 1, 1}, i8_ramp(128)},
                             {"sws", "F32", {16}, f32(std::vector<float>(16, 0.01f))},
                             {"hw", "I8", {4, 4, 1, 1}, i8_ramp(16)},
                             {"hws", "F32", {4}, f32(std::vector<float>(4, 0.02f))}}),
      "weights");
  expect_one_op_blob(shuffled_head_json, weights, "q8ta_conv2d_ps_pw_q_dq", 19, {"xq"});
  const CompileResult r =
      compile_graph(parse_graph(shuffled_head_json(false), "test", &weights), {});
  ASSERT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(r.graph.value("y").dtype, vkd::DType::Float32);
  EXPECT_EQ(r.graph.value("y").layout, vkd::MemoryLayout::WidthPacked);
  EXPECT_FALSE(r.graph.has_value("mq"));
}

}  // namespace
