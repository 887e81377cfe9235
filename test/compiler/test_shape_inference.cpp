// Shape inference (compiler/ShapeInference.h) on graphs built in the tests: the
// output-size formulas, each op's shape and dtype rules, and the errors naming node and field.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/ShapeInference.h"
#include "core/Error.h"

namespace vkd::compiler {
namespace {

using Shape = std::vector<int64_t>;
using I = std::vector<int64_t>;

class Builder {
 public:
  Builder& input(const std::string& name, DType dtype, Shape shape) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    g.add_value(std::move(v));
    g.inputs.push_back(name);
    return *this;
  }
  Builder& constant(const std::string& name, DType dtype, Shape shape) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    int64_t n = 1;
    for (int64_t d : v.shape) n *= d;
    v.data = std::vector<uint8_t>(static_cast<size_t>(n) * host_element_size(dtype), 0);
    g.add_value(std::move(v));
    return *this;
  }
  Builder& node(const std::string& op, std::vector<std::string> inputs, Args args,
                std::vector<std::string> outputs) {
    Node n;
    n.op = op;
    n.inputs = std::move(inputs);
    n.args = std::move(args);
    n.outputs = std::move(outputs);
    n.origin = "node " + std::to_string(g.nodes.size()) + " (" + op + ")";
    g.nodes.push_back(std::move(n));
    return *this;
  }
  Graph g;
};

void expect_type(const Graph& g, const std::string& name, DType dtype, const Shape& shape) {
  ASSERT_TRUE(g.has_value(name)) << name;
  EXPECT_EQ(g.value(name).dtype, dtype) << name;
  EXPECT_EQ(g.value(name).shape, shape) << name;
}

void expect_infer_error(Graph g, std::initializer_list<std::string> parts) {
  try {
    infer_shapes(g);
    ADD_FAILURE() << "expected an error containing '" << *parts.begin() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    const std::string msg = e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    }
  }
}

Args conv_args(I stride, I padding, I dilation, int64_t groups) {
  return {{"stride", stride},    {"padding", padding},        {"dilation", dilation},
          {"transposed", false}, {"output_padding", I{0, 0}}, {"groups", groups}};
}

Args qargs(const char* dtype = "int8") {
  return {{"scale", 0.5},
          {"zero_point", int64_t{0}},
          {"quant_min", int64_t{-128}},
          {"quant_max", int64_t{127}},
          {"dtype", std::string(dtype)}};
}

// ---- formulas -------------------------------------------------------------------------------

TEST(ShapeInferenceTest, ConvOutputSize) {
  EXPECT_EQ(conv_output_size(8, 3, 1, 1, 1), 8);
  EXPECT_EQ(conv_output_size(8, 3, 2, 1, 1), 4);
  EXPECT_EQ(conv_output_size(7, 3, 2, 0, 1), 3);
  EXPECT_EQ(conv_output_size(10, 3, 1, 0, 2), 6);  // effective kernel 5
  EXPECT_EQ(conv_output_size(2, 5, 1, 0, 1), -2);  // too small: callers reject < 1
}

TEST(ShapeInferenceTest, PoolOutputSizeWithCeilMode) {
  EXPECT_EQ(pool_output_size(8, 2, 2, 0, 1, false), 4);
  EXPECT_EQ(pool_output_size(7, 2, 2, 0, 1, false), 3);
  EXPECT_EQ(pool_output_size(7, 2, 2, 0, 1, true), 4);  // a partial last window
  EXPECT_EQ(pool_output_size(8, 3, 2, 1, 1, true), 5);
  EXPECT_EQ(pool_output_size(8, 3, 2, 1, 1, false), 4);
  // 5 + padding 1: windows would start at -1, 1, 3 and 5; the one at 5 starts in the right
  // padding, so PyTorch drops it.
  EXPECT_EQ(pool_output_size(5, 2, 2, 1, 1, true), 3);
  EXPECT_EQ(pool_output_size(5, 2, 2, 1, 1, false), 3);
  EXPECT_EQ(pool_output_size(6, 3, 3, 1, 1, true), 3);
  EXPECT_EQ(pool_output_size(9, 3, 2, 0, 2, false), 3);  // dilation 2: effective kernel 5
}

TEST(ShapeInferenceTest, Broadcasting) {
  Shape out;
  ASSERT_TRUE(broadcast_shapes({1, 4, 5, 5}, {1, 4, 1, 1}, &out));
  EXPECT_EQ(out, (Shape{1, 4, 5, 5}));
  ASSERT_TRUE(broadcast_shapes({1, 1, 1, 1}, {2, 4, 5, 5}, &out));
  EXPECT_EQ(out, (Shape{2, 4, 5, 5}));
  ASSERT_TRUE(broadcast_shapes({4, 1, 5}, {3, 1}, &out));
  EXPECT_EQ(out, (Shape{4, 3, 5}));
  ASSERT_TRUE(broadcast_shapes({}, {2, 3}, &out));
  EXPECT_EQ(out, (Shape{2, 3}));
  EXPECT_FALSE(broadcast_shapes({1, 4, 5, 5}, {1, 3, 1, 1}, &out));
}

// ---- ops --------------------------------------------------------------------------------------

TEST(ShapeInferenceTest, ConvolutionWithGroupsDilationAndStride) {
  Builder b;
  b.input("x", DType::Float32, {2, 8, 17, 12})
      .constant("w", DType::Float32, {16, 2, 3, 3})
      .constant("bias", DType::Float32, {16})
      .node("aten.convolution", {"x", "w", "bias"}, conv_args({2, 1}, {2}, {2, 1}, 4), {"y"})
      .node("aten.convolution", {"y", "dw", ""}, conv_args({1}, {1}, {1}, 16), {"z"})
      .constant("dw", DType::Float32, {16, 1, 3, 3});
  infer_shapes(b.g);
  // H: (17 + 4 - 2*2 - 1) / 2 + 1 = 9; W: (12 + 4 - 2 - 1) / 1 + 1 = 14.
  expect_type(b.g, "y", DType::Float32, {2, 16, 9, 14});
  expect_type(b.g, "z", DType::Float32, {2, 16, 9, 14});
}

TEST(ShapeInferenceTest, ConvolutionErrors) {
  auto graph = [](Shape w_shape, Args args, Shape bias_shape = {16}) {
    Builder b;
    b.input("x", DType::Float32, {1, 8, 6, 6})
        .constant("w", DType::Float32, std::move(w_shape))
        .constant("bias", DType::Float32, std::move(bias_shape))
        .node("aten.convolution", {"x", "w", "bias"}, std::move(args), {"y"});
    return b.g;
  };
  expect_infer_error(
      graph({16, 8, 3, 3}, conv_args({1}, {1}, {1}, 2)),
      {"node 0 (aten.convolution): input 'weight' (value 'w'): expected 4 input channels "
       "per group (input channels 8 / groups 2), got 8"});
  expect_infer_error(
      graph({16, 8, 3, 3}, conv_args({1}, {1}, {1}, 1), {8}),
      {"node 0 (aten.convolution): input 'bias' (value 'bias'): expected shape [16]"});
  expect_infer_error(graph({16, 8, 3, 3}, conv_args({1}, {1}, {1}, 3)),
                     {"input 'input' (value 'x'): input channels 8 are not divisible by groups 3"});
  expect_infer_error(graph({16, 8, 7, 7}, conv_args({1}, {0}, {1}, 1)),
                     {"input 'input' (value 'x'): spatial size 6x6", "too small for kernel 7x7"});
  expect_infer_error(graph({16, 8, 3, 3}, conv_args({1, 1, 1}, {1}, {1}, 1)),
                     {"argument 'stride': expected 1 or 2 integers, got [1, 1, 1]"});
  expect_infer_error(graph({16, 8, 3, 3}, conv_args({0}, {1}, {1}, 1)),
                     {"argument 'stride': each value must be >= 1"});
  Args transposed = conv_args({1}, {1}, {1}, 1);
  transposed["transposed"] = true;  // the weight is [C_in, C_out / groups, KH, KW] then
  expect_infer_error(graph({16, 8, 3, 3}, transposed),
                     {"input 'weight' (value 'w'): expected [C_in = 8, C_out / groups, KH, KW] "
                      "with C_in divisible by groups 1 (transposed), got [16, 8, 3, 3]"});
  transposed["output_padding"] = I{2, 0};
  expect_infer_error(graph({8, 16, 3, 3}, transposed),
                     {"argument 'output_padding': must be smaller than either stride [1, 1] or "
                      "dilation [1, 1], got [2, 0]"});

  // Dtypes: the edge graph convolves float32 (weights dequantized by dequantize_per_channel).
  Builder b;
  b.input("x", DType::Float32, {1, 8, 6, 6})
      .constant("w", DType::Int8, {16, 8, 3, 3})
      .node("aten.convolution", {"x", "w"}, conv_args({1}, {1}, {1}, 1), {"y"});
  expect_infer_error(b.g, {"node 0 (aten.convolution): input 'weight' (value 'w'): expected dtype "
                           "float32, got int8"});
}

TEST(ShapeInferenceTest, Linear) {
  Builder b;
  b.input("x", DType::Float32, {2, 3, 8})
      .constant("w", DType::Float32, {5, 8})
      .constant("bias", DType::Float32, {5})
      .node("aten.linear", {"x", "w", "bias"}, {}, {"y"})
      .node("aten.linear", {"y", "w2"}, {}, {"z"})
      .constant("w2", DType::Float32, {7, 5});
  infer_shapes(b.g);
  expect_type(b.g, "y", DType::Float32, {2, 3, 5});
  expect_type(b.g, "z", DType::Float32, {2, 3, 7});

  Builder bad;
  bad.input("x", DType::Float32, {2, 8})
      .constant("w", DType::Float32, {5, 6})
      .node("aten.linear", {"x", "w"}, {}, {"y"});
  expect_infer_error(bad.g,
                     {"node 0 (aten.linear): input 'weight' (value 'w'): expected [N, 8] (input "
                      "features 8), got [5, 6]"});
}

TEST(ShapeInferenceTest, AddBroadcastsAndChecks) {
  Builder b;
  b.input("x", DType::Float32, {1, 4, 5, 5})
      .constant("c", DType::Float32, {1, 4, 1, 1})
      .constant("s", DType::Float32, {1, 1, 1, 1})
      .node("aten.add.Tensor", {"x", "c"}, {{"alpha", int64_t{1}}}, {"y"})
      .node("aten.add.Tensor", {"s", "y"}, {}, {"z"});
  infer_shapes(b.g);
  expect_type(b.g, "y", DType::Float32, {1, 4, 5, 5});
  expect_type(b.g, "z", DType::Float32, {1, 4, 5, 5});

  Builder bad;
  bad.input("x", DType::Float32, {1, 4, 5, 5})
      .constant("c", DType::Float32, {1, 3, 1, 1})
      .node("aten.add.Tensor", {"x", "c"}, {}, {"y"});
  expect_infer_error(bad.g,
                     {"node 0 (aten.add.Tensor): input 'other' (value 'c'): shape [1, 3, 1, 1] "
                      "does not broadcast with self shape [1, 4, 5, 5]"});
}

TEST(ShapeInferenceTest, ActivationsKeepTheShape) {
  Builder b;
  b.input("x", DType::Float32, {1, 3, 4, 4})
      .node("aten.relu", {"x"}, {}, {"a"})
      .node("aten.hardtanh", {"a"}, {{"min_val", 0.0}, {"max_val", 6.0}}, {"b"})
      .node("aten.clamp", {"b"}, {{"min", NoneArg{}}, {"max", int64_t{3}}}, {"c"});
  infer_shapes(b.g);
  expect_type(b.g, "c", DType::Float32, {1, 3, 4, 4});

  Builder none;
  none.input("x", DType::Float32, {1, 3, 4, 4})
      .node("aten.clamp", {"x"}, {{"min", NoneArg{}}, {"max", NoneArg{}}}, {"y"});
  expect_infer_error(none.g, {"node 0 (aten.clamp): arguments 'min'/'max': at least one of min "
                              "and max must not be None"});
  Builder int8;
  int8.input("x", DType::Int8, {1, 3, 4, 4}).node("aten.relu", {"x"}, {}, {"y"});
  expect_infer_error(int8.g,
                     {"node 0 (aten.relu): input 'self' (value 'x'): expected dtype float32, got "
                      "int8"});
}

// The smooth activations keep the shape; their arguments are checked.
TEST(ShapeInferenceTest, SmoothActivationsKeepTheShape) {
  Builder b;
  b.input("x", DType::Float32, {2, 3, 5})
      .node("aten.hardswish", {"x"}, {}, {"a"})
      .node("aten.gelu", {"a"}, {{"approximate", std::string("tanh")}}, {"b"})
      .node("aten.elu", {"b"}, {{"alpha", 0.5}}, {"c"})
      .node("aten.leaky_relu", {"c"}, {}, {"d"});
  infer_shapes(b.g);
  expect_type(b.g, "d", DType::Float32, {2, 3, 5});

  Builder gelu;
  gelu.input("x", DType::Float32, {4})
      .node("aten.gelu", {"x"}, {{"approximate", std::string("erf")}}, {"y"});
  expect_infer_error(gelu.g, {"node 0 (aten.gelu): argument 'approximate': expected \"none\", "
                              "\"tanh\" or None, got \"erf\""});
  Builder elu;
  elu.input("x", DType::Float32, {4}).node("aten.elu", {"x"}, {{"scale", INFINITY}}, {"y"});
  expect_infer_error(elu.g,
                     {"node 0 (aten.elu): argument 'scale': expected a finite value, got inf"});
  Builder int8;
  int8.input("x", DType::Int8, {4}).node("aten.sigmoid", {"x"}, {}, {"y"});
  expect_infer_error(int8.g, {"node 0 (aten.sigmoid): input 'self' (value 'x'): expected dtype "
                              "float32, got int8"});
}

TEST(ShapeInferenceTest, SoftmaxDimAndConversions) {
  Builder b;
  b.input("x", DType::Float32, {2, 3, 5})
      .node("aten._softmax", {"x"}, {{"dim", int64_t{-3}}, {"half_to_float", false}}, {"a"})
      .node("aten.log_softmax.int", {"a"}, {{"dim", int64_t{2}}, {"dtype", NoneArg{}}}, {"b"});
  infer_shapes(b.g);
  expect_type(b.g, "b", DType::Float32, {2, 3, 5});

  Builder dim;
  dim.input("x", DType::Float32, {2, 3, 5})
      .node("aten._log_softmax", {"x"}, {{"dim", int64_t{3}}}, {"y"});
  expect_infer_error(dim.g, {"node 0 (aten._log_softmax): argument 'dim': expected a dim in "
                             "[-3, 3), got 3"});
  Builder half;
  half.input("x", DType::Float32, {4})
      .node("aten._softmax", {"x"}, {{"dim", int64_t{0}}, {"half_to_float", true}}, {"y"});
  expect_infer_error(half.g, {"node 0 (aten._softmax): argument 'half_to_float': must be false"});
  Builder dtype;
  dtype.input("x", DType::Float32, {4})
      .node("aten.softmax.int", {"x"}, {{"dim", int64_t{0}}, {"dtype", std::string("float64")}},
            {"y"});
  expect_infer_error(dtype.g, {"node 0 (aten.softmax.int): argument 'dtype': must be None"});
}

TEST(ShapeInferenceTest, LayerNormAndMultiHeadAttention) {
  Builder b;
  b.input("x", DType::Float32, {2, 7, 8})
      .constant("g", DType::Float32, {8})
      .constant("w", DType::Float32, {24, 8})
      .constant("wb", DType::Float32, {24})
      .constant("p", DType::Float32, {8, 8})
      .constant("pb", DType::Float32, {8})
      .input("kv", DType::Float32, {2, 3, 8})
      .node("aten.layer_norm", {"x", "g", "g"}, {{"normalized_shape", I{8}}}, {"n"})
      .node("aten._native_multi_head_attention", {"n", "kv", "kv", "w", "wb", "p", "pb"},
            {{"embed_dim", int64_t{8}},
             {"num_head", int64_t{2}},
             {"need_weights", true},
             {"average_attn_weights", false}},
            {"a", "aw"})
      .node("aten._native_multi_head_attention", {"a", "a", "a", "w", "wb", "p", "pb"},
            {{"embed_dim", int64_t{8}}, {"num_head", int64_t{4}}}, {"s", "sw"})
      .node("aten._native_multi_head_attention", {"s", "s", "s", "w", "wb", "p", "pb"},
            {{"embed_dim", int64_t{8}}, {"num_head", int64_t{1}}, {"need_weights", false}}, {"o"});
  infer_shapes(b.g);
  expect_type(b.g, "n", DType::Float32, {2, 7, 8});
  expect_type(b.g, "a", DType::Float32, {2, 7, 8});
  expect_type(b.g, "aw", DType::Float32, {2, 2, 7, 3});  // per head: [B, H, L, S]
  expect_type(b.g, "sw", DType::Float32, {2, 7, 7});     // averaged (the default)
  expect_type(b.g, "o", DType::Float32, {2, 7, 8});

  const auto one = [&](const std::string& op, std::vector<std::string> in, Args args,
                       std::vector<std::string> out) {
    Builder e = b;
    e.g.nodes.clear();
    e.node(op, std::move(in), std::move(args), std::move(out));
    return e.g;
  };
  expect_infer_error(one("aten.layer_norm", {"x"}, {{"normalized_shape", I{7}}}, {"y"}),
                     {"node 0 (aten.layer_norm): argument 'normalized_shape': [7] must be the "
                      "last dims of the input [2, 7, 8]"});
  expect_infer_error(one("aten.layer_norm", {"x", "wb"}, {{"normalized_shape", I{8}}}, {"y"}),
                     {"node 0 (aten.layer_norm)", "weight", "[24]"});
  const Args mha = {{"embed_dim", int64_t{8}}, {"num_head", int64_t{3}}};
  expect_infer_error(one("aten._native_multi_head_attention", {"x", "x", "x", "w", "wb", "p", "pb"},
                         mha, {"y", "yw"}),
                     {"argument 'num_head': 3 does not divide embed_dim 8"});
  expect_infer_error(one("aten._native_multi_head_attention", {"x", "x", "x", "p", "wb", "p", "pb"},
                         {{"embed_dim", int64_t{8}}, {"num_head", int64_t{2}}}, {"y", "yw"}),
                     {"qkv_weight", "[8, 8]"});
  expect_infer_error(
      one("aten._native_multi_head_attention", {"x", "x", "x", "w", "wb", "p", "pb", "x"},
          {{"embed_dim", int64_t{8}}, {"num_head", int64_t{2}}}, {"y", "yw"}),
      {"mask", "attention masks are not supported yet"});
  expect_infer_error(
      one("aten._native_multi_head_attention", {"x", "x", "x", "w", "wb", "p", "pb"},
          {{"embed_dim", int64_t{8}}, {"num_head", int64_t{2}}, {"need_weights", false}},
          {"y", "yw"}),
      {"expected 1 output(s), got 2"});
}

// The pooling ops of a sentence embedding: masked sum, division, L2 norm (ord 2 only), its
// clamp and the broadcast back, a conversion to float32.
TEST(ShapeInferenceTest, ReductionsConversionAndExpand) {
  Builder b;
  b.input("x", DType::Float32, {2, 7, 8})
      .input("i", DType::Int32, {2, 7})
      .node("aten.to.dtype", {"i"}, {{"dtype", std::string("float32")}}, {"f"})
      .node("aten.sum.dim_IntList", {"x"}, {{"dim", I{1}}}, {"s"})
      .node("aten.sum.dim_IntList", {"x"}, {{"dim", I{0, -1}}, {"keepdim", true}}, {"sk"})
      .node("aten.linalg_vector_norm", {"s"}, {{"dim", I{1}}, {"keepdim", true}}, {"n"})
      .node("aten.clamp_min", {"n"}, {{"min", 1e-12}}, {"c"})
      .node("aten.expand_as", {"c", "s"}, {}, {"e"})
      .node("aten.div.Tensor", {"s", "e"}, {}, {"d"});
  infer_shapes(b.g);
  expect_type(b.g, "f", DType::Float32, {2, 7});
  expect_type(b.g, "s", DType::Float32, {2, 8});
  expect_type(b.g, "sk", DType::Float32, {1, 7, 1});
  expect_type(b.g, "n", DType::Float32, {2, 1});
  expect_type(b.g, "c", DType::Float32, {2, 1});
  expect_type(b.g, "e", DType::Float32, {2, 8});
  expect_type(b.g, "d", DType::Float32, {2, 8});

  const auto one = [&](const std::string& op, std::vector<std::string> in, Args args) {
    Builder e = b;
    e.g.nodes.clear();
    e.node(op, std::move(in), std::move(args), {"y"});
    return e.g;
  };
  expect_infer_error(one("aten.linalg_vector_norm", {"x"}, {{"ord", 1.0}, {"dim", I{1}}}),
                     {"node 0 (aten.linalg_vector_norm): argument 'ord': ord 1 is not supported "
                      "(only ord 2)"});
  expect_infer_error(one("aten.sum.dim_IntList", {"x"}, {{"dim", I{1, -2}}}),
                     {"argument 'dim': dim -2 appears twice"});
  expect_infer_error(one("aten.sum.dim_IntList", {"x"}, {{"dim", I{3}}}),
                     {"argument 'dim': dim 3 is out of range for rank 3"});
  expect_infer_error(one("aten.to.dtype", {"x"}, {{"dtype", std::string("int8")}}),
                     {"argument 'dtype': int8 is not supported (only float32)"});
  expect_infer_error(one("aten.expand_as", {"x", "i"}, {}),
                     {"shape [2, 7, 8] does not expand to [2, 7]"});
  expect_infer_error(one("aten.div.Tensor", {"x", "i"}, {}), {"node 0 (aten.div.Tensor)", "other"});
}

TEST(ShapeInferenceTest, PixelShuffle) {
  Builder b;
  b.input("x", DType::Float32, {1, 18, 5, 7})
      .node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{3}}}, {"y"});
  infer_shapes(b.g);
  expect_type(b.g, "y", DType::Float32, {1, 2, 15, 21});

  Builder bad;
  bad.input("x", DType::Float32, {1, 12, 5, 7})
      .node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{3}}}, {"y"});
  expect_infer_error(bad.g,
                     {"node 0 (aten.pixel_shuffle): input 'self' (value 'x'): channels 12 are not "
                      "divisible by upscale_factor^2 = 9"});
}

TEST(ShapeInferenceTest, MaxPool2d) {
  Builder b;
  b.input("x", DType::Float32, {1, 2, 5, 7})
      .node("aten.max_pool2d", {"x"},
            {{"kernel_size", I{2}}, {"stride", I{2}}, {"padding", I{1}}, {"ceil_mode", true}},
            {"y"})
      .node("aten.max_pool2d", {"x"}, {{"kernel_size", I{3, 2}}, {"stride", I{}}}, {"z"});
  infer_shapes(b.g);
  // H 5: windows at -1, 1, 3 (the one at 5 starts in the right padding); W 7: -1 .. 5 -> 4.
  expect_type(b.g, "y", DType::Float32, {1, 2, 3, 4});
  // stride [] means kernel_size: H (5 - 3) / 3 + 1 = 1, W (7 - 2) / 2 + 1 = 3.
  expect_type(b.g, "z", DType::Float32, {1, 2, 1, 3});

  Builder bad;
  bad.input("x", DType::Float32, {1, 2, 5, 7})
      .node("aten.max_pool2d", {"x"}, {{"kernel_size", I{2}}, {"padding", I{2}}}, {"y"});
  expect_infer_error(bad.g, {"node 0 (aten.max_pool2d): argument 'padding': must be at most half "
                             "of kernel_size [2, 2], got [2, 2]"});
  Builder small;
  small.input("x", DType::Float32, {1, 2, 2, 2})
      .node("aten.max_pool2d", {"x"}, {{"kernel_size", I{3}}}, {"y"});
  expect_infer_error(small.g,
                     {"node 0 (aten.max_pool2d): input 'self' (value 'x'): spatial size 2x2 is "
                      "too small for kernel_size [3, 3]"});
}

TEST(ShapeInferenceTest, MeanAndAdaptiveAvgPool) {
  Builder b;
  b.input("x", DType::Float32, {2, 6, 5, 7})
      .node("aten.mean.dim", {"x"}, {{"dim", I{2, 3}}, {"keepdim", false}}, {"m"})
      .node("aten.mean.dim", {"x"}, {{"dim", I{-1, -2}}, {"keepdim", true}}, {"k"})
      .node("aten.adaptive_avg_pool2d", {"x"}, {{"output_size", I{1, 1}}}, {"a"});
  infer_shapes(b.g);
  expect_type(b.g, "m", DType::Float32, {2, 6});
  expect_type(b.g, "k", DType::Float32, {2, 6, 1, 1});
  expect_type(b.g, "a", DType::Float32, {2, 6, 1, 1});

  Builder bad_dim;
  bad_dim.input("x", DType::Float32, {2, 6, 5, 7})
      .node("aten.mean.dim", {"x"}, {{"dim", I{1}}}, {"m"});
  expect_infer_error(bad_dim.g, {"node 0 (aten.mean.dim): argument 'dim': only the spatial dims "
                                 "[-1, -2] / [2, 3] are supported, got [1]"});
  Builder sizes;  // any output size, one int for both dims
  sizes.input("x", DType::Float32, {6, 5, 7})
      .node("aten.adaptive_avg_pool2d", {"x"}, {{"output_size", I{3, 9}}}, {"a"})
      .node("aten.adaptive_avg_pool2d", {"x"}, {{"output_size", I{2}}}, {"b"});
  infer_shapes(sizes.g);
  expect_type(sizes.g, "a", DType::Float32, {6, 3, 9});
  expect_type(sizes.g, "b", DType::Float32, {6, 2, 2});
  Builder bad_size;
  bad_size.input("x", DType::Float32, {2, 6, 5, 7})
      .node("aten.adaptive_avg_pool2d", {"x"}, {{"output_size", I{2, 0}}}, {"a"});
  expect_infer_error(bad_size.g, {"node 0 (aten.adaptive_avg_pool2d): argument 'output_size'"});
}

// avg_pool2d: PyTorch's output size (as max_pool2d's with dilation 1), an absent stride is the
// kernel size; padding above half the kernel and a zero divisor_override are refused.
TEST(ShapeInferenceTest, AvgPool2d) {
  Builder b;
  b.input("x", DType::Float32, {1, 3, 7, 6})
      .node("aten.avg_pool2d", {"x"},
            {{"kernel_size", I{3, 3}},
             {"stride", I{2, 2}},
             {"padding", I{1, 1}},
             {"ceil_mode", true},
             {"count_include_pad", false}},
            {"c"})
      .node("aten.avg_pool2d", {"x"}, {{"kernel_size", I{2}}, {"divisor_override", int64_t{3}}},
            {"f"});
  infer_shapes(b.g);
  expect_type(b.g, "c", DType::Float32, {1, 3, 4, 4});  // ceil((7 + 2 - 3) / 2) + 1, same for 6
  expect_type(b.g, "f", DType::Float32, {1, 3, 3, 3});

  Builder pad;
  pad.input("x", DType::Float32, {1, 3, 7, 6})
      .node("aten.avg_pool2d", {"x"}, {{"kernel_size", I{3, 3}}, {"padding", I{2, 1}}}, {"p"});
  expect_infer_error(pad.g, {"node 0 (aten.avg_pool2d): argument 'padding': must be at most half "
                             "of kernel_size [3, 3], got [2, 1]"});
  Builder div;
  div.input("x", DType::Float32, {1, 3, 7, 6})
      .node("aten.avg_pool2d", {"x"}, {{"kernel_size", I{3, 3}}, {"divisor_override", int64_t{0}}},
            {"p"});
  expect_infer_error(div.g, {"node 0 (aten.avg_pool2d): argument 'divisor_override': must not be "
                             "0"});
}

TEST(ShapeInferenceTest, ViewCopyAndClones) {
  Builder b;
  b.input("x", DType::Int8, {2, 3, 4, 5})
      .node("aten.view_copy", {"x"}, {{"size", I{2, -1, 5}}}, {"v"})
      .node("aten.clone", {"v"}, {{"memory_format", std::string("torch.contiguous_format")}}, {"c"})
      .node("aten.alias_copy", {"c"}, {}, {"a"})
      .node("aten._clone_dim_order", {"x"}, {{"dim_order", I{0, 2, 3, 1}}}, {"d"});
  infer_shapes(b.g);
  expect_type(b.g, "v", DType::Int8, {2, 12, 5});
  expect_type(b.g, "a", DType::Int8, {2, 12, 5});
  expect_type(b.g, "d", DType::Int8, {2, 3, 4, 5});

  auto view = [](I size) {
    Builder g;
    g.input("x", DType::Float32, {2, 3, 4, 5})
        .node("aten.view_copy", {"x"}, {{"size", size}}, {"v"});
    return g.g;
  };
  expect_infer_error(view({2, 3, 4, 6}), {"node 0 (aten.view_copy): argument 'size': [2, 3, 4, 6] "
                                          "has 144 elements, but the input shape [2, 3, 4, 5] has "
                                          "120"});
  expect_infer_error(view({-1, -1}), {"argument 'size': -1 appears more than once"});
  expect_infer_error(view({7, -1}), {"argument 'size': [7, -1] is invalid for input of shape"});
  Builder order;
  order.input("x", DType::Float32, {2, 3})
      .node("aten._clone_dim_order", {"x"}, {{"dim_order", I{0, 0}}}, {"y"});
  expect_infer_error(order.g, {"node 0 (aten._clone_dim_order): argument 'dim_order': expected a "
                               "permutation of the 2 dims"});
}

// Views up to the graph rank (ShuffleNet's 5-D channel shuffle), permutes and transposes of any
// dtype, with negative dims; bad dims name the node and the argument.
TEST(ShapeInferenceTest, FiveDimViewsPermutesAndTransposes) {
  Builder b;
  b.input("x", DType::Int8, {1, 6, 4, 5})
      .node("aten.view_copy", {"x"}, {{"size", I{1, 2, 3, 4, 5}}}, {"v"})
      .node("aten.transpose_copy.int", {"v"}, {{"dim0", int64_t{1}}, {"dim1", int64_t{-3}}}, {"t"})
      .node("aten.transpose.int", {"x"}, {{"dim0", int64_t{-1}}, {"dim1", int64_t{-1}}}, {"s"})
      .node("aten.permute_copy", {"x"}, {{"dims", I{0, 2, 3, 1}}}, {"p"})
      .node("aten.permute", {"p"}, {{"dims", I{-4, -1, 1, 2}}}, {"q"});
  infer_shapes(b.g);
  expect_type(b.g, "v", DType::Int8, {1, 2, 3, 4, 5});
  expect_type(b.g, "t", DType::Int8, {1, 3, 2, 4, 5});
  expect_type(b.g, "s", DType::Int8, {1, 6, 4, 5});
  expect_type(b.g, "p", DType::Int8, {1, 4, 5, 6});
  expect_type(b.g, "q", DType::Int8, {1, 6, 4, 5});

  auto permute = [](I dims) {
    Builder g;
    g.input("x", DType::Float32, {2, 3, 4})
        .node("aten.permute_copy", {"x"}, {{"dims", dims}}, {"y"});
    return g.g;
  };
  expect_infer_error(permute({0, 1}), {"node 0 (aten.permute_copy): argument 'dims': expected 3 "
                                       "dims for shape [2, 3, 4], got [0, 1]"});
  expect_infer_error(permute({0, 2, -1}), {"argument 'dims': dim 2 appears more than once in "
                                           "[0, 2, -1]"});
  expect_infer_error(permute({0, 1, 3}), {"argument 'dims': dim 3 is out of range for rank 3 "
                                          "(expected -3..2)"});
  Builder t;
  t.input("x", DType::Float32, {2, 3})
      .node("aten.transpose.int", {"x"}, {{"dim0", int64_t{0}}, {"dim1", int64_t{-3}}}, {"y"});
  expect_infer_error(t.g, {"node 0 (aten.transpose.int): argument 'dim1': dim -3 is out of "
                           "range for rank 2"});
  Builder v7;
  v7.input("x", DType::Float32, {128})
      .node("aten.view_copy", {"x"}, {{"size", I{2, 2, 2, 2, 2, 2, 2}}}, {"y"});
  expect_infer_error(v7.g, {"node 0 (aten.view_copy)", "rank 7 is above the supported 6"});
}

TEST(ShapeInferenceTest, CatAndSplits) {
  Builder b;
  b.input("a", DType::Int8, {2, 3, 4}).input("c", DType::Int8, {2, 5, 4});
  b.node("aten.cat", {"a", "c", "a"}, {{"dim", int64_t{-2}}}, {"y"})
      .node("aten.split_with_sizes_copy", {"y"}, {{"split_sizes", I{1, 9, 1}}, {"dim", int64_t{1}}},
            {"s0", "s1", "s2"})
      .node("aten.chunk", {"y"}, {{"chunks", int64_t{4}}, {"dim", int64_t{1}}},
            {"k0", "k1", "k2", "k3"})
      .node("aten.split_copy.Tensor", {"y"}, {{"split_size", int64_t{3}}, {"dim", int64_t{2}}},
            {"t0", "t1"})
      .node("aten.slice_copy.Tensor", {"y"},
            {{"dim", int64_t{1}}, {"start", int64_t{2}}, {"end", NoneArg{}}, {"step", int64_t{4}}},
            {"l"});
  infer_shapes(b.g);
  expect_type(b.g, "y", DType::Int8, {2, 11, 4});
  expect_type(b.g, "s1", DType::Int8, {2, 9, 4});
  expect_type(b.g, "k3", DType::Int8, {2, 2, 4});  // 3, 3, 3, 2
  expect_type(b.g, "t1", DType::Int8, {2, 11, 1});
  expect_type(b.g, "l", DType::Int8, {2, 3, 4});  // 2, 6, 10

  auto cat = [](Shape second, DType dtype, int64_t dim) {
    Builder g;
    g.input("a", DType::Float32, {2, 3, 4}).input("b", dtype, std::move(second));
    g.node("aten.cat", {"a", "b"}, {{"dim", dim}}, {"y"});
    return g.g;
  };
  expect_infer_error(cat({2, 3, 5}, DType::Float32, 1),
                     {"node 0 (aten.cat): input 'tensors' [1] (value 'b'): shape [2, 3, 5] does "
                      "not match the first tensor's [2, 3, 4] in every dim but 1"});
  expect_infer_error(cat({2, 3, 4}, DType::Int8, 1),
                     {"input 'tensors' [1] (value 'b'): dtype int8 differs from the first "
                      "tensor's float32"});
  expect_infer_error(cat({2, 3, 4}, DType::Float32, 3),
                     {"node 0 (aten.cat): argument 'dim': dim 3 is out of range for rank 3"});
  auto split = [](const std::string& op, Args args, size_t outputs) {
    Builder g;
    g.input("x", DType::Float32, {2, 10});
    std::vector<std::string> outs;
    for (size_t k = 0; k < outputs; ++k) outs.push_back("o" + std::to_string(k));
    g.node(op, {"x"}, std::move(args), outs);
    return g.g;
  };
  expect_infer_error(split("aten.split_with_sizes_copy", {{"split_sizes", I{3, 3}}}, 2),
                     {"node 0 (aten.split_with_sizes_copy): argument 'split_sizes': split_sizes "
                      "add up to 6, the dim has 2"});
  expect_infer_error(split("aten.chunk", {{"chunks", int64_t{0}}, {"dim", int64_t{1}}}, 1),
                     {"argument 'chunks': chunks must be positive, got 0"});
  expect_infer_error(
      split("aten.split_copy.Tensor", {{"split_size", int64_t{0}}, {"dim", int64_t{1}}}, 1),
      {"argument 'split_size': split_size can only be 0 if the dim is 0 long"});
  expect_infer_error(
      split("aten.slice_copy.Tensor", {{"dim", int64_t{1}}, {"step", int64_t{0}}}, 1),
      {"argument 'step': slice step must be positive, got 0"});
  expect_infer_error(split("aten.chunk", {{"chunks", int64_t{3}}, {"dim", int64_t{1}}}, 2),
                     {"node 0 (aten.chunk): outputs: expected 3 output(s), got 2"});
}

TEST(ShapeInferenceTest, QuantizeDequantize) {
  Builder b;
  b.input("x", DType::Float32, {1, 3, 4, 4})
      .node("quantized_decomposed.quantize_per_tensor", {"x"}, qargs(), {"q"})
      .node("quantized_decomposed.dequantize_per_tensor", {"q"}, qargs(), {"d"})
      .constant("w", DType::Int8, {6, 3, 1, 1})
      .constant("s", DType::Float32, {6})
      .constant("zp", DType::Int32, {6})
      .node("quantized_decomposed.dequantize_per_channel", {"w", "s", "zp"},
            {{"axis", int64_t{-4}},
             {"quant_min", int64_t{-127}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            {"wd"});
  infer_shapes(b.g);
  expect_type(b.g, "q", DType::Int8, {1, 3, 4, 4});
  expect_type(b.g, "d", DType::Float32, {1, 3, 4, 4});
  expect_type(b.g, "wd", DType::Float32, {6, 3, 1, 1});

  Builder int16;
  int16.input("x", DType::Float32, {1, 3, 4, 4})
      .node("quantized_decomposed.quantize_per_tensor", {"x"}, qargs("int16"), {"q"});
  expect_infer_error(int16.g, {"node 0 (quantized_decomposed.quantize_per_tensor): argument "
                               "'dtype': expected \"int8\", got \"int16\""});
  Builder range;
  Args wide = qargs();
  wide["quant_max"] = int64_t{255};
  range.input("x", DType::Float32, {4})
      .node("quantized_decomposed.quantize_per_tensor", {"x"}, wide, {"q"});
  expect_infer_error(range.g, {"argument 'quant_max': expected a value in [-128, 127] for int8, "
                               "got 255"});
  Builder scale;
  Args zero_scale = qargs();
  zero_scale["scale"] = 0.0;
  scale.input("x", DType::Float32, {4})
      .node("quantized_decomposed.quantize_per_tensor", {"x"}, zero_scale, {"q"});
  expect_infer_error(scale.g, {"argument 'scale': expected a finite value > 0, got 0"});
  Builder scales;
  scales.constant("w", DType::Int8, {6, 3, 1, 1})
      .constant("s", DType::Float32, {3})
      .node("quantized_decomposed.dequantize_per_channel", {"w", "s"},
            {{"axis", int64_t{0}},
             {"quant_min", int64_t{-127}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            {"wd"});
  expect_infer_error(scales.g,
                     {"node 0 (quantized_decomposed.dequantize_per_channel): input "
                      "'scales' (value 's'): expected shape [6] (one per channel along axis), "
                      "got [3]"});
  Builder deq_float;
  deq_float.input("x", DType::Float32, {4})
      .node("quantized_decomposed.dequantize_per_tensor", {"x"}, qargs(), {"d"});
  expect_infer_error(deq_float.g, {"input 'input' (value 'x'): expected dtype int8, got float32"});
}

TEST(ShapeInferenceTest, AffineOps) {
  Args choose = {{"mapping_type", std::string("SYMMETRIC")},
                 {"block_size", I{1, 32}},
                 {"target_dtype", std::string("int8")},
                 {"quant_min", NoneArg{}},
                 {"quant_max", NoneArg{}},
                 {"eps", NoneArg{}}};
  Args quant = {{"block_size", I{1, 32}},
                {"output_dtype", std::string("int8")},
                {"quant_min", int64_t{-128}},
                {"quant_max", int64_t{127}}};
  Args dequant = {{"block_size", I{1, 32}},
                  {"input_dtype", std::string("int8")},
                  {"quant_min", int64_t{-128}},
                  {"quant_max", int64_t{127}}};
  Builder b;
  b.input("x", DType::Float32, {4, 64})
      .node("torchao.choose_qparams_affine", {"x"}, choose, {"s", "z"})
      .node("torchao.quantize_affine", {"x", "s", "z"}, quant, {"q"})
      .node("torchao.dequantize_affine", {"q", "s", "z"}, dequant, {"d"})
      .constant("s2", DType::Float32, {4, 2})  // without the zero point
      .node("torchao.dequantize_affine", {"q", "s2"}, dequant, {"d2"})
      .constant("s3", DType::Float32, {8})  // squeezed: [4, 2] -> not matching 8
      .node("torchao.dequantize_affine", {"q", "s3"}, dequant, {"d3"});
  Graph ok = b.g;
  ok.nodes.pop_back();
  infer_shapes(ok);
  expect_type(ok, "s", DType::Float32, {4, 2});
  expect_type(ok, "z", DType::Int32, {4, 2});
  expect_type(ok, "q", DType::Int8, {4, 64});
  expect_type(ok, "d", DType::Float32, {4, 64});
  expect_type(ok, "d2", DType::Float32, {4, 64});
  expect_infer_error(
      b.g, {"node 4 (torchao.dequantize_affine): input 'scale' (value 's3'): expected shape "
            "[4, 2] (input shape / block_size), got [8]"});

  Builder per_row;  // torchao drops size-1 dims of the scale: [4, 1] given as [4]
  Args row = quant;
  row["block_size"] = I{1, 64};
  per_row.input("x", DType::Float32, {4, 64})
      .constant("s", DType::Float32, {4})
      .node("torchao.quantize_affine", {"x", "s"}, row, {"q"});
  infer_shapes(per_row.g);
  expect_type(per_row.g, "q", DType::Int8, {4, 64});

  Builder bad_block;
  Args block = quant;
  block["block_size"] = I{1, 24};
  bad_block.input("x", DType::Float32, {4, 64})
      .constant("s", DType::Float32, {4, 2})
      .node("torchao.quantize_affine", {"x", "s"}, block, {"q"});
  expect_infer_error(bad_block.g, {"node 0 (torchao.quantize_affine): argument 'block_size': "
                                   "[1, 24] does not divide input shape [4, 64] (dim 1)"});
  Builder bad_rank;
  Args rank = quant;
  rank["block_size"] = I{32};
  bad_rank.input("x", DType::Float32, {4, 64})
      .constant("s", DType::Float32, {4, 2})
      .node("torchao.quantize_affine", {"x", "s"}, rank, {"q"});
  expect_infer_error(bad_rank.g, {"argument 'block_size': expected 2 entries (the input rank"});
  Builder mapping;
  Args m = choose;
  m["mapping_type"] = std::string("WEIRD");
  mapping.input("x", DType::Float32, {4, 64})
      .node("torchao.choose_qparams_affine", {"x"}, m, {"s", "z"});
  expect_infer_error(mapping.g, {"argument 'mapping_type': expected \"SYMMETRIC\", "
                                 "\"ASYMMETRIC\", \"SYMMETRIC_NO_CLIPPING_ERR\", got \"WEIRD\""});
  Builder outs;
  outs.input("x", DType::Float32, {4, 64})
      .node("torchao.choose_qparams_affine", {"x"}, choose, {"s"});
  expect_infer_error(outs.g, {"node 0 (torchao.choose_qparams_affine): outputs: expected 2 "
                              "output(s), got 1"});
}

// ---- declared outputs, reruns, unknown ops -----------------------------------------------------

TEST(ShapeInferenceTest, DeclaredOutputMustMatchAndRerunsAreIdempotent) {
  Builder b;
  b.input("x", DType::Float32, {1, 3, 4, 4}).node("aten.relu", {"x"}, {}, {"y"});
  Value declared;
  declared.name = "y";
  declared.dtype = DType::Float32;
  declared.shape = {1, 3, 4, 4};
  b.g.add_value(declared);
  infer_shapes(b.g);
  infer_shapes(b.g);  // everything is now declared: checked, unchanged
  expect_type(b.g, "y", DType::Float32, {1, 3, 4, 4});
  EXPECT_EQ(b.g.value_names().size(), 2u);

  b.g.value("y").shape = {1, 3, 4, 5};
  expect_infer_error(b.g, {"node 0 (aten.relu): output 'y': declared float32 [1, 3, 4, 5], "
                           "inferred float32 [1, 3, 4, 4]"});

  Builder over_input;
  over_input.input("x", DType::Float32, {4}).node("aten.relu", {"x"}, {}, {"x"});
  expect_infer_error(over_input.g, {"node 0 (aten.relu): output 'x': is already defined as a "
                                    "graph input"});
}

TEST(ShapeInferenceTest, UnknownOpsAndUndefinedInputs) {
  Builder b;
  b.input("x", DType::Float32, {4}).node("q8ta_conv2d", {"x"}, {}, {"y"});
  expect_infer_error(b.g, {"node 0 (q8ta_conv2d): op: unknown op 'q8ta_conv2d' for shape "
                           "inference"});
  Builder u;
  u.input("x", DType::Float32, {4}).node("aten.relu", {"nope"}, {}, {"y"});
  expect_infer_error(
      u.g, {"node 0 (aten.relu): input 'self' (value 'nope'): value 'nope' is not defined"});
  Builder missing;
  missing.input("x", DType::Float32, {1, 4, 2, 2}).node("aten.pixel_shuffle", {"x"}, {}, {"y"});
  expect_infer_error(missing.g, {"node 0 (aten.pixel_shuffle): missing argument 'upscale_factor'"});
  Builder no_origin;
  no_origin.input("x", DType::Int8, {4}).node("aten.relu", {"x"}, {}, {"y"});
  no_origin.g.nodes[0].origin.clear();
  expect_infer_error(no_origin.g,
                     {"node 0 (aten.relu): input 'self' (value 'x'): expected dtype float32"});
}

// An op without a descriptor is not inferred: its declared outputs are taken as they are and
// later nodes are inferred from them; an undeclared output names the node, the op and itself.
TEST(ShapeInferenceTest, UnknownOpOutputsAreTheDeclaredValues) {
  Builder b;
  b.input("x", DType::Float32, {1, 2, 3})
      .node("aten.unsqueeze_copy", {"x"}, {{"dim", int64_t{0}}}, {"u"})
      .node("aten.relu", {"u"}, {}, {"y"});
  Value u;
  u.name = "u";
  u.shape = {1, 1, 2, 3, 1, 1};
  b.g.add_value(u);
  infer_shapes(b.g);
  expect_type(b.g, "u", DType::Float32, {1, 1, 2, 3, 1, 1});
  expect_type(b.g, "y", DType::Float32, {1, 1, 2, 3, 1, 1});  // rank 6 is a graph rank

  Builder undeclared;
  undeclared.input("x", DType::Float32, {4}).node("aten.cumsum", {"x"}, {}, {"y"});
  expect_infer_error(undeclared.g,
                     {"node 0 (aten.cumsum): ", "unknown op 'aten.cumsum'",
                      "output 'y' is not declared", "declare its dtype and shape in 'values'"});
}

}  // namespace
}  // namespace vkd::compiler
