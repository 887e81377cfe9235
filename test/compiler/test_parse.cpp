// The graph IR reader (compiler/Parse.h) and the safetensors reader/writer: a valid
// graph using every accepted op, and one test per rejected input, each checking the message
// names the node/value and the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "core/Error.h"

namespace vkd::compiler {
namespace {

// ---- helpers --------------------------------------------------------------------------------

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<uint8_t> i64_bytes(const std::vector<int64_t>& v) {
  std::vector<uint8_t> out;
  for (int64_t x : v) {
    const uint64_t u = static_cast<uint64_t>(x);
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>(u >> (8 * b)));
  }
  return out;
}

std::vector<uint8_t> i8_bytes(size_t n) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(static_cast<int8_t>(i % 7) - 3);
  return out;
}

std::vector<float> iota_f32(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.25f * static_cast<float>(i);
  return v;
}

int32_t read_i32(const std::vector<uint8_t>& bytes, size_t i) {
  int32_t v = 0;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

SafetensorsFile make_weights(const std::vector<SafetensorsTensor>& tensors) {
  return SafetensorsFile::from_bytes(serialize_safetensors(tensors), "w.safetensors");
}

// Expects `fn` to throw vkd::Error(InvalidArgument) whose message contains every part.
template <typename Fn>
void expect_error(Fn fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << *parts.begin() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    const std::string msg = e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    }
  }
}

void expect_parse_error(const std::string& json, const SafetensorsFile* weights,
                        std::initializer_list<std::string> parts) {
  expect_error([&] { parse_graph(json, "g.json", weights); }, parts);
}

// A graph document with input x [1, 4, 8, 8] float32 and output y.
std::string doc(const std::string& extra_values, const std::string& nodes,
                const std::string& outputs = R"(["y"])") {
  return R"({"vkd_graph": 1, "inputs": ["x"], "outputs": )" + outputs +
         R"(, "values": {"x": {"dtype": "float32", "shape": [1, 4, 8, 8]})" +
         (extra_values.empty() ? "" : ", " + extra_values) + R"(}, "nodes": [)" + nodes + "]}";
}

const char* kRelu = R"({"op": "aten.relu", "inputs": ["x"], "outputs": ["y"]})";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("vkd_test_parse_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// ---- the valid graph: every op of the README table ------------------------------------------

const char* kEveryOp = R"({
  "vkd_graph": 1,
  "inputs": ["x"],
  "outputs": ["da", "m"],
  "values": {
    "x":     {"dtype": "float32", "shape": [1, 3, 8, 8]},
    "w1":    {"dtype": "int8",    "shape": [4, 3, 3, 3], "data": "conv1.weight"},
    "s1":    {"dtype": "float32", "shape": [4],          "data": "conv1.weight_scale"},
    "zp1":   {"dtype": "int64",   "shape": [4],          "data": "conv1.weight_zero_point"},
    "b1":    {"dtype": "float32", "shape": [4],          "data": "conv1.bias"},
    "bias4": {"dtype": "float32", "shape": [1, 4, 1, 1], "data": "bias4"},
    "wl":    {"dtype": "float32", "shape": [5, 1],       "data": "fc.weight"},
    "bl":    {"dtype": "float32", "shape": [5],          "data": "fc.bias"},
    "c1":    {"dtype": "float32", "shape": [1, 4, 4, 4]}
  },
  "nodes": [
    {"op": "quantized_decomposed.quantize_per_tensor", "inputs": ["x"],
     "args": {"scale": 0.02, "zero_point": 3, "quant_min": -128, "quant_max": 127, "dtype": "int8"},
     "outputs": ["xq"]},
    {"op": "quantized_decomposed.dequantize_per_tensor", "inputs": ["xq"],
     "args": {"scale": 0.02, "zero_point": 3, "quant_min": -128, "quant_max": 127, "dtype": "int8",
              "out_dtype": null},
     "outputs": ["xd"]},
    {"op": "quantized_decomposed.dequantize_per_channel", "inputs": ["w1", "s1", "zp1"],
     "args": {"axis": 0, "quant_min": -127, "quant_max": 127, "dtype": "int8"},
     "outputs": ["w1d"]},
    {"op": "aten.convolution", "inputs": ["xd", "w1d", "b1"],
     "args": {"stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "transposed": false,
              "output_padding": [0, 0], "groups": 1},
     "outputs": ["c1"]},
    {"op": "aten.relu", "inputs": ["c1"], "outputs": ["r1"]},
    {"op": "aten.hardtanh", "inputs": ["r1"], "args": {"min_val": 0, "max_val": 6.0},
     "outputs": ["h1"]},
    {"op": "aten.clamp", "inputs": ["h1"], "args": {"min": 0.0, "max": null}, "outputs": ["cl"]},
    {"op": "aten.add.Tensor", "inputs": ["cl", "bias4"], "outputs": ["a1"]},
    {"op": "aten.mul.Tensor", "inputs": ["bias4", "a1"], "outputs": ["mt"]},
    {"op": "aten.mul.Scalar", "inputs": ["a1"], "args": {"other": -0.5}, "outputs": ["ms"]},
    {"op": "aten.rsub.Scalar", "inputs": ["a1"], "args": {"other": 1.0}, "outputs": ["rs"]},
    {"op": "aten.avg_pool2d", "inputs": ["a1"],
     "args": {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": true,
              "count_include_pad": false, "divisor_override": null},
     "outputs": ["avp"]},
    {"op": "aten.pixel_shuffle", "inputs": ["a1"], "args": {"upscale_factor": 2},
     "outputs": ["ps"]},
    {"op": "aten.max_pool2d", "inputs": ["ps"],
     "args": {"kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": true},
     "outputs": ["mp"]},
    {"op": "aten.mean.dim", "inputs": ["mp"], "args": {"dim": [-1, -2], "keepdim": true},
     "outputs": ["m"]},
    {"op": "aten.adaptive_avg_pool2d", "inputs": ["ps"], "args": {"output_size": [1, 1]},
     "outputs": ["ap"]},
    {"op": "aten.view_copy", "inputs": ["ap"], "args": {"size": [1, -1]}, "outputs": ["v"]},
    {"op": "aten.linear", "inputs": ["v", "wl", "bl"], "outputs": ["l"]},
    {"op": "aten.clone", "inputs": ["l"], "args": {"memory_format": null}, "outputs": ["cln"]},
    {"op": "aten.alias_copy", "inputs": ["cln"], "outputs": ["al"]},
    {"op": "aten._clone_dim_order", "inputs": ["al"], "args": {"dim_order": [0, 1]},
     "outputs": ["cd"]},
    {"op": "torchao.choose_qparams_affine", "inputs": ["cd"],
     "args": {"mapping_type": "ASYMMETRIC", "block_size": [1, 5], "target_dtype": "int8",
              "quant_min": -128, "quant_max": 127, "eps": 1e-6, "scale_dtype": "float32",
              "zero_point_dtype": "int32"},
     "outputs": ["sc", "zp"]},
    {"op": "torchao.quantize_affine", "inputs": ["cd", "sc", "zp"],
     "args": {"block_size": [1, 5], "output_dtype": "int8", "quant_min": -128, "quant_max": 127},
     "outputs": ["qa"]},
    {"op": "torchao.dequantize_affine", "inputs": ["qa", "sc", "zp"],
     "args": {"block_size": [1, 5], "input_dtype": "int8", "quant_min": -128, "quant_max": 127,
              "output_dtype": "float32"},
     "outputs": ["da"]},
    {"op": "aten.hardswish", "inputs": ["da"], "outputs": ["hsw"]},
    {"op": "aten.hardsigmoid", "inputs": ["hsw"], "outputs": ["hsg"]},
    {"op": "aten.sigmoid", "inputs": ["hsg"], "outputs": ["sg"]},
    {"op": "aten.tanh", "inputs": ["sg"], "outputs": ["th"]},
    {"op": "aten.silu", "inputs": ["th"], "outputs": ["sl"]},
    {"op": "aten.gelu", "inputs": ["sl"], "args": {"approximate": "tanh"}, "outputs": ["ge"]},
    {"op": "aten.elu", "inputs": ["ge"], "args": {"alpha": 0.5}, "outputs": ["el"]},
    {"op": "aten.leaky_relu", "inputs": ["el"], "args": {"negative_slope": 0.1},
     "outputs": ["lr"]},
    {"op": "aten._softmax", "inputs": ["lr"], "args": {"dim": -1, "half_to_float": false},
     "outputs": ["sm"]},
    {"op": "aten._log_softmax", "inputs": ["sm"], "args": {"dim": 0}, "outputs": ["lsm"]},
    {"op": "aten.softmax.int", "inputs": ["lsm"], "args": {"dim": 1, "dtype": null},
     "outputs": ["smi"]},
    {"op": "aten.log_softmax.int", "inputs": ["smi"], "args": {"dim": -2}, "outputs": ["lsmi"]},
    {"op": "aten.cat", "inputs": ["cd", "cln", "cd"], "args": {"dim": -1}, "outputs": ["cat"]},
    {"op": "aten.split_with_sizes_copy", "inputs": ["cat"],
     "args": {"split_sizes": [4, 11], "dim": -1}, "outputs": ["sws0", "sws1"]},
    {"op": "aten.split_copy.Tensor", "inputs": ["cat"], "args": {"split_size": 4, "dim": 1},
     "outputs": ["spl0", "spl1", "spl2", "spl3"]},
    {"op": "aten.chunk", "inputs": ["cat"], "args": {"chunks": 4, "dim": -1},
     "outputs": ["chk0", "chk1", "chk2", "chk3"]},
    {"op": "aten.slice_copy.Tensor", "inputs": ["cat"],
     "args": {"dim": 1, "start": -7, "end": null, "step": 2}, "outputs": ["slc"]},
    {"op": "aten.permute_copy", "inputs": ["ps"], "args": {"dims": [0, 2, 3, 1]},
     "outputs": ["pm"]},
    {"op": "aten.permute", "inputs": ["pm"], "args": {"dims": [-1, 0, 1, 2]}, "outputs": ["pm2"]},
    {"op": "aten.transpose.int", "inputs": ["mp"], "args": {"dim0": 1, "dim1": -1},
     "outputs": ["tr"]},
    {"op": "aten.view_copy", "inputs": ["ps"], "args": {"size": [1, 1, 2, 4, 8]},
     "outputs": ["v5"]},
    {"op": "aten.transpose_copy.int", "inputs": ["v5"], "args": {"dim0": 2, "dim1": 3},
     "outputs": ["tr5"]},
    {"op": "aten.upsample_nearest2d.vec", "inputs": ["ps"],
     "args": {"output_size": null, "scale_factors": [2.0, 1.5]}, "outputs": ["unv"]},
    {"op": "aten.upsample_nearest2d", "inputs": ["ps"], "args": {"output_size": [3, 5]},
     "outputs": ["un"]},
    {"op": "aten.upsample_bilinear2d.vec", "inputs": ["ps"],
     "args": {"output_size": [9, 7], "align_corners": true, "scale_factors": null},
     "outputs": ["ubv"]},
    {"op": "aten.upsample_bilinear2d", "inputs": ["ps"],
     "args": {"output_size": [16, 16], "align_corners": false, "scales_h": 2.0, "scales_w": 2},
     "outputs": ["ub"]},
    {"op": "aten.layer_norm", "inputs": ["cd"], "args": {"normalized_shape": [5], "eps": 1e-5},
     "outputs": ["lnm"]},
    {"op": "aten.view_copy", "inputs": ["lnm"], "args": {"size": [1, 5, 1]}, "outputs": ["seq"]},
    {"op": "aten.view_copy", "inputs": ["spl3"], "args": {"size": [3, 1]}, "outputs": ["qkvw"]},
    {"op": "aten.view_copy", "inputs": ["spl3"], "args": {"size": [3]}, "outputs": ["qkvb"]},
    {"op": "aten.view_copy", "inputs": ["m"], "args": {"size": [1]}, "outputs": ["pb"]},
    {"op": "aten._native_multi_head_attention",
     "inputs": ["seq", "seq", "seq", "qkvw", "qkvb", "v", "pb"],
     "args": {"embed_dim": 1, "num_head": 1, "need_weights": true,
              "average_attn_weights": false},
     "outputs": ["att", "attw"]},
    {"op": "aten.scaled_dot_product_attention", "inputs": ["seq", "seq", "seq"],
     "args": {"scale": 0.5}, "outputs": ["sdpa"]},
    {"op": "aten.embedding", "inputs": ["wl", "zp1"], "args": {"padding_idx": 0},
     "outputs": ["emb"]},
    {"op": "aten.dropout", "inputs": ["cd"], "args": {"p": 0.5, "train": false},
     "outputs": ["dr"]},
    {"op": "aten.alpha_dropout", "inputs": ["dr"], "args": {"p": 0.1, "train": false},
     "outputs": ["adr"]},
    {"op": "aten.feature_dropout", "inputs": ["ps"], "args": {"p": 0.1, "train": false},
     "outputs": ["fdr"]},
    {"op": "aten.feature_alpha_dropout", "inputs": ["fdr"], "args": {"p": 0.0, "train": true},
     "outputs": ["fadr"]},
    {"op": "aten.stochastic_depth", "inputs": ["fadr"],
     "args": {"p": 0.2, "mode": "row", "training": false}, "outputs": ["sd"]},
    {"op": "aten.batch_norm", "inputs": ["c1", "b1", "", "b1", "s1"],
     "args": {"training": false, "momentum": 0.1, "eps": 1e-5, "cudnn_enabled": true},
     "outputs": ["bn"]},
    {"op": "aten._native_batch_norm_legit_no_training", "inputs": ["bn", "", "b1", "b1", "s1"],
     "args": {"momentum": 0.1, "eps": 1e-3}, "outputs": ["bnl", "bnm", "bnv"]},
    {"op": "aten.to.dtype", "inputs": ["cd"], "args": {"dtype": "float32"}, "outputs": ["tod"]},
    {"op": "aten.sum.dim_IntList", "inputs": ["seq"], "args": {"dim": [1]}, "outputs": ["sum"]},
    {"op": "aten.linalg_vector_norm", "inputs": ["tod"],
     "args": {"ord": 2, "dim": [-1], "keepdim": true}, "outputs": ["nrm"]},
    {"op": "aten.clamp_min", "inputs": ["nrm"], "args": {"min": 1e-12}, "outputs": ["cmn"]},
    {"op": "aten.expand_as", "inputs": ["cmn", "tod"], "outputs": ["exa"]},
    {"op": "aten.div.Tensor", "inputs": ["tod", "exa"], "outputs": ["dvt"]}
  ]
})";

std::vector<SafetensorsTensor> every_op_tensors() {
  return {
      {"conv1.weight", "I8", {4, 3, 3, 3}, i8_bytes(108)},
      {"conv1.weight_scale", "F32", {4}, f32_bytes({0.5f, 0.25f, 0.125f, 1.0f})},
      {"conv1.weight_zero_point", "I64", {4}, i64_bytes({0, -3, 5, 127})},
      {"conv1.bias", "F32", {4}, f32_bytes({1, 2, 3, 4})},
      {"bias4", "F32", {1, 4, 1, 1}, f32_bytes({-1, -2, -3, -4})},
      {"fc.weight", "F32", {5, 1}, f32_bytes(iota_f32(5))},
      {"fc.bias", "F32", {5}, f32_bytes(iota_f32(5))},
      {"unused.tensor", "F16", {2}, {0, 0, 0, 0}},
  };
}

void expect_value(const Graph& g, const std::string& name, DType dtype,
                  const std::vector<int64_t>& shape) {
  ASSERT_TRUE(g.has_value(name)) << name;
  EXPECT_EQ(g.value(name).dtype, dtype) << name;
  EXPECT_EQ(g.value(name).shape, shape) << name;
}

TEST(ParseTest, EveryAcceptedOpParsesAndShapesAreInferred) {
  const SafetensorsFile weights = make_weights(every_op_tensors());
  const Graph g = parse_graph(kEveryOp, "every_op.json", &weights);

  // Every op of the table appears once.
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  for (const std::string& op : accepted_edge_ops()) {
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op << " not exercised";
  }
  ASSERT_EQ(g.nodes.size(), 71u);
  EXPECT_EQ(g.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(g.outputs, (std::vector<std::string>{"da", "m"}));

  // Hand-computed shapes.
  expect_value(g, "x", DType::Float32, {1, 3, 8, 8});
  expect_value(g, "xq", DType::Int8, {1, 3, 8, 8});
  expect_value(g, "xd", DType::Float32, {1, 3, 8, 8});
  expect_value(g, "w1d", DType::Float32, {4, 3, 3, 3});
  // (8 + 2*1 - 1*(3-1) - 1) / 2 + 1 = 4
  expect_value(g, "c1", DType::Float32, {1, 4, 4, 4});
  expect_value(g, "r1", DType::Float32, {1, 4, 4, 4});
  expect_value(g, "h1", DType::Float32, {1, 4, 4, 4});
  expect_value(g, "cl", DType::Float32, {1, 4, 4, 4});
  expect_value(g, "a1", DType::Float32, {1, 4, 4, 4});
  expect_value(g, "mt", DType::Float32, {1, 4, 4, 4});
  expect_value(g, "ms", DType::Float32, {1, 4, 4, 4});
  expect_value(g, "rs", DType::Float32, {1, 4, 4, 4});
  // ceil((4 + 2 - 3) / 2) + 1 = 3; the last window starts at 4 < 4 + 1: kept.
  expect_value(g, "avp", DType::Float32, {1, 4, 3, 3});
  expect_value(g, "ps", DType::Float32, {1, 1, 8, 8});
  expect_value(g, "emb", DType::Float32, {4, 1});  // ids [4] (int64, narrowed) + a row of 1
  // ceil((8 + 2 - 2 - 1) / 2) + 1 = 5; the last window starts at 8 < 8 + 1: kept.
  expect_value(g, "mp", DType::Float32, {1, 1, 5, 5});
  expect_value(g, "m", DType::Float32, {1, 1, 1, 1});
  expect_value(g, "ap", DType::Float32, {1, 1, 1, 1});
  expect_value(g, "v", DType::Float32, {1, 1});
  expect_value(g, "l", DType::Float32, {1, 5});
  expect_value(g, "hsw", DType::Float32, {1, 5});
  expect_value(g, "ge", DType::Float32, {1, 5});
  expect_value(g, "lr", DType::Float32, {1, 5});
  expect_value(g, "sm", DType::Float32, {1, 5});
  expect_value(g, "lsmi", DType::Float32, {1, 5});
  expect_value(g, "cln", DType::Float32, {1, 5});
  expect_value(g, "al", DType::Float32, {1, 5});
  expect_value(g, "cd", DType::Float32, {1, 5});
  expect_value(g, "sc", DType::Float32, {1, 1});
  expect_value(g, "zp", DType::Int32, {1, 1});
  expect_value(g, "qa", DType::Int8, {1, 5});
  expect_value(g, "da", DType::Float32, {1, 5});
  expect_value(g, "cat", DType::Float32, {1, 15});
  expect_value(g, "sws1", DType::Float32, {1, 11});
  expect_value(g, "spl3", DType::Float32, {1, 3});  // 4, 4, 4, 3
  expect_value(g, "chk3", DType::Float32, {1, 3});  // chunks of ceil(15 / 4) = 4
  expect_value(g, "slc", DType::Float32, {1, 4});   // indices 8, 10, 12, 14
  expect_value(g, "pm", DType::Float32, {1, 8, 8, 1});
  expect_value(g, "pm2", DType::Float32, {1, 1, 8, 8});
  expect_value(g, "tr", DType::Float32, {1, 5, 5, 1});
  expect_value(g, "v5", DType::Float32, {1, 1, 2, 4, 8});  // a 5-D view
  expect_value(g, "tr5", DType::Float32, {1, 1, 4, 2, 8});
  expect_value(g, "unv", DType::Float32, {1, 1, 16, 12});  // floor(8 * 2), floor(8 * 1.5)
  expect_value(g, "un", DType::Float32, {1, 1, 3, 5});
  expect_value(g, "ubv", DType::Float32, {1, 1, 9, 7});
  expect_value(g, "ub", DType::Float32, {1, 1, 16, 16});
  expect_value(g, "lnm", DType::Float32, {1, 5});
  expect_value(g, "att", DType::Float32, {1, 5, 1});
  expect_value(g, "sdpa", DType::Float32, {1, 5, 1});
  expect_value(g, "attw", DType::Float32, {1, 1, 5, 5});  // per head: need_weights, not averaged
  expect_value(g, "adr", DType::Float32, {1, 5});
  expect_value(g, "sd", DType::Float32, {1, 1, 8, 8});
  expect_value(g, "bnl", DType::Float32, {1, 4, 4, 4});
  expect_value(g, "bnv", DType::Float32, {0});
  expect_value(g, "tod", DType::Float32, {1, 5});
  expect_value(g, "sum", DType::Float32, {1, 1});  // [1, 5, 1] summed over dim 1
  expect_value(g, "nrm", DType::Float32, {1, 1});  // keepdim
  expect_value(g, "cmn", DType::Float32, {1, 1});
  expect_value(g, "exa", DType::Float32, {1, 5});
  expect_value(g, "dvt", DType::Float32, {1, 5});

  // Constants: bytes copied; the int64 zero points narrowed to int32.
  const Value& w1 = g.value("w1");
  ASSERT_TRUE(w1.is_constant());
  EXPECT_EQ(w1.dtype, DType::Int8);
  EXPECT_EQ(*w1.data, i8_bytes(108));
  const Value& zp1 = g.value("zp1");
  EXPECT_EQ(zp1.dtype, DType::Int32);
  ASSERT_EQ(zp1.data->size(), 16u);
  EXPECT_EQ(read_i32(*zp1.data, 0), 0);
  EXPECT_EQ(read_i32(*zp1.data, 1), -3);
  EXPECT_EQ(read_i32(*zp1.data, 2), 5);
  EXPECT_EQ(read_i32(*zp1.data, 3), 127);
  EXPECT_EQ(*g.value("b1").data, f32_bytes({1, 2, 3, 4}));
  EXPECT_FALSE(g.value("x").is_constant());
  EXPECT_FALSE(g.has_value("unused.tensor"));

  // Value order: inputs, constants, then node outputs in node order.
  const std::vector<std::string>& order = g.value_names();
  ASSERT_GE(order.size(), 10u);
  EXPECT_EQ(order[0], "x");
  EXPECT_EQ(order[1], "w1");
  EXPECT_EQ(order[7], "bl");
  EXPECT_EQ(order[8], "xq");

  // Nodes: origin, inputs padded to the op's arity, literal args and filled-in defaults.
  const Node& q = g.nodes[0];
  EXPECT_EQ(q.origin, "node 0 (quantized_decomposed.quantize_per_tensor)");
  EXPECT_EQ(std::get<double>(q.args.at("scale")), 0.02);
  EXPECT_EQ(std::get<int64_t>(q.args.at("zero_point")), 3);
  EXPECT_EQ(std::get<std::string>(q.args.at("dtype")), "int8");
  EXPECT_TRUE(std::holds_alternative<NoneArg>(g.nodes[1].args.at("out_dtype")));
  const Node& conv = g.nodes[3];
  EXPECT_EQ(conv.origin, "node 3 (aten.convolution)");
  EXPECT_EQ(std::get<std::vector<int64_t>>(conv.args.at("stride")), (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(std::get<bool>(conv.args.at("transposed")));
  EXPECT_EQ(std::get<int64_t>(g.nodes[5].args.at("min_val")), 0);
  EXPECT_EQ(std::get<double>(g.nodes[5].args.at("max_val")), 6.0);
  const Node& add = g.nodes[7];
  EXPECT_EQ(std::get<int64_t>(add.args.at("alpha")), 1);  // default filled in
  // Later nodes by the value they write (the list grows in the middle as ops are added).
  auto writer = [&g](const char* value) -> const Node& {
    return g.nodes[static_cast<size_t>(g.producer(value))];
  };
  const Node& pool = writer("mp");
  EXPECT_EQ(std::get<std::vector<int64_t>>(pool.args.at("dilation")), (std::vector<int64_t>{1, 1}));
  const Node& lin = writer("l");
  EXPECT_EQ(lin.inputs, (std::vector<std::string>{"v", "wl", "bl"}));
  const Node& cln = writer("cln");
  EXPECT_TRUE(std::holds_alternative<NoneArg>(cln.args.at("memory_format")));
  const Node& dim_order = writer("cd");
  EXPECT_FALSE(std::get<bool>(dim_order.args.at("non_blocking")));
  EXPECT_EQ(std::get<double>(writer("sc").args.at("eps")), 1e-6);
  EXPECT_EQ(writer("sc").outputs, (std::vector<std::string>{"sc", "zp"}));
  EXPECT_EQ(g.producer("zp"), g.producer("sc"));
  const Node& elu = g.nodes[static_cast<size_t>(g.producer("el"))];
  EXPECT_EQ(std::get<double>(elu.args.at("scale")), 1.0);  // defaults filled in
  EXPECT_EQ(std::get<double>(elu.args.at("input_scale")), 1.0);
  const Node& softmax = g.nodes[static_cast<size_t>(g.producer("sm"))];
  EXPECT_FALSE(std::get<bool>(softmax.args.at("half_to_float")));
  const Node& hsw = g.nodes[static_cast<size_t>(g.producer("hsw"))];
  EXPECT_TRUE(hsw.args.empty());
}

TEST(ParseTest, OptionalInputsArePaddedAndDefaultsFilled) {
  const std::string json = doc(R"("w": {"dtype": "float32", "shape": [4, 4, 1, 1], "data": "w"})",
                               R"({"op": "aten.convolution", "inputs": ["x", "w"],
          "args": {"stride": [1], "padding": [0], "dilation": [1], "transposed": false,
                   "output_padding": [0], "groups": 1}, "outputs": ["c"]},
         {"op": "aten.max_pool2d", "inputs": ["c"], "args": {"kernel_size": [2, 2]},
          "outputs": ["y"]})");
  const SafetensorsFile w = make_weights({{"w", "F32", {4, 4, 1, 1}, f32_bytes(iota_f32(16))}});
  const Graph g = parse_graph(json, "g.json", &w);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "w", ""}));
  const Args& pool = g.nodes[1].args;
  EXPECT_EQ(std::get<std::vector<int64_t>>(pool.at("stride")), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(std::get<std::vector<int64_t>>(pool.at("padding")), (std::vector<int64_t>{0, 0}));
  EXPECT_FALSE(std::get<bool>(pool.at("ceil_mode")));
  expect_value(g, "y", DType::Float32, {1, 4, 4, 4});
}

TEST(ParseTest, FloatListArgsKeepTheirElementType) {
  // Any float in a list makes it a list of doubles, which an int-list argument rejects.
  expect_parse_error(
      doc("", R"({"op": "aten.view_copy", "inputs": ["x"], "args": {"size": [1, 4.0, 64]},
                  "outputs": ["y"]})"),
      nullptr,
      {"g.json: node 0 (aten.view_copy): argument 'size': must be a list of integers, got "
       "[1,4.0,64]"});
}

TEST(ParseTest, FilesRoundTrip) {
  const std::string json_path = temp_path("every_op.json");
  const std::string st_path = temp_path("every_op.safetensors");
  {
    std::ofstream out(json_path);
    out << kEveryOp;
  }
  write_safetensors(st_path, every_op_tensors());
  const Graph g = parse_graph_file(json_path, st_path);
  expect_value(g, "da", DType::Float32, {1, 5});
  expect_value(g, "pm", DType::Float32, {1, 8, 8, 1});
  expect_value(g, "pm2", DType::Float32, {1, 1, 8, 8});
  expect_value(g, "tr", DType::Float32, {1, 5, 5, 1});
  expect_value(g, "v5", DType::Float32, {1, 1, 2, 4, 8});  // a 5-D view
  expect_value(g, "tr5", DType::Float32, {1, 1, 4, 2, 8});
  EXPECT_EQ(g.value("s1").data->size(), 16u);
  std::remove(json_path.c_str());
  std::remove(st_path.c_str());
}

TEST(ParseTest, MissingGraphFileNamesThePath) {
  const std::string path = temp_path("does_not_exist.json");
  expect_error([&] { parse_graph_file(path, ""); }, {"graph file '" + path + "' does not exist"});
}

TEST(ParseTest, MissingWeightsFileNamesThePath) {
  const std::string json_path = temp_path("relu.json");
  {
    std::ofstream out(json_path);
    out << doc("", kRelu);
  }
  const std::string st_path = temp_path("missing.safetensors");
  expect_error([&] { parse_graph_file(json_path, st_path); },
               {"weights file '" + st_path + "' does not exist"});
  std::remove(json_path.c_str());
}

// ---- one test per rejected input --------------------------------------------------------------

TEST(ParseTest, MalformedJsonReportsTheBytePosition) {
  expect_parse_error(R"({"vkd_graph": 1, "inputs": ["x",]})", nullptr,
                     {"g.json: malformed JSON at byte 33", "unexpected ']'"});
}

TEST(ParseTest, DuplicateJsonKeyIsRejected) {
  expect_parse_error(
      R"({"vkd_graph": 1, "inputs": ["x"], "outputs": ["x"], "values": {
            "x": {"dtype": "float32", "shape": [1]}, "x": {"dtype": "int8", "shape": [1]}},
          "nodes": []})",
      nullptr, {"g.json: duplicate key 'x' in JSON object 'values'"});
}

TEST(ParseTest, WrongVersionIsRejected) {
  std::string json = doc("", kRelu);
  json.replace(json.find("\"vkd_graph\": 1"), 14, "\"vkd_graph\": 2");
  expect_parse_error(json, nullptr,
                     {"g.json: field 'vkd_graph': unsupported version 2 (this compiler reads "
                      "version 1)"});
}

TEST(ParseTest, MissingTopLevelFieldIsRejected) {
  expect_parse_error(R"({"vkd_graph": 1, "inputs": [], "outputs": [], "values": {}})", nullptr,
                     {"graph: missing field 'nodes'"});
}

// An op without a descriptor is kept as written (a host node under --partition): its inputs
// (no padding, "" kept), its args as literals, its outputs with their declared types.
TEST(ParseTest, UnknownOpWithDeclaredOutputsIsKeptVerbatim) {
  const Graph g =
      parse_graph(doc(R"("y": {"dtype": "float32", "shape": [1, 4, 8, 8]},
             "idx": {"dtype": "int32", "shape": [2, 3]})",
                      R"({"op": "aten.cumsum", "inputs": ["x", ""], "outputs": ["y", "idx"],
              "args": {"approximate": "tanh", "alpha": 0.5, "n": 3, "dims": [1, -1],
                       "w": [0.5, 2], "flag": false, "none": null}},
             {"op": "aten.relu", "inputs": ["y"], "outputs": ["r"]})",
                      R"(["r", "idx"])"),
                  "g.json", nullptr);
  ASSERT_EQ(g.nodes.size(), 2u);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "aten.cumsum");
  EXPECT_EQ(n.origin, "node 0 (aten.cumsum)");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y", "idx"}));
  const Args want = {{"approximate", std::string("tanh")},
                     {"alpha", 0.5},
                     {"n", int64_t{3}},
                     {"dims", std::vector<int64_t>{1, -1}},
                     {"w", std::vector<double>{0.5, 2.0}},
                     {"flag", false},
                     {"none", NoneArg{}}};
  EXPECT_TRUE(n.args == want);
  expect_value(g, "y", DType::Float32, {1, 4, 8, 8});
  expect_value(g, "idx", DType::Int32, {2, 3});
  expect_value(g, "r", DType::Float32, {1, 4, 8, 8});  // inferred from the declared y
}

TEST(ParseTest, UndeclaredOutputOfAnUnknownOpIsRejected) {
  expect_parse_error(doc("", R"({"op": "aten.cumsum", "inputs": ["x"], "outputs": ["y"]})"),
                     nullptr,
                     {"g.json: node 0 (aten.cumsum): ", "unknown op 'aten.cumsum'", "output 'y'",
                      "declare its dtype and shape in 'values'"});
}

TEST(ParseTest, UnknownOpInputsAndArgsAreStillChecked) {
  const std::string y = R"("y": {"dtype": "float32", "shape": [4]})";
  expect_parse_error(doc(y, R"({"op": "aten.cumsum", "inputs": ["nope"], "outputs": ["y"]})"),
                     nullptr, {"node 0 (aten.cumsum): input 'nope' is not defined"});
  expect_parse_error(
      doc(y, R"({"op": "aten.cumsum", "inputs": ["x"], "args": {"a": {}}, "outputs": ["y"]})"),
      nullptr, {"node 0 (aten.cumsum): argument 'a': must be a literal"});
  expect_parse_error(doc(y, R"({"op": "aten.cumsum", "inputs": ["x"], "outputs": ["y"], "k": 1})"),
                     nullptr, {"node 0 (aten.cumsum): unknown field 'k'"});
  expect_parse_error(doc(y, R"({"op": "", "inputs": ["x"], "outputs": ["y"]})"), nullptr,
                     {"node 0: field 'op': must not be empty"});
}

// The graph IR is the edge dialect: a node named like a backend op would reach the backend
// without the checks fusion makes.
TEST(ParseTest, BackendOpNameIsRejected) {
  expect_parse_error(doc(R"("y": {"dtype": "float32", "shape": [1, 4, 8, 8]})",
                         R"({"op": "identity", "inputs": ["x"], "outputs": ["y"]})"),
                     nullptr, {"node 0 (identity): field 'op': 'identity' is a backend op"});
}

TEST(ParseTest, UndefinedInputIsRejected) {
  expect_parse_error(
      doc("", std::string(kRelu) + R"(, {"op": "aten.relu", "inputs": ["foo"], "outputs": ["z"]})"),
      nullptr,
      {"g.json: node 1 (aten.relu): input 'foo' is not defined (no graph input, constant or "
       "earlier output)"});
}

TEST(ParseTest, InputProducedByALaterNodeIsUndefined) {
  expect_parse_error(doc("", R"({"op": "aten.relu", "inputs": ["t"], "outputs": ["y"]},
                 {"op": "aten.relu", "inputs": ["x"], "outputs": ["t"]})"),
                     nullptr, {"node 0 (aten.relu): input 't' is not defined"});
}

TEST(ParseTest, ValueDefinedTwiceIsRejected) {
  // A node output reusing a graph input's name, and two nodes writing the same name.
  expect_parse_error(
      doc("", R"({"op": "aten.relu", "inputs": ["x"], "outputs": ["x"]})", R"(["x"])"), nullptr,
      {"node 0 (aten.relu): output 'x' is already defined (graph input)"});
  expect_parse_error(
      doc("", std::string(kRelu) + R"(, {"op": "aten.relu", "inputs": ["x"], "outputs": ["y"]})"),
      nullptr,
      {"node 1 (aten.relu): output 'y' is already defined (output of node 0 (aten.relu))"});
}

TEST(ParseTest, MissingWeightTensorIsRejected) {
  const SafetensorsFile w = make_weights({{"other", "F32", {4}, f32_bytes({1, 2, 3, 4})}});
  expect_parse_error(doc(R"("b": {"dtype": "float32", "shape": [4], "data": "conv.bias"})", kRelu),
                     &w,
                     {"value 'b': field 'data': tensor 'conv.bias' is not in the weights file "
                      "'w.safetensors'"});
}

TEST(ParseTest, WeightDtypeMismatchIsRejected) {
  const SafetensorsFile w = make_weights({{"conv.bias", "F32", {4}, f32_bytes({1, 2, 3, 4})}});
  expect_parse_error(doc(R"("b": {"dtype": "int32", "shape": [4], "data": "conv.bias"})", kRelu),
                     &w,
                     {"value 'b': field 'data': tensor 'conv.bias' has dtype F32, expected I32 "
                      "(value dtype int32)"});
}

TEST(ParseTest, WeightShapeMismatchIsRejected) {
  const SafetensorsFile w = make_weights({{"conv.bias", "F32", {4}, f32_bytes({1, 2, 3, 4})}});
  expect_parse_error(
      doc(R"("b": {"dtype": "float32", "shape": [1, 4], "data": "conv.bias"})", kRelu), &w,
      {"value 'b': field 'data': tensor 'conv.bias' has shape [4], expected [1, 4]"});
}

TEST(ParseTest, DataWithoutWeightsFileIsRejected) {
  expect_parse_error(doc(R"("b": {"dtype": "float32", "shape": [4], "data": "conv.bias"})", kRelu),
                     nullptr,
                     {"value 'b': field 'data': names tensor 'conv.bias' but no weights file was "
                      "given"});
}

TEST(ParseTest, Int64ConstantThatDoesNotFitInt32IsRejected) {
  const SafetensorsFile w = make_weights({{"zp", "I64", {2}, i64_bytes({1, int64_t{1} << 33})}});
  expect_parse_error(doc(R"("zp": {"dtype": "int64", "shape": [2], "data": "zp"})", kRelu), &w,
                     {"value 'zp': int64 constant element 1 (= 8589934592) does not fit in int32"});
}

// Values of dtypes no device tensor has (an int64 that is no constant, bool, float64) parse as
// foreign: the graph keeps them for the nodes that must stay on a CPU. A constant of one does
// not parse; an unknown dtype does not either.
TEST(ParseTest, ForeignDTypesParseForValuesNotConstants) {
  const std::string ids = R"("ids": {"dtype": "int64", "shape": [2]}, )"
                          R"("m": {"dtype": "bool", "shape": [2]})";
  const std::string eq = R"({"op": "aten.eq.Scalar", "inputs": ["ids"], "args": {"other": 0},)"
                         R"( "outputs": ["m"]})";
  const std::string json = R"({"vkd_graph": 1, "inputs": ["x", "ids"], "outputs": ["y", "m"],)"
                           R"( "values": {"x": {"dtype": "float32", "shape": [1, 4, 8, 8]}, )" +
                           ids + R"(}, "nodes": [)" + kRelu + ", " + eq + "]}";
  const Graph g = parse_graph(json, "g.json", nullptr);
  EXPECT_EQ(g.value("ids").foreign_dtype, "int64");
  EXPECT_EQ(g.value("m").foreign_dtype, "bool");
  EXPECT_EQ(g.value("y").foreign_dtype, "");
  const SafetensorsFile w = make_weights({{"mask", "BOOL", {2}, std::vector<uint8_t>(2)}});
  expect_parse_error(doc(R"("c": {"dtype": "bool", "shape": [2], "data": "mask"})", kRelu), &w,
                     {"value 'c': field 'dtype': bool constants are not accepted"});
}

// Token ids: an int64 graph input that only embeddings read as their ids is held as int32 (the
// callers' int64 ids are narrowed on the host, range checked); read by anything else too, it
// stays foreign.
TEST(ParseTest, Int64IdsReadOnlyByEmbeddingsBecomeInt32) {
  const SafetensorsFile w = make_weights({{"table", "F32", {3, 2}, f32_bytes({1, 2, 3, 4, 5, 6})}});
  auto graph = [](const std::string& extra_node, const std::string& extra_output) {
    return R"({"vkd_graph": 1, "inputs": ["ids"], "outputs": ["e")" + extra_output +
           R"(], "values": {"ids": {"dtype": "int64", "shape": [1, 4]},
                "table": {"dtype": "float32", "shape": [3, 2], "data": "table"},
                "e": {"dtype": "float32", "shape": [1, 4, 2]},
                "f": {"dtype": "float32", "shape": [1, 4, 2]})" +
           (extra_node.empty() ? "" : R"(, "m": {"dtype": "bool", "shape": [1, 4]})") + R"(},
             "nodes": [{"op": "aten.embedding", "inputs": ["table", "ids"], "outputs": ["e"]},
                       {"op": "aten.embedding", "inputs": ["table", "ids"], "outputs": ["f"]})" +
           extra_node + "]}";
  };
  const Graph g = parse_graph(graph("", ""), "g.json", &w);
  EXPECT_EQ(g.value("ids").foreign_dtype, "");
  expect_value(g, "ids", DType::Int32, {1, 4});
  expect_value(g, "e", DType::Float32, {1, 4, 2});
  const Graph other =
      parse_graph(graph(R"(, {"op": "aten.eq.Scalar", "inputs": ["ids"], "args": {"other": 0},
                  "outputs": ["m"]})",
                        R"(, "m")"),
                  "g.json", &w);
  EXPECT_EQ(other.value("ids").foreign_dtype, "int64");
}

TEST(ParseTest, BadValueFieldsAreRejected) {
  expect_parse_error(doc(R"("b": {"dtype": "complex64", "shape": [4]})", kRelu), nullptr,
                     {"value 'b': field 'dtype': expected one of", "got \"complex64\""});
  expect_parse_error(doc(R"("b": {"dtype": "float32", "shape": [1, 2, 3, 4, 5, 6, 7]})", kRelu),
                     nullptr, {"value 'b': field 'shape': rank 7 is above the supported 6"});
  expect_parse_error(
      doc(R"("b": {"dtype": "float32", "shape": [4, -1]})", kRelu), nullptr,
      {"value 'b': field 'shape': element 1 must be a non-negative integer, got -1"});
  expect_parse_error(doc(R"("b": {"dtype": "float32", "shape": [4], "stride": [1]})", kRelu),
                     nullptr, {"value 'b': unknown field 'stride'"});
}

// Ranks up to 6 parse for graph inputs, constants and node outputs (the backend holds at most
// 4-D tensors; what reads or writes more is left to the host).
TEST(ParseTest, Rank5And6ValuesParse) {
  const SafetensorsFile w =
      make_weights({{"c", "F32", {1, 1, 1, 1, 2, 2}, f32_bytes({1, 2, 3, 4})}});
  const Graph g = parse_graph(
      R"({"vkd_graph": 1, "inputs": ["x"], "outputs": ["r", "s"],
          "values": {"x": {"dtype": "float32", "shape": [1, 2, 3, 4, 5]},
                     "c": {"dtype": "float32", "shape": [1, 1, 1, 1, 2, 2], "data": "c"}},
          "nodes": [{"op": "aten.relu", "inputs": ["x"], "outputs": ["r"]},
                    {"op": "aten.add.Tensor", "inputs": ["c", "c"], "outputs": ["s"]}]})",
      "g.json", &w);
  expect_value(g, "x", DType::Float32, {1, 2, 3, 4, 5});
  expect_value(g, "r", DType::Float32, {1, 2, 3, 4, 5});
  expect_value(g, "c", DType::Float32, {1, 1, 1, 1, 2, 2});
  expect_value(g, "s", DType::Float32, {1, 1, 1, 1, 2, 2});
}

TEST(ParseTest, DeclaredValueNeverDefinedIsRejected) {
  expect_parse_error(doc(R"("t": {"dtype": "float32", "shape": [4]})", kRelu), nullptr,
                     {"value 't': declared in 'values' but it is no graph input"});
}

TEST(ParseTest, DeclaredShapeDifferentFromInferredIsRejected) {
  expect_parse_error(doc(R"("y": {"dtype": "float32", "shape": [1, 4, 8, 9]})", kRelu), nullptr,
                     {"g.json: node 0 (aten.relu): output 'y': declared float32 [1, 4, 8, 9], "
                      "inferred float32 [1, 4, 8, 8]"});
  expect_parse_error(doc(R"("y": {"dtype": "int8", "shape": [1, 4, 8, 8]})", kRelu), nullptr,
                     {"node 0 (aten.relu): output 'y': declared int8 [1, 4, 8, 8], inferred "
                      "float32 [1, 4, 8, 8]"});
}

TEST(ParseTest, ConvChannelMismatchIsRejected) {
  const SafetensorsFile w =
      make_weights({{"w", "F32", {8, 3, 3, 3}, f32_bytes(std::vector<float>(216, 0.f))}});
  expect_parse_error(
      doc(R"("w": {"dtype": "float32", "shape": [8, 3, 3, 3], "data": "w"})",
          R"({"op": "aten.convolution", "inputs": ["x", "w", ""],
              "args": {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1],
                       "transposed": false, "output_padding": [0, 0], "groups": 1},
              "outputs": ["y"]})"),
      &w,
      {"node 0 (aten.convolution): input 'weight' (value 'w'): expected 4 input channels per group "
       "(input channels 4 / groups 1), got 3"});
}

TEST(ParseTest, PixelShuffleChannelsNotDivisibleIsRejected) {
  expect_parse_error(doc("", R"({"op": "aten.pixel_shuffle", "inputs": ["x"],
                                 "args": {"upscale_factor": 3}, "outputs": ["y"]})"),
                     nullptr,
                     {"node 0 (aten.pixel_shuffle): input 'self' (value 'x'): channels 4 are not "
                      "divisible by upscale_factor^2 = 9"});
}

TEST(ParseTest, BadArgTypeIsRejected) {
  expect_parse_error(doc("", R"({"op": "aten.pixel_shuffle", "inputs": ["x"],
                                 "args": {"upscale_factor": "2"}, "outputs": ["y"]})"),
                     nullptr,
                     {"node 0 (aten.pixel_shuffle): argument 'upscale_factor': must be an "
                      "integer, got \"2\""});
  expect_parse_error(doc("", R"({"op": "aten.pixel_shuffle", "inputs": ["x"],
                                 "args": {"upscale_factor": 2.0}, "outputs": ["y"]})"),
                     nullptr,
                     {"node 0 (aten.pixel_shuffle): argument 'upscale_factor': must be an "
                      "integer, got 2.0"});
  expect_parse_error(doc("", R"({"op": "aten.pixel_shuffle", "inputs": ["x"],
                                 "args": {"upscale_factor": null}, "outputs": ["y"]})"),
                     nullptr, {"argument 'upscale_factor': must be an integer, got null"});
  expect_parse_error(doc("", R"({"op": "aten.mean.dim", "inputs": ["x"],
                                 "args": {"dim": [2, 3], "keepdim": {"a": 1}}, "outputs": ["y"]})"),
                     nullptr, {"node 0 (aten.mean.dim): argument 'keepdim': must be a literal"});
}

TEST(ParseTest, UnknownArgIsRejected) {
  expect_parse_error(doc("", R"({"op": "aten.relu", "inputs": ["x"], "args": {"inplace": true},
                                 "outputs": ["y"]})"),
                     nullptr,
                     {"node 0 (aten.relu): argument 'inplace': unknown argument of aten.relu "
                      "(accepted: none)"});
}

TEST(ParseTest, MissingRequiredArgIsRejected) {
  expect_parse_error(doc("", R"({"op": "aten.pixel_shuffle", "inputs": ["x"], "outputs": ["y"]})"),
                     nullptr,
                     {"node 0 (aten.pixel_shuffle): argument 'upscale_factor' is required but "
                      "missing"});
}

TEST(ParseTest, BadNodeStructureIsRejected) {
  expect_parse_error(doc("", R"({"op": "aten.relu", "inputs": ["x", "x"], "outputs": ["y"]})"),
                     nullptr,
                     {"node 0 (aten.relu): field 'inputs': at most 1 tensor inputs, got 2"});
  expect_parse_error(doc("", R"({"op": "aten.relu", "inputs": [""], "outputs": ["y"]})"), nullptr,
                     {"node 0 (aten.relu): input self (position 0) is required"});
  expect_parse_error(doc("", R"({"op": "aten.relu", "inputs": ["x"], "outputs": ["y", "z"]})"),
                     nullptr, {"node 0 (aten.relu): field 'outputs': expected 1 output(s), got 2"});
  expect_parse_error(doc("", R"({"op": "aten.relu", "inputs": ["x"], "outputs": ["y"],
                                 "name": "relu_1"})"),
                     nullptr, {"node 0 (aten.relu): unknown field 'name'"});
  expect_parse_error(doc("", R"({"inputs": ["x"], "outputs": ["y"]})"), nullptr,
                     {"node 0: missing field 'op'"});
}

// aten.cat takes a tensor list (one or more inputs, each required); a split has as many outputs
// as pieces: at least one at parse time, the exact count checked by shape inference.
TEST(ParseTest, TensorListsAndVariableOutputCounts) {
  expect_parse_error(doc("", R"({"op": "aten.cat", "inputs": [], "outputs": ["y"]})"), nullptr,
                     {"node 0 (aten.cat): field 'inputs': at least 1 tensor input(s), got 0"});
  expect_parse_error(doc("", R"({"op": "aten.cat", "inputs": ["x", ""], "outputs": ["y"]})"),
                     nullptr, {"node 0 (aten.cat): input tensors (position 1) is required"});
  expect_parse_error(
      doc("", R"({"op": "aten.chunk", "inputs": ["x"], "args": {"chunks": 2}, "outputs": []})"),
      nullptr, {"node 0 (aten.chunk): field 'outputs': expected one or more outputs, got none"});
  expect_parse_error(doc("", R"({"op": "aten.chunk", "inputs": ["x"],
                                 "args": {"chunks": 3, "dim": 2}, "outputs": ["y", "z"]})"),
                     nullptr, {"node 0 (aten.chunk): outputs: expected 3 output(s), got 2"});
  const Graph g =
      parse_graph(doc("", R"({"op": "aten.cat", "inputs": ["x", "x", "x"], "args": {"dim": 1},
                  "outputs": ["c"]},
                 {"op": "aten.chunk", "inputs": ["c"], "args": {"chunks": 2, "dim": 1},
                  "outputs": ["y", "z"]})"),
                  "g.json", nullptr);
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "x", "x"}));
  expect_value(g, "y", DType::Float32, {1, 6, 8, 8});
  EXPECT_EQ(g.producer("z"), 1);
}

TEST(ParseTest, GraphOutputMustBeDefined) {
  expect_parse_error(doc("", kRelu, R"(["y", "nope"])"), nullptr,
                     {"field 'outputs': output 'nope' is not defined"});
}

TEST(ParseTest, GraphInputMustBeDeclared) {
  std::string json = doc("", kRelu);
  json.replace(json.find(R"("inputs": ["x"])"), 15, R"("inputs": ["x", "q"])");
  expect_parse_error(json, nullptr, {"field 'inputs': input 'q' is not declared in 'values'"});
}

// ---- safetensors ------------------------------------------------------------------------------

// A file image with a hand-written header and `data_bytes` zero bytes of data.
std::vector<uint8_t> raw_safetensors(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

void expect_safetensors_error(std::vector<uint8_t> bytes,
                              std::initializer_list<std::string> parts) {
  expect_error([&] { SafetensorsFile::from_bytes(bytes, "t.safetensors"); }, parts);
}

TEST(SafetensorsTest, RoundTrip) {
  const std::vector<SafetensorsTensor> tensors = {
      {"a", "F32", {2, 3}, f32_bytes(iota_f32(6))},
      {"b", "I8", {5}, i8_bytes(5)},
      {"c", "I64", {2}, i64_bytes({-1, 1LL << 40})},
      {"d", "I32", {}, {1, 0, 0, 0}},
      {"empty", "F32", {0, 4}, {}},
  };
  const std::vector<uint8_t> bytes = serialize_safetensors(tensors, {{"format", "pt"}});
  // Header padded to 8 bytes.
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  EXPECT_EQ(header_len % 8, 0u);

  const SafetensorsFile f = SafetensorsFile::from_bytes(bytes, "mem");
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "b", "c", "d", "empty"}));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  for (const SafetensorsTensor& t : tensors) {
    const SafetensorsTensorView& v = f.get(t.name);
    EXPECT_EQ(v.dtype, t.dtype) << t.name;
    EXPECT_EQ(v.shape, t.shape) << t.name;
    EXPECT_EQ(v.bytes(), t.data) << t.name;
  }
  EXPECT_EQ(f.find("zzz"), nullptr);
  expect_error([&] { f.get("zzz"); }, {"mem: no tensor named 'zzz'"});

  // Through a file, and copies keep their views valid.
  const std::string path = temp_path("round_trip.safetensors");
  write_safetensors(path, tensors);
  SafetensorsFile copy = SafetensorsFile::read(path);
  {
    const SafetensorsFile moved = copy;
    copy = SafetensorsFile::read(path);
    EXPECT_EQ(moved.get("a").bytes(), f32_bytes(iota_f32(6)));
  }
  EXPECT_EQ(copy.get("c").bytes(), i64_bytes({-1, 1LL << 40}));
  EXPECT_TRUE(copy.metadata().empty());
  std::remove(path.c_str());
}

TEST(SafetensorsTest, MissingFileNamesThePath) {
  const std::string path = temp_path("nope.safetensors");
  expect_error([&] { SafetensorsFile::read(path); },
               {"weights file '" + path + "' does not exist"});
}

TEST(SafetensorsTest, TruncatedHeaderIsRejected) {
  expect_safetensors_error({1, 2, 3}, {"t.safetensors: truncated safetensors file (3 bytes"});
  std::vector<uint8_t> bytes =
      raw_safetensors(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4);
  bytes.resize(20);  // cut inside the header
  expect_safetensors_error(bytes, {"t.safetensors: truncated safetensors header (header length 61 "
                                   "but only 12 bytes follow the length field)"});
  // A length field claiming far more than the file holds.
  std::vector<uint8_t> huge = {0, 0, 0, 0, 0, 0, 0, 1, '{', '}'};
  expect_safetensors_error(huge, {"truncated safetensors header"});
}

TEST(SafetensorsTest, MalformedHeaderJsonIsRejected) {
  expect_safetensors_error(raw_safetensors(R"({"a": )", 0), {"t.safetensors (safetensors header): "
                                                             "malformed JSON at byte"});
  expect_safetensors_error(raw_safetensors(R"([1, 2])", 0), {"header must be a JSON object"});
}

TEST(SafetensorsTest, OffsetsPastTheEndAreRejected) {
  expect_safetensors_error(
      raw_safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 12),
      {"t.safetensors: tensor 'w': field 'data_offsets' [0, 16] ends past the data section (12 "
       "bytes)"});
}

TEST(SafetensorsTest, OverlappingTensorsAreRejected) {
  expect_safetensors_error(
      raw_safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "I32", "shape": [2], "data_offsets": [4, 12]}})",
                      12),
      {"t.safetensors: tensor 'b': field 'data_offsets' [4, 12] overlaps tensor 'a' [0, 8]"});
}

TEST(SafetensorsTest, UnknownDtypeIsRejected) {
  expect_safetensors_error(
      raw_safetensors(R"({"w": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 2]}})", 2),
      {"t.safetensors: tensor 'w': field 'dtype': unknown dtype 'Q4'"});
}

TEST(SafetensorsTest, ByteSizeMismatchIsRejected) {
  expect_safetensors_error(
      raw_safetensors(R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})", 16),
      {"t.safetensors: tensor 'w': field 'data_offsets' [0, 12] covers 12 bytes, but dtype F32 "
       "shape [2, 2] needs 16"});
}

TEST(SafetensorsTest, BadFieldsAreRejected) {
  expect_safetensors_error(raw_safetensors(R"({"w": {"dtype": "F32", "shape": [4]}})", 16),
                           {"t.safetensors: tensor 'w': missing field 'data_offsets'"});
  expect_safetensors_error(
      raw_safetensors(R"({"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})", 16),
      {"tensor 'w': field 'shape': element 0 must be a non-negative integer"});
  expect_safetensors_error(
      raw_safetensors(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 4]}})", 16),
      {"tensor 'w': field 'data_offsets' [8, 4]: begin is after end"});
  expect_safetensors_error(raw_safetensors(R"({"__metadata__": {"format": 1}})", 0),
                           {"'__metadata__' key 'format' must be a string"});
  expect_safetensors_error(
      raw_safetensors(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                          "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                      8),
      {"duplicate key 'w'"});
}

TEST(SafetensorsTest, WriterRejectsBadTensors) {
  expect_error([] { serialize_safetensors({{"a", "F32", {2}, {0, 0, 0}}}); },
               {"write_safetensors: tensor 'a': 3 bytes of data, but F32 [2] needs 8"});
  expect_error([] { serialize_safetensors({{"a", "X", {1}, {0}}}); },
               {"tensor 'a': unknown dtype 'X'"});
  expect_error([] { serialize_safetensors({{"a", "I8", {1}, {0}}, {"a", "I8", {1}, {0}}}); },
               {"tensor 'a' given twice"});
}

}  // namespace
}  // namespace vkd::compiler
