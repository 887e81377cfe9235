// Lowering of torchao's affine quantization ops (compiler/fusion/LowerAffine.h) through the
// whole compiler (parse, shape inference, fuse_and_lower, layouts, emit): the backend op, its
// tensors in schema order and its args as the schema names them, the zeros zero point made for
// an absent one, the filled-in defaults, the placements, and every case that is refused (an
// error naming the node, or under runnable_only an edge op left for the host).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "compiler/Compiler.h"
#include "compiler/Fuse.h"
#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "compiler/ShapeInference.h"
#include "core/Error.h"

namespace {

using namespace vkd::compiler;
using vkd::DType;
using vkd::MemoryLayout;
using vkd::StorageType;

std::vector<uint8_t> f32(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<uint8_t> i64(const std::vector<int64_t>& v) {
  std::vector<uint8_t> out(v.size() * 8);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<int32_t> i32_of(const Value& v) {
  EXPECT_TRUE(v.data.has_value()) << v.name;
  if (!v.data) return {};
  std::vector<int32_t> out(v.data->size() / 4);
  std::memcpy(out.data(), v.data->data(), out.size() * 4);
  return out;
}

// x [2, 8] (float input), per-group constants for block [1, 4]: gs [2, 2] float32, gz [2, 2]
// int64 (narrowed to int32 by the parser).
const SafetensorsFile& weights() {
  static const SafetensorsFile w = SafetensorsFile::from_bytes(
      serialize_safetensors({{"gs", "F32", {2, 2}, f32({0.5f, 0.25f, 0.125f, 1.0f})},
                             {"gz", "I64", {2, 2}, i64({3, -4, 0, 7})}}),
      "weights");
  return w;
}

std::string graph(const std::string& nodes, const std::string& outputs) {
  return "{\"vkd_graph\": 1, \"inputs\": [\"x\"], \"outputs\": [" + outputs +
         "],"
         " \"values\": {\"x\": {\"dtype\": \"float32\", \"shape\": [2, 8]},"
         "  \"gs\": {\"dtype\": \"float32\", \"shape\": [2, 2], \"data\": \"gs\"},"
         "  \"gz\": {\"dtype\": \"int64\", \"shape\": [2, 2], \"data\": \"gz\"}},"
         " \"nodes\": [" +
         nodes + "]}";
}

std::string quantize(const std::string& in, const std::string& args, const std::string& out) {
  return "{\"op\": \"torchao.quantize_affine\", \"inputs\": [" + in + "], \"args\": {" + args +
         "}, \"outputs\": [\"" + out + "\"]}";
}
std::string dequantize(const std::string& in, const std::string& args, const std::string& out) {
  return "{\"op\": \"torchao.dequantize_affine\", \"inputs\": [" + in + "], \"args\": {" + args +
         "}, \"outputs\": [\"" + out + "\"]}";
}
std::string choose(const std::string& args, const std::string& s, const std::string& z) {
  return "{\"op\": \"torchao.choose_qparams_affine\", \"inputs\": [\"x\"], \"args\": {" + args +
         "}, \"outputs\": [\"" + s + "\", \"" + z + "\"]}";
}
const std::string kQArgs =
    "\"block_size\": [1, 4], \"output_dtype\": \"int8\", \"quant_min\": -128, \"quant_max\": 127";
const std::string kDqArgs =
    "\"block_size\": [1, 4], \"input_dtype\": \"int8\", \"quant_min\": -128, \"quant_max\": 127";
std::string choose_args(const std::string& mapping, const std::string& eps = "null",
                        const std::string& extra = "") {
  return "\"mapping_type\": \"" + mapping +
         "\", \"block_size\": [1, 4], \"target_dtype\": "
         "\"int8\", \"quant_min\": -128, \"quant_max\": 127, \"eps\": " +
         eps + extra;
}

CompileResult compile(const std::string& json) {
  return compile_graph(parse_graph(json, "test", &weights()), {});
}

bool has_line(const CompileResult& r, const std::string& text) {
  for (const auto& rep : r.reports) {
    for (const auto& line : rep.lines) {
      if (line.find(text) != std::string::npos) return true;
    }
  }
  return false;
}

void expect_placement(const Graph& g, const std::string& v, StorageType s, MemoryLayout l) {
  const Value& val = g.value(v);
  ASSERT_TRUE(val.storage && val.layout) << v;
  EXPECT_EQ(*val.storage, s) << v;
  EXPECT_EQ(*val.layout, l) << v;
}

// Compiling `json` throws Unsupported whose message contains `what`.
void expect_refused(const std::string& json, const std::string& what) {
  try {
    compile(json);
    ADD_FAILURE() << "compiled; expected an error containing: " << what;
  } catch (const vkd::Error& e) {
    EXPECT_EQ(e.code(), vkd::ErrorCode::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(LowerAffine, QuantizeDequantizeWithConstantQparams) {
  const CompileResult r = compile(graph(quantize("\"x\", \"gs\", \"gz\"", kQArgs, "xq") + ", " +
                                            dequantize("\"xq\", \"gs\", \"gz\"", kDqArgs, "y"),
                                        "\"y\""));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.blob.empty());  // emitted and read back by the deserializer
  const Graph& g = r.graph;
  ASSERT_EQ(g.nodes.size(), 2u);
  const Node& q = g.nodes[0];
  EXPECT_EQ(q.op, "q8ta_quantize_affine");
  EXPECT_EQ(q.inputs, (std::vector<std::string>{"x", "gs", "gz"}));
  EXPECT_EQ(q.outputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(q.args, (Args{{"block_size", std::vector<int64_t>{1, 4}},
                          {"quant_min", int64_t{-128}},
                          {"quant_max", int64_t{127}}}));
  EXPECT_EQ(q.origin, "node 0 (torchao.quantize_affine)");
  const Node& dq = g.nodes[1];
  EXPECT_EQ(dq.op, "q8ta_dequantize_affine");
  EXPECT_EQ(dq.inputs, (std::vector<std::string>{"xq", "gs", "gz"}));
  EXPECT_EQ(dq.args, q.args);
  // The int64 zero points arrive as int32 with their values.
  EXPECT_EQ(g.value("gz").dtype, DType::Int32);
  EXPECT_EQ(i32_of(g.value("gz")), (std::vector<int32_t>{3, -4, 0, 7}));
  // Per-block qparams: the int8 tensor is int8x4 with no per-tensor quantization, and that is
  // not reported as missing.
  EXPECT_EQ(g.value("xq").dtype, DType::Int8x4);
  EXPECT_FALSE(g.value("xq").quant.has_value());
  EXPECT_FALSE(has_line(r, "no quantization parameters"));
  EXPECT_TRUE(has_line(r, "lowered 2 node(s): 1 q8ta_dequantize_affine, 1 q8ta_quantize_affine"));
  // Placements: int8 side 4H4W (preferred), float side and qparams width-packed buffers; no
  // conversion needed.
  expect_placement(g, "xq", StorageType::Buffer, MemoryLayout::PackedInt8_4H4W);
  for (const char* v : {"x", "y", "gs", "gz"}) {
    expect_placement(g, v, StorageType::Buffer, MemoryLayout::WidthPacked);
  }
}

TEST(LowerAffine, AbsentZeroPointBecomesOneZerosConstantPerScale) {
  // quant_min / quant_max None: the int8 range.
  const std::string q_args =
      "\"block_size\": [1, 4], \"output_dtype\": \"int8\", \"quant_min\": null, \"quant_max\": "
      "null";
  const std::string dq_args =
      "\"block_size\": [1, 4], \"input_dtype\": \"int8\", \"quant_min\": null, \"quant_max\": null";
  const CompileResult r = compile(graph(quantize("\"x\", \"gs\"", q_args, "xq") + ", " +
                                            dequantize("\"xq\", \"gs\", \"\"", dq_args, "y"),
                                        "\"y\""));
  ASSERT_TRUE(r.ok());
  const Graph& g = r.graph;
  ASSERT_EQ(g.nodes.size(), 2u);
  const std::string zp = g.nodes[0].inputs.at(2);
  EXPECT_EQ(zp, "gs_zero_point");
  EXPECT_EQ(g.nodes[1].inputs.at(2), zp);  // shared by the pair
  const Value& z = g.value(zp);
  EXPECT_EQ(z.dtype, DType::Int32);
  EXPECT_EQ(z.shape, (std::vector<int64_t>{2, 2}));  // one per block, laid out like the scale
  EXPECT_EQ(i32_of(z), (std::vector<int32_t>{0, 0, 0, 0}));
  expect_placement(g, zp, StorageType::Buffer, MemoryLayout::WidthPacked);
  EXPECT_EQ(std::get<int64_t>(g.nodes[0].args.at("quant_min")), -128);
  EXPECT_EQ(std::get<int64_t>(g.nodes[1].args.at("quant_max")), 127);
}

// torchao >= 0.18's keepdim: true keeps the reduced dims as 1 ([2, 1] for x [2, 8] per row),
// false drops them ([2]), as torchao returns the scale and zero point; either feeds the
// quantize and dequantize (their scale is read by element count).
TEST(LowerAffine, ChooseQparamsKeepdim) {
  const std::string row = "\"block_size\": [1, 8], ";
  for (const bool keepdim : {true, false}) {
    const std::string args = "\"mapping_type\": \"SYMMETRIC\", " + row +
                             "\"target_dtype\": \"int8\", \"quant_min\": -128, \"quant_max\": "
                             "127, \"eps\": null, \"keepdim\": " +
                             (keepdim ? "true" : "false");
    const std::string range = row + "\"quant_min\": -128, \"quant_max\": 127";
    const CompileResult r = compile(graph(
        choose(args, "s", "z") + ", " +
            quantize("\"x\", \"s\", \"z\"", range + ", \"output_dtype\": \"int8\"", "xq") + ", " +
            dequantize("\"xq\", \"s\", \"z\"", range + ", \"input_dtype\": \"int8\"", "y"),
        "\"y\""));
    ASSERT_TRUE(r.ok()) << keepdim;
    const std::vector<int64_t> shape =
        keepdim ? std::vector<int64_t>{2, 1} : std::vector<int64_t>{2};
    EXPECT_EQ(r.graph.value("s").shape, shape) << keepdim;
    EXPECT_EQ(r.graph.value("z").shape, shape) << keepdim;
    EXPECT_EQ(r.graph.nodes[0].op, "choose_qparams_affine");
  }
}

TEST(LowerAffine, ChooseQparamsMappingTypesAndEps) {
  const struct {
    std::string mapping;
    int64_t code;
  } cases[] = {{"SYMMETRIC", 0}, {"SYMMETRIC_NO_CLIPPING_ERR", 1}, {"ASYMMETRIC", 2}};
  for (const auto& c : cases) {
    const CompileResult r = compile(graph(choose(choose_args(c.mapping), "s", "z") + ", " +
                                              quantize("\"x\", \"s\", \"z\"", kQArgs, "xq") + ", " +
                                              dequantize("\"xq\", \"s\", \"z\"", kDqArgs, "y"),
                                          "\"y\""));
    ASSERT_TRUE(r.ok()) << c.mapping;
    const Graph& g = r.graph;
    ASSERT_EQ(g.nodes.size(), 3u);
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.op, "choose_qparams_affine");
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"x"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"s", "z"}));
    // eps None: torch.finfo(torch.float32).eps.
    EXPECT_EQ(n.args, (Args{{"mapping_type", c.code},
                            {"block_size", std::vector<int64_t>{1, 4}},
                            {"quant_min", int64_t{-128}},
                            {"quant_max", int64_t{127}},
                            {"eps", double{std::numeric_limits<float>::epsilon()}}}))
        << c.mapping;
    EXPECT_EQ(g.value("s").dtype, DType::Float32);
    EXPECT_EQ(g.value("z").dtype, DType::Int32);
    EXPECT_EQ(g.value("s").shape, (std::vector<int64_t>{2, 2}));
    for (const char* v : {"s", "z"}) {
      expect_placement(g, v, StorageType::Buffer, MemoryLayout::WidthPacked);
    }
    EXPECT_EQ(g.nodes[1].inputs, (std::vector<std::string>{"x", "s", "z"}));
  }
  // A given eps, and an explicit INT domain (torchao's enum spelling) / preserve_zero.
  const CompileResult r = compile(graph(
      choose(
          choose_args("ASYMMETRIC", "0.001",
                      ", \"preserve_zero\": true, \"zero_point_domain\": \"ZeroPointDomain.INT\""),
          "s", "z"),
      "\"s\", \"z\""));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<int64_t>(r.graph.nodes[0].args.at("mapping_type")), 2);
  EXPECT_EQ(std::get<double>(r.graph.nodes[0].args.at("eps")), 0.001);
}

TEST(LowerAffine, RefusedWithTheNodeNamed) {
  expect_refused(
      graph(choose(choose_args("ASYMMETRIC", "null", ", \"preserve_zero\": false"), "s", "z"),
            "\"s\", \"z\""),
      "node 0 (torchao.choose_qparams_affine): cannot lower to choose_qparams_affine: "
      "preserve_zero = false is not supported");
  expect_refused(graph(choose(choose_args("SYMMETRIC", "null",
                                          ", \"zero_point_domain\": \"ZeroPointDomain.FLOAT\""),
                              "s", "z"),
                       "\"s\", \"z\""),
                 "node 0 (torchao.choose_qparams_affine): cannot lower to choose_qparams_affine: "
                 "zero_point_domain FLOAT is not supported");
  expect_refused(
      graph(quantize("\"x\", \"gs\", \"gz\"", kQArgs + ", \"zero_point_domain\": \"NONE\"", "xq"),
            "\"xq\""),
      "node 0 (torchao.quantize_affine): cannot lower to q8ta_quantize_affine: "
      "zero_point_domain NONE is not supported");
  expect_refused(graph(choose(choose_args("ASYMMETRIC", "0"), "s", "z"), "\"s\", \"z\""),
                 "node 0 (torchao.choose_qparams_affine): cannot lower to choose_qparams_affine: "
                 "eps 0");
  // An int8 constant is not an int8x4 activation: the backend op cannot dequantize it.
  const SafetensorsFile w = SafetensorsFile::from_bytes(
      serialize_safetensors({{"wq", "I8", {2, 8}, std::vector<uint8_t>(16, 3)},
                             {"gs", "F32", {2, 2}, f32({0.5f, 0.25f, 0.125f, 1.0f})}}),
      "weights");
  const std::string json =
      "{\"vkd_graph\": 1, \"inputs\": [], \"outputs\": [\"y\"],"
      " \"values\": {\"wq\": {\"dtype\": \"int8\", \"shape\": [2, 8], \"data\": \"wq\"},"
      "  \"gs\": {\"dtype\": \"float32\", \"shape\": [2, 2], \"data\": \"gs\"}},"
      " \"nodes\": [" +
      dequantize("\"wq\", \"gs\"", kDqArgs, "y") + "]}";
  try {
    compile_graph(parse_graph(json, "test", &w), {});
    ADD_FAILURE() << "compiled a dequantize_affine of an int8 constant";
  } catch (const vkd::Error& e) {
    EXPECT_EQ(e.code(), vkd::ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("node 0 (torchao.dequantize_affine): cannot lower to "
                                         "q8ta_dequantize_affine: input 'wq' is an int8 constant"),
              std::string::npos)
        << e.what();
  }
}

TEST(LowerAffine, RunnableOnlyLeavesARefusedNodeForTheHost) {
  Graph g = parse_graph(
      graph(choose(choose_args("ASYMMETRIC", "null", ", \"preserve_zero\": false"), "s", "z") +
                ", " + quantize("\"x\", \"s\", \"z\"", kQArgs, "xq"),
            "\"xq\""),
      "test", &weights());
  infer_shapes(g);
  const PassReport report = fuse_and_lower(g, FuseOptions{true});
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "torchao.choose_qparams_affine");  // kept as given
  EXPECT_FALSE(std::get<bool>(g.nodes[0].args.at("preserve_zero")));
  EXPECT_EQ(g.nodes[1].op, "q8ta_quantize_affine");
  bool noted = false;
  for (const auto& line : report.lines) {
    noted |= line ==
             "not lowered: node 0 (torchao.choose_qparams_affine) as "
             "choose_qparams_affine: preserve_zero = false is not supported (zero must "
             "stay exactly representable)";
  }
  EXPECT_TRUE(noted);
}

}  // namespace
