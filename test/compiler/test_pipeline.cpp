// The compile driver (compiler/Compiler.h) on graphs written here as JSON: how the
// passes work together, with exact node and conversion counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "compiler/Compiler.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"

namespace {

using namespace vkd::compiler;

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n.op);
  return ops;
}

std::string q_args(double scale, int zp) {
  return "{\"scale\": " + std::to_string(scale) + ", \"zero_point\": " + std::to_string(zp) +
         ", \"quant_min\": -128, \"quant_max\": 127, \"dtype\": \"int8\"}";
}

std::string node(const std::string& op, const std::string& in, const std::string& args,
                 const std::string& out) {
  return "{\"op\": \"" + op + "\", \"inputs\": [\"" + in + "\"], \"args\": " + args +
         ", \"outputs\": [\"" + out + "\"]}";
}

// Two quantized pixel shuffles with a float relu between them that no pattern absorbs: the
// relu stays a float op, fenced by a dequantize before and a quantize after, and no layout
// conversion is needed anywhere.
TEST(Pipeline, FloatOpBetweenTwoQuantizedOpsGetsDequantizeAndQuantizeAtItsBoundaries) {
  const std::string dq = "quantized_decomposed.dequantize_per_tensor";
  const std::string q = "quantized_decomposed.quantize_per_tensor";
  const std::string json =
      "{\"vkd_graph\": 1, \"inputs\": [\"xq\"], \"outputs\": [\"c\"],"
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
  const auto conversions = std::count_if(r.graph.nodes.begin(), r.graph.nodes.end(), [](const Node& n) {
    return n.op == "q8ta_convert" || n.op == "float_convert";
  });
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

// One graph with every fusion pattern: conv + relu, add + relu, pixel shuffle, linear. The
// report names each fusion and the final placement of every tensor.
TEST(Pipeline, ReportOnAGraphWithEveryFusionPattern) {
  const std::string dq = "quantized_decomposed.dequantize_per_tensor";
  const std::string dqc = "quantized_decomposed.dequantize_per_channel";
  const std::string q = "quantized_decomposed.quantize_per_tensor";
  const std::string wq = "{\"axis\": 0, \"quant_min\": -127, \"quant_max\": 127, \"dtype\": \"int8\"}";
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
      node(dq, "xq", q_args(0.5, 1), "x") + ", " +
      "{\"op\": \"" + dqc + "\", \"inputs\": [\"cw\", \"cws\"], \"args\": " + wq +
      ", \"outputs\": [\"cwf\"]}, " +
      "{\"op\": \"aten.convolution\", \"inputs\": [\"x\", \"cwf\"], \"args\": " + conv_args +
      ", \"outputs\": [\"cv\"]}, " + node("aten.relu", "cv", "{}", "cr") + ", " +
      node(q, "cr", q_args(0.25, -128), "c") + ", " + node(dq, "c", q_args(0.25, -128), "a1") +
      ", " + node(dq, "xq", q_args(0.5, 1), "a2") + ", " +
      "{\"op\": \"aten.add.Tensor\", \"inputs\": [\"a1\", \"a2\"], \"args\": {}, \"outputs\": "
      "[\"sm\"]}, " +
      node("aten.relu", "sm", "{}", "sr") + ", " + node(q, "sr", q_args(0.5, -128), "s") + ", " +
      node(dq, "s", q_args(0.5, -128), "sf") + ", " +
      node("aten.pixel_shuffle", "sf", "{\"upscale_factor\": 2}", "ps") + ", " +
      node(q, "ps", q_args(0.5, -128), "p") + ", " + node(dq, "p", q_args(0.5, -128), "pf") +
      ", " + "{\"op\": \"" + dqc + "\", \"inputs\": [\"lw\", \"lws\"], \"args\": " + wq +
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
  EXPECT_EQ(ops_of(r.graph), (std::vector<std::string>{"q8ta_conv2d", "q8ta_add",
                                                       "q8ta_pixel_shuffle", "q8ta_convert",
                                                       "q8ta_linear"}));
  const std::string report = format_report(r);
  for (const char* line :
       {"fused dq -> aten.convolution -> aten.relu -> q (nodes 0, 2..4) into q8ta_conv2d 'c' "
        "(activation relu)",
        "fused dq, dq -> aten.add.Tensor -> aten.relu -> q (node 5..9) into q8ta_add 's' "
        "(activation relu)",
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

}  // namespace
