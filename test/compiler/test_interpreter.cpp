// The CPU reference interpreter (compiler/Interpreter.h): hand-computed tiny cases per
// op, the project's quantize rounding, torchao block-wise quantization, input checking.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "compiler/Interpreter.h"
#include "compiler/Parse.h"
#include "core/Error.h"
#include "test/reference/QuantReference.h"

namespace vkd::compiler {
namespace {

// Builds single-purpose graphs: graph inputs, constants, nodes with declared outputs.
class GraphBuilder {
 public:
  GraphBuilder& input(const std::string& name, DType dtype, std::vector<int64_t> shape) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    g.add_value(v);
    g.inputs.push_back(name);
    return *this;
  }
  GraphBuilder& constant(const std::string& name, const HostTensor& t) {
    Value v;
    v.name = name;
    v.dtype = t.dtype;
    v.shape = t.shape;
    v.data = t.bytes;
    g.add_value(v);
    return *this;
  }
  GraphBuilder& node(const std::string& op, std::vector<std::string> inputs, Args args,
                     const std::string& output, DType dtype, std::vector<int64_t> shape) {
    Value v;
    v.name = output;
    v.dtype = dtype;
    v.shape = std::move(shape);
    g.add_value(v);
    Node n;
    n.op = op;
    n.inputs = std::move(inputs);
    n.args = std::move(args);
    n.outputs = {output};
    n.origin = "node " + std::to_string(g.nodes.size()) + " (" + op + ")";
    g.nodes.push_back(std::move(n));
    return *this;
  }
  Graph g;
};

HostTensor iota_floats(std::vector<int64_t> shape, float start = 0.0f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return HostTensor::from_floats(std::move(shape), v);
}

// Runs a graph whose only input is "x" and returns value `out`.
HostTensor run1(const Graph& g, const HostTensor& x, const std::string& out = "y") {
  auto values = interpret(g, {{"x", x}});
  return values.at(out);
}

ErrorCode code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no vkd::Error thrown";
  return ErrorCode::Internal;
}

Args conv_args(std::vector<int64_t> stride, std::vector<int64_t> padding,
               std::vector<int64_t> dilation, int64_t groups) {
  return {{"stride", stride},
          {"padding", padding},
          {"dilation", dilation},
          {"transposed", false},
          {"output_padding", std::vector<int64_t>{0, 0}},
          {"groups", groups}};
}

// ---------------------------------------------------------------------------------------------

TEST(InterpreterHostTensor, RoundTripsAndChecks) {
  HostTensor f = HostTensor::from_floats({2}, {1.5f, -2.0f});
  EXPECT_EQ(f.bytes.size(), 8u);
  EXPECT_EQ(f.bytes[0], 0x00);  // 1.5f = 0x3fc00000, little-endian
  EXPECT_EQ(f.bytes[3], 0x3f);
  EXPECT_EQ(f.to_floats(), (std::vector<float>{1.5f, -2.0f}));
  HostTensor i = HostTensor::from_int32({1, 2}, {-1, 256});
  EXPECT_EQ(i.bytes[4], 0x00);
  EXPECT_EQ(i.bytes[5], 0x01);
  EXPECT_EQ(i.to_int32(), (std::vector<int32_t>{-1, 256}));
  EXPECT_EQ(HostTensor::from_int8({3}, {-128, 0, 127}).to_int8(),
            (std::vector<int8_t>{-128, 0, 127}));
  EXPECT_EQ(HostTensor::from_floats({}, {7.0f}).numel(), 1);
  EXPECT_EQ(code_of([] { HostTensor::from_floats({2, 2}, {1.0f}); }), ErrorCode::InvalidArgument);
  EXPECT_EQ(code_of([&] { i.to_floats(); }), ErrorCode::InvalidArgument);
}

// 1x1x3x3 input 1..9, 2x2 kernel [1 2; 3 4], stride 2, padding 1, bias 0.5 -> 2x2.
TEST(InterpreterConv, StridePaddingBias) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 1, 3, 3})
      .constant("w", HostTensor::from_floats({1, 1, 2, 2}, {1, 2, 3, 4}))
      .constant("b", HostTensor::from_floats({1}, {0.5f}))
      .node("aten.convolution", {"x", "w", "b"}, conv_args({2}, {1}, {1}, 1), "y", DType::Float32,
            {1, 1, 2, 2});
  HostTensor y = run1(b.g, iota_floats({1, 1, 3, 3}, 1.0f));
  // (0,0): 1*4; (0,1): 2*3 + 3*4; (1,0): 4*2 + 7*4; (1,1): 5*1 + 6*2 + 8*3 + 9*4
  EXPECT_EQ(y.shape, (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(y.to_floats(), (std::vector<float>{4.5f, 18.5f, 36.5f, 77.5f}));
}

TEST(InterpreterConv, NoBiasDilationAndTwoIntStride) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 1, 4, 4})
      .constant("w", HostTensor::from_floats({1, 1, 2, 2}, {1, 1, 1, 1}))
      .node("aten.convolution", {"x", "w", ""}, conv_args({1, 1}, {0, 0}, {2, 2}, 1), "y",
            DType::Float32, {1, 1, 2, 2})
      .node("aten.convolution", {"x", "w"}, conv_args({1, 2}, {0, 1}, {1, 1}, 1), "z",
            DType::Float32, {1, 1, 3, 3});
  auto values = interpret(b.g, {{"x", iota_floats({1, 1, 4, 4})}});
  // taps (0,0),(0,2),(2,0),(2,2) of x = 4*r + c
  EXPECT_EQ(values.at("y").to_floats(), (std::vector<float>{20, 24, 36, 40}));
  // stride (1, 2), padding (0, 1): columns -1..0, 1..2, 3..4 of each row pair
  EXPECT_EQ(values.at("z").to_floats(),
            (std::vector<float>{0 + 4, 1 + 2 + 5 + 6, 3 + 7, 4 + 8, 5 + 6 + 9 + 10, 7 + 11, 8 + 12,
                                9 + 10 + 13 + 14, 11 + 15}));
}

TEST(InterpreterConv, Groups) {
  // Input channels [1..4] and [5..8]; 4 outputs, 2 groups: outputs 0,1 read channel 0,
  // outputs 2,3 read channel 1.
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 2, 2, 2})
      .constant("w", HostTensor::from_floats({4, 1, 1, 1}, {1, 2, 3, 4}))
      .node("aten.convolution", {"x", "w"}, conv_args({1}, {0}, {1}, 2), "y", DType::Float32,
            {1, 4, 2, 2});
  HostTensor y = run1(b.g, iota_floats({1, 2, 2, 2}, 1.0f));
  EXPECT_EQ(y.to_floats(),
            (std::vector<float>{1, 2, 3, 4, 2, 4, 6, 8, 15, 18, 21, 24, 20, 24, 28, 32}));
}

TEST(InterpreterConv, Rejects) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 3, 4, 4})
      .constant("w", HostTensor::from_floats({2, 2, 1, 1}, {1, 1, 1, 1}))
      .node("aten.convolution", {"x", "w"}, conv_args({1}, {0}, {1}, 1), "y", DType::Float32,
            {1, 2, 4, 4});
  std::string msg;
  EXPECT_EQ(code_of([&] { run1(b.g, iota_floats({1, 3, 4, 4})); }, &msg),
            ErrorCode::InvalidArgument);
  EXPECT_NE(msg.find("node 0 (aten.convolution)"), std::string::npos) << msg;
  b.g.nodes[0].args["transposed"] = true;  // a transposed weight needs C_in = 3 rows
  EXPECT_EQ(code_of([&] { run1(b.g, iota_floats({1, 3, 4, 4})); }, &msg),
            ErrorCode::InvalidArgument);
  EXPECT_NE(msg.find("does not match input channels 3"), std::string::npos) << msg;
}

// y = x W^T + b on [2, 3] and [1, 2, 3] inputs.
TEST(InterpreterLinear, Basic) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 2, 3})
      .constant("w", HostTensor::from_floats({2, 3}, {1, 0, -1, 0.5f, 0.5f, 0.5f}))
      .constant("b", HostTensor::from_floats({2}, {10, 20}))
      .node("aten.linear", {"x", "w", "b"}, {}, "y", DType::Float32, {1, 2, 2})
      .node("aten.linear", {"x", "w"}, {}, "z", DType::Float32, {1, 2, 2});
  auto values = interpret(b.g, {{"x", iota_floats({1, 2, 3}, 1.0f)}});
  EXPECT_EQ(values.at("y").to_floats(), (std::vector<float>{8, 23, 8, 27.5f}));
  EXPECT_EQ(values.at("z").to_floats(), (std::vector<float>{-2, 3, -2, 7.5f}));
}

// A [1, 4, 2, 2] iota: out(0, 0, oh, ow) = in(0, (oh % 2) * 2 + ow % 2, oh / 2, ow / 2).
TEST(InterpreterPixelShuffle, IndexMapping) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 4, 2, 2})
      .node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{2}}}, "y", DType::Float32,
            {1, 1, 4, 4});
  HostTensor y = run1(b.g, iota_floats({1, 4, 2, 2}));
  EXPECT_EQ(y.to_floats(),
            (std::vector<float>{0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15}));
  // Same mapping on int8 (pure data movement).
  GraphBuilder bi;
  bi.input("x", DType::Int8, {1, 4, 1, 1})
      .node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{2}}}, "y", DType::Int8,
            {1, 1, 2, 2});
  EXPECT_EQ(run1(bi.g, HostTensor::from_int8({1, 4, 1, 1}, {-1, 2, -3, 4})).to_int8(),
            (std::vector<int8_t>{-1, 2, -3, 4}));
}

// float16 is moved bit for bit (binary16 bits, signed zero, infinity, a subnormal); an
// arithmetic op refuses it.
TEST(InterpreterPixelShuffle, Float16MovesBitsAndArithmeticRefusesIt) {
  GraphBuilder b;
  b.input("x", DType::Float16, {1, 4, 1, 1})
      .node("aten.clone", {"x"}, {}, "c", DType::Float16, {1, 4, 1, 1})
      .node("aten.pixel_shuffle", {"c"}, {{"upscale_factor", int64_t{2}}}, "y", DType::Float16,
            {1, 1, 2, 2});
  const std::vector<uint8_t> bits = {0x00, 0x80, 0x00, 0x7c, 0x01, 0x00, 0x55, 0xbc};
  const HostTensor y = run1(b.g, HostTensor{DType::Float16, {1, 4, 1, 1}, bits});
  EXPECT_EQ(y.dtype, DType::Float16);
  EXPECT_EQ(y.bytes, bits);  // [1, 4, 1, 1] -> [1, 1, 2, 2] keeps the element order
  GraphBuilder r;
  r.input("x", DType::Float16, {1, 4, 1, 1})
      .node("aten.relu", {"x"}, {}, "y", DType::Float16, {1, 4, 1, 1});
  std::string message;
  code_of([&] { run1(r.g, HostTensor{DType::Float16, {1, 4, 1, 1}, bits}); }, &message);
  EXPECT_NE(message.find("float16"), std::string::npos) << message;
}

TEST(InterpreterMaxPool, CeilModeAndPadding) {
  // 3x3, kernel 2, stride 2: floor gives 1x1, ceil gives 2x2 with partial windows.
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 1, 3, 3})
      .node("aten.max_pool2d", {"x"},
            {{"kernel_size", std::vector<int64_t>{2, 2}},
             {"stride", std::vector<int64_t>{2, 2}},
             {"padding", std::vector<int64_t>{0, 0}},
             {"dilation", std::vector<int64_t>{1, 1}},
             {"ceil_mode", true}},
            "y", DType::Float32, {1, 1, 2, 2})
      .node("aten.max_pool2d", {"x"}, {{"kernel_size", std::vector<int64_t>{2}}}, "z",
            DType::Float32, {1, 1, 1, 1});
  auto values = interpret(b.g, {{"x", iota_floats({1, 1, 3, 3}, 1.0f)}});
  EXPECT_EQ(values.at("y").to_floats(), (std::vector<float>{5, 6, 8, 9}));
  EXPECT_EQ(values.at("z").to_floats(), (std::vector<float>{5}));

  // 5x5, kernel 2, stride 2, padding 1, ceil_mode: the formula gives 4, but the 4th window
  // would start in the right padding, so PyTorch drops it: 3x3.
  GraphBuilder c;
  c.input("x", DType::Float32, {1, 1, 5, 5})
      .node("aten.max_pool2d", {"x"},
            {{"kernel_size", int64_t{2}},
             {"stride", int64_t{2}},
             {"padding", int64_t{1}},
             {"ceil_mode", true}},
            "y", DType::Float32, {1, 1, 3, 3});
  EXPECT_EQ(run1(c.g, iota_floats({1, 1, 5, 5})).to_floats(),
            (std::vector<float>{0, 2, 4, 10, 12, 14, 20, 22, 24}));

  // Padding is -inf, not 0: an all-negative input keeps its negative maxima.
  GraphBuilder d;
  d.input("x", DType::Float32, {1, 1, 2, 2})
      .node("aten.max_pool2d", {"x"},
            {{"kernel_size", int64_t{3}}, {"stride", int64_t{1}}, {"padding", int64_t{1}}}, "y",
            DType::Float32, {1, 1, 2, 2});
  EXPECT_EQ(run1(d.g, HostTensor::from_floats({1, 1, 2, 2}, {-4, -3, -2, -1})).to_floats(),
            (std::vector<float>{-1, -1, -1, -1}));

  // Dilation 2 on 4x4: taps (r, c), (r, c+2), (r+2, c), (r+2, c+2).
  GraphBuilder e;
  e.input("x", DType::Float32, {1, 1, 4, 4})
      .node("aten.max_pool2d", {"x"},
            {{"kernel_size", int64_t{2}}, {"stride", int64_t{1}}, {"dilation", int64_t{2}}}, "y",
            DType::Float32, {1, 1, 2, 2});
  // 9 at (2, 2) is a tap of output (0, 0) only, 7 at (3, 3) of output (1, 1) only.
  EXPECT_EQ(run1(e.g, HostTensor::from_floats({1, 1, 4, 4},
                                              {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 7}))
                .to_floats(),
            (std::vector<float>{9, 0, 0, 7}));

  // NaN wins.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  GraphBuilder f;
  f.input("x", DType::Float32, {1, 1, 2, 2})
      .node("aten.max_pool2d", {"x"}, {{"kernel_size", int64_t{2}}}, "y", DType::Float32,
            {1, 1, 1, 1});
  EXPECT_TRUE(
      std::isnan(run1(f.g, HostTensor::from_floats({1, 1, 2, 2}, {1, nan, 3, 2})).to_floats()[0]));

  // Padding larger than half the kernel is rejected, as in PyTorch.
  d.g.nodes[0].args["padding"] = int64_t{2};
  EXPECT_EQ(code_of([&] { run1(d.g, HostTensor::from_floats({1, 1, 2, 2}, {1, 2, 3, 4})); }),
            ErrorCode::InvalidArgument);
}

TEST(InterpreterQuantize, TiesToEvenAndClamping) {
  GraphBuilder b;
  b.input("x", DType::Float32, {10})
      .node("quantized_decomposed.quantize_per_tensor", {"x"},
            {{"scale", 0.5},
             {"zero_point", int64_t{0}},
             {"quant_min", int64_t{-128}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            "y", DType::Int8, {10})
      .node("quantized_decomposed.quantize_per_tensor", {"x"},
            {{"scale", 0.5},
             {"zero_point", int64_t{3}},
             {"quant_min", int64_t{-5}},
             {"quant_max", int64_t{5}},
             {"dtype", std::string("torch.int8")}},
            "z", DType::Int8, {10});
  // x * 2: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2, 3.5 -> 4, 200 -> 127, ...
  const HostTensor x =
      HostTensor::from_floats({10}, {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, 1.75f, 100, -100, 2, -2});
  auto values = interpret(b.g, {{"x", x}});
  EXPECT_EQ(values.at("y").to_int8(), (std::vector<int8_t>{0, 2, 2, 0, -2, 4, 127, -128, 4, -4}));
  // + 3, clamped to [-5, 5]
  EXPECT_EQ(values.at("z").to_int8(), (std::vector<int8_t>{3, 5, 5, 3, 1, 5, 5, -5, 5, -1}));
}

TEST(InterpreterQuantize, MatchesProjectReferenceRounding) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> xs(4096);
  for (float& v : xs) v = dist(rng);
  for (size_t i = 0; i < 64; ++i) xs[i] = (static_cast<float>(i) - 32.0f + 0.5f) * 0.0173f;
  for (const float scale : {0.0173f, 0.1f, 0.007f, 1.0f / 3.0f}) {
    for (const int zp : {0, -7, 11}) {
      GraphBuilder b;
      b.input("x", DType::Float32, {4096})
          .node("quantized_decomposed.quantize_per_tensor", {"x"},
                {{"scale", static_cast<double>(scale)},
                 {"zero_point", int64_t{zp}},
                 {"quant_min", int64_t{-128}},
                 {"quant_max", int64_t{127}},
                 {"dtype", std::string("int8")}},
                "q", DType::Int8, {4096})
          .node("quantized_decomposed.dequantize_per_tensor", {"q"},
                {{"scale", static_cast<double>(scale)},
                 {"zero_point", int64_t{zp}},
                 {"quant_min", int64_t{-128}},
                 {"quant_max", int64_t{127}},
                 {"dtype", std::string("int8")}},
                "y", DType::Float32, {4096});
      auto values = interpret(b.g, {{"x", HostTensor::from_floats({4096}, xs)}});
      const auto want_q = testing::reference_quantize(xs, scale, zp, -128, 127);
      EXPECT_EQ(values.at("q").to_int8(), want_q) << "scale " << scale << " zp " << zp;
      EXPECT_EQ(values.at("y").to_floats(), testing::reference_dequantize(want_q, scale, zp));
    }
  }
}

TEST(InterpreterDequantize, PerTensorAndPerChannel) {
  GraphBuilder b;
  b.input("x", DType::Int8, {2, 3})
      .constant("s", HostTensor::from_floats({2}, {0.5f, 2.0f}))
      .constant("zp", HostTensor::from_int32({2}, {1, -1}))
      .constant("s3", HostTensor::from_floats({3}, {1.0f, 0.25f, 4.0f}))
      .node("quantized_decomposed.dequantize_per_tensor", {"x"},
            {{"scale", 0.1},
             {"zero_point", int64_t{5}},
             {"quant_min", int64_t{-128}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            "t", DType::Float32, {2, 3})
      .node("quantized_decomposed.dequantize_per_channel", {"x", "s", "zp"},
            {{"axis", int64_t{0}},
             {"quant_min", int64_t{-128}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            "c0", DType::Float32, {2, 3})
      .node("quantized_decomposed.dequantize_per_channel", {"x", "s3", ""},
            {{"axis", int64_t{-1}},
             {"quant_min", int64_t{-128}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            "c1", DType::Float32, {2, 3});
  const std::vector<int8_t> q = {-128, 0, 5, 127, -1, 3};
  auto values = interpret(b.g, {{"x", HostTensor::from_int8({2, 3}, q)}});
  std::vector<float> want_t;
  for (int8_t v : q) want_t.push_back(static_cast<float>(v - 5) * 0.1f);
  EXPECT_EQ(values.at("t").to_floats(), want_t);
  EXPECT_EQ(values.at("c0").to_floats(),
            (std::vector<float>{-64.5f, -0.5f, 2.0f, 256.0f, 0.0f, 8.0f}));
  EXPECT_EQ(values.at("c1").to_floats(), (std::vector<float>{-128, 0, 20, 127, -0.25f, 12}));
}

// Per-group (group size 2) along the last dim of a [2, 4] tensor.
TEST(InterpreterAffine, QuantizeDequantizePerGroup) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 4})
      .constant("s", HostTensor::from_floats({2, 2}, {0.5f, 1.0f, 0.25f, 2.0f}))
      .constant("zp", HostTensor::from_int32({2, 2}, {0, 1, -1, 0}))
      .node("torchao.quantize_affine", {"x", "s", "zp"},
            {{"block_size", std::vector<int64_t>{1, 2}},
             {"output_dtype", std::string("int8")},
             {"quant_min", int64_t{-8}},
             {"quant_max", int64_t{7}}},
            "q", DType::Int8, {2, 4})
      .node("torchao.dequantize_affine", {"q", "s", "zp"},
            {{"block_size", std::vector<int64_t>{1, 2}},
             {"input_dtype", std::string("int8")},
             {"quant_min", int64_t{-8}},
             {"quant_max", int64_t{7}},
             {"output_dtype", std::string("float32")}},
            "y", DType::Float32, {2, 4});
  auto values =
      interpret(b.g, {{"x", HostTensor::from_floats({2, 4}, {1, 2, 3, 4, -1, -2, -3, -4})}});
  // groups: x/0.5 + 0 | x/1 + 1 | x/0.25 - 1 (-9 clamps to -8) | x/2: -1.5 -> -2 (even), -2
  EXPECT_EQ(values.at("q").to_int8(), (std::vector<int8_t>{2, 4, 4, 5, -5, -8, -2, -2}));
  EXPECT_EQ(values.at("y").to_floats(), (std::vector<float>{1, 2, 3, 4, -1, -1.75f, -4, -4}));
}

// torchao multiplies by the float32 reciprocal (`input * (1.0 / scale)`), which differs from a
// true division here: -10.15f / 0.1f rounds to -101, -10.15f * (1 / 0.1f) is exactly -101.5 and
// rounds (ties to even) to -102. torch 1.13 gives -102 for torch.round(x * (1.0 / s)).
TEST(InterpreterAffine, QuantizeMultipliesByReciprocal) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1})
      .constant("s", HostTensor::from_floats({1}, {0.1f}))
      .node("torchao.quantize_affine", {"x", "s"},
            {{"block_size", std::vector<int64_t>{-1}},
             {"output_dtype", std::string("int8")},
             {"quant_min", NoneArg{}},
             {"quant_max", NoneArg{}}},
            "y", DType::Int8, {1});
  EXPECT_EQ(run1(b.g, HostTensor::from_floats({1}, {-10.15f})).to_int8(),
            (std::vector<int8_t>{-102}));
}

TEST(InterpreterAffine, ChooseQparams) {
  const auto choose = [](const std::string& mapping, int64_t qmin, int64_t qmax,
                         const std::vector<float>& x, std::vector<int64_t> block,
                         std::vector<int64_t> qshape) {
    GraphBuilder b;
    b.input("x", DType::Float32, {1, 4});
    Value s;
    s.name = "scale";
    s.shape = qshape;
    b.g.add_value(s);
    Value z;
    z.name = "zp";
    z.dtype = DType::Int32;
    z.shape = qshape;
    b.g.add_value(z);
    Node n;
    n.op = "torchao.choose_qparams_affine";
    n.inputs = {"x"};
    n.args = {{"mapping_type", mapping},
              {"block_size", block},
              {"target_dtype", std::string("int8")},
              {"quant_min", qmin},
              {"quant_max", qmax},
              {"eps", 1e-5},
              {"scale_dtype", std::string("float32")},
              {"zero_point_dtype", std::string("int32")}};
    n.outputs = {"scale", "zp"};
    b.g.nodes.push_back(n);
    auto values = interpret(b.g, {{"x", HostTensor::from_floats({1, 4}, x)}});
    return std::make_pair(values.at("scale").to_floats(), values.at("zp").to_int32());
  };
  const float eps = static_cast<float>(1e-5);
  // Symmetric int8: scale = max(|min|, max) / 127.5, zero point int((127 - 128 + 1) / 2) = 0.
  // Block 2 is all zeros: scale 0 -> eps.
  auto [s1, z1] = choose("SYMMETRIC", -128, 127, {-1.0f, 0.5f, 0, 0}, {1, 2}, {1, 2});
  EXPECT_EQ(s1, (std::vector<float>{1.0f / 127.5f, eps}));
  EXPECT_EQ(z1, (std::vector<int32_t>{0, 0}));
  // Symmetric with [0, 15]: zero point int(16 / 2) = 8; scale 3 / 7.5.
  auto [s2, z2] = choose("MappingType.SYMMETRIC", 0, 15, {0.5f, 3.0f, -2.0f, 1.0f}, {1, 4}, {1});
  EXPECT_EQ(s2, (std::vector<float>{3.0f / 7.5f}));
  EXPECT_EQ(z2, (std::vector<int32_t>{8}));
  // Asymmetric: scale = (3 - -1) / 255, zero point -128 - round(-1 / scale) = -128 + 64 = -64.
  // All-zero block: scale eps (clamped before the zero point), zero point -128 - 0.
  auto [s3, z3] = choose("ASYMMETRIC", -128, 127, {-1.0f, 3.0f, 0, 0}, {1, 2}, {1, 2});
  EXPECT_EQ(s3, (std::vector<float>{4.0f / 255.0f, eps}));
  EXPECT_EQ(z3, (std::vector<int32_t>{-64, -128}));
  // Asymmetric on a positive-only block: min_neg = 0 -> zero point qmin.
  auto [s4, z4] = choose("ASYMMETRIC", -128, 127, {1.0f, 2.0f, 0.5f, 0.25f}, {-1}, {});
  EXPECT_EQ(s4, (std::vector<float>{2.0f / 255.0f}));
  EXPECT_EQ(z4, (std::vector<int32_t>{-128}));
}

// torchao drops the reduced dims ([2, 4] with block_size [1, 4] gives [2]); a graph that
// declares [2, 1] (input shape / block size) keeps its shape. int64 zero points are narrowed.
TEST(InterpreterAffine, ChooseQparamsDeclaredShapeAndInt64ZeroPoint) {
  for (const std::vector<int64_t>& declared :
       {std::vector<int64_t>{2}, std::vector<int64_t>{2, 1}}) {
    GraphBuilder b;
    b.input("x", DType::Float32, {2, 4});
    Value s;
    s.name = "scale";
    s.shape = declared;
    b.g.add_value(s);
    Value z;
    z.name = "zp";
    z.dtype = DType::Int32;
    z.shape = declared;
    b.g.add_value(z);
    Node n;
    n.op = "torchao.choose_qparams_affine";
    n.inputs = {"x"};
    n.args = {{"mapping_type", std::string("ASYMMETRIC")},
              {"block_size", std::vector<int64_t>{1, 4}},
              {"target_dtype", std::string("int8")},
              {"quant_min", int64_t{-128}},
              {"quant_max", int64_t{127}},
              {"eps", NoneArg{}},
              {"zero_point_dtype", std::string("torch.int64")}};
    n.outputs = {"scale", "zp"};
    b.g.nodes.push_back(n);
    auto values =
        interpret(b.g, {{"x", HostTensor::from_floats({2, 4}, {0, 0, 0, 0, -2.55f, 0, 0, 0})}});
    EXPECT_EQ(values.at("scale").shape, declared);
    EXPECT_EQ(values.at("zp").shape, declared);
    // Row 0 all zero: eps = float32 epsilon. Row 1: scale 2.55 / 255, zero point 127.
    EXPECT_EQ(values.at("scale").to_floats(),
              (std::vector<float>{std::numeric_limits<float>::epsilon(), 2.55f / 255.0f}));
    EXPECT_EQ(values.at("zp").to_int32(), (std::vector<int32_t>{-128, 127}));
  }
}

TEST(InterpreterElementwise, AddBroadcasting) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 2, 2, 2})
      .constant("c", HostTensor::from_floats({1, 2, 1, 1}, {10, 20}))
      .constant("one", HostTensor::from_floats({1, 1, 1, 1}, {0.5f}))
      .constant("row", HostTensor::from_floats({2}, {100, 200}))
      .node("aten.add.Tensor", {"x", "c"}, {}, "a", DType::Float32, {1, 2, 2, 2})
      .node("aten.add.Tensor", {"one", "x"}, {{"alpha", int64_t{2}}}, "b", DType::Float32,
            {1, 2, 2, 2})
      .node("aten.add.Tensor", {"x", "row"}, {{"alpha", 1.0}}, "r", DType::Float32, {1, 2, 2, 2});
  auto values = interpret(b.g, {{"x", iota_floats({1, 2, 2, 2})}});
  EXPECT_EQ(values.at("a").to_floats(), (std::vector<float>{10, 11, 12, 13, 24, 25, 26, 27}));
  EXPECT_EQ(values.at("b").to_floats(),
            (std::vector<float>{0.5f, 2.5f, 4.5f, 6.5f, 8.5f, 10.5f, 12.5f, 14.5f}));
  EXPECT_EQ(values.at("r").to_floats(),
            (std::vector<float>{100, 201, 102, 203, 104, 205, 106, 207}));

  // [2, 1] + [3] -> [2, 3]; int32.
  GraphBuilder g2;
  g2.input("x", DType::Int32, {2, 1})
      .constant("c", HostTensor::from_int32({3}, {1, 2, 3}))
      .node("aten.add.Tensor", {"x", "c"}, {}, "y", DType::Int32, {2, 3});
  EXPECT_EQ(run1(g2.g, HostTensor::from_int32({2, 1}, {10, 20})).to_int32(),
            (std::vector<int32_t>{11, 12, 13, 21, 22, 23}));

  GraphBuilder bad;
  bad.input("x", DType::Float32, {2, 3})
      .constant("c", HostTensor::from_floats({2}, {1, 2}))
      .node("aten.add.Tensor", {"x", "c"}, {}, "y", DType::Float32, {2, 3});
  EXPECT_EQ(code_of([&] { run1(bad.g, iota_floats({2, 3})); }), ErrorCode::InvalidArgument);
}

// mul.Tensor broadcasts like add (float32: one rounding per product; int32 wraps); mul.Scalar
// multiplies by the number rounded to float32 (0.1 -> 0.100000001490116...).
TEST(InterpreterElementwise, MulBroadcastingAndScalar) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 2, 2, 2})
      .constant("c", HostTensor::from_floats({1, 2, 1, 1}, {10, -0.5f}))
      .node("aten.mul.Tensor", {"c", "x"}, {}, "a", DType::Float32, {1, 2, 2, 2})
      .node("aten.mul.Scalar", {"x"}, {{"other", 0.1}}, "s", DType::Float32, {1, 2, 2, 2})
      .node("aten.mul.Scalar", {"x"}, {{"other", int64_t{-3}}}, "i", DType::Float32, {1, 2, 2, 2});
  auto values = interpret(b.g, {{"x", iota_floats({1, 2, 2, 2})}});
  EXPECT_EQ(values.at("a").to_floats(), (std::vector<float>{0, 10, 20, 30, -2, -2.5f, -3, -3.5f}));
  std::vector<float> tenth;
  for (int k = 0; k < 8; ++k) tenth.push_back(static_cast<float>(k) * 0.1f);
  EXPECT_EQ(values.at("s").to_floats(), tenth);
  EXPECT_EQ(values.at("i").to_floats(), (std::vector<float>{0, -3, -6, -9, -12, -15, -18, -21}));

  GraphBuilder g2;  // int32 [2, 1] * [3], wrapping at 2^31
  g2.input("x", DType::Int32, {2, 1})
      .constant("c", HostTensor::from_int32({3}, {1, 2, 3}))
      .node("aten.mul.Tensor", {"x", "c"}, {}, "y", DType::Int32, {2, 3});
  EXPECT_EQ(
      run1(g2.g, HostTensor::from_int32({2, 1}, {10, 1 << 30})).to_int32(),
      (std::vector<int32_t>{10, 20, 30, 1 << 30, std::numeric_limits<int32_t>::min(), -(1 << 30)}));
}

TEST(InterpreterElementwise, ReluHardtanhClamp) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  GraphBuilder b;
  b.input("x", DType::Float32, {6})
      .node("aten.relu", {"x"}, {}, "r", DType::Float32, {6})
      .node("aten.hardtanh", {"x"}, {}, "h", DType::Float32, {6})
      .node("aten.hardtanh", {"x"}, {{"min_val", 0.0}, {"max_val", 6.0}}, "h6", DType::Float32, {6})
      .node("aten.clamp", {"x"}, {{"min", int64_t{-1}}, {"max", NoneArg{}}}, "cmin", DType::Float32,
            {6})
      .node("aten.clamp", {"x"}, {{"max", 0.5}}, "cmax", DType::Float32, {6});
  auto values =
      interpret(b.g, {{"x", HostTensor::from_floats({6}, {-3, -0.5f, 0.25f, 2, 7, nan})}});
  const auto check = [&](const std::string& name, std::vector<float> want) {
    const auto got = values.at(name).to_floats();
    ASSERT_EQ(got.size(), 6u);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(got[i], want[i]) << name << " " << i;
    EXPECT_TRUE(std::isnan(got[5])) << name << ": NaN propagates";
  };
  check("r", {0, 0, 0.25f, 2, 7});
  check("h", {-1, -0.5f, 0.25f, 1, 1});
  check("h6", {0, 0, 0.25f, 2, 6});
  check("cmin", {-1, -0.5f, 0.25f, 2, 7});
  check("cmax", {-3, -0.5f, 0.25f, 0.5f, 0.5f});
}

// div.Tensor broadcasts like add (float32, one rounding per quotient; x / 0 is inf);
// clamp_min is clamp with only a lower bound, NaN propagating.
TEST(InterpreterElementwise, DivBroadcastingAndClampMin) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3})
      .constant("c", HostTensor::from_floats({2, 1}, {4, 0}))
      .constant("row", HostTensor::from_floats({3}, {3, -7, 0.1f}))
      .node("aten.div.Tensor", {"x", "c"}, {}, "d", DType::Float32, {2, 3})
      .node("aten.div.Tensor", {"x", "row"}, {}, "r", DType::Float32, {2, 3})
      .node("aten.clamp_min", {"x"}, {{"min", 2.5}}, "m", DType::Float32, {2, 3});
  const HostTensor x = HostTensor::from_floats({2, 3}, {-1, 1, 2, 3, 0, nan});
  auto values = interpret(b.g, {{"x", x}});
  const std::vector<float> xs = x.to_floats(), rows = {3, -7, 0.1f};
  const auto d = values.at("d").to_floats(), r = values.at("r").to_floats(),
             m = values.at("m").to_floats();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(d[i], xs[i] / 4.0f) << i;
  EXPECT_EQ(d[3], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(d[4])) << "0 / 0";
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r[i], xs[i] / rows[i % 3]) << i;
    EXPECT_EQ(m[i], xs[i] < 2.5f ? 2.5f : xs[i]) << i;
  }
  EXPECT_TRUE(std::isnan(m[5])) << "NaN propagates";

  GraphBuilder bad;  // [2, 3] / [2] does not broadcast
  bad.input("x", DType::Float32, {2, 3})
      .constant("c", HostTensor::from_floats({2}, {1, 2}))
      .node("aten.div.Tensor", {"x", "c"}, {}, "y", DType::Float32, {2, 3});
  EXPECT_EQ(code_of([&] { run1(bad.g, iota_floats({2, 3})); }), ErrorCode::InvalidArgument);
}

// Hand-computed points of the smooth activations (the torch oracle compares them with PyTorch
// on many more): hardswish / hardsigmoid are exact float32 piecewise functions, the
// transcendental ones are the double-precision values rounded to float32.
TEST(InterpreterActivation, HandComputedPoints) {
  const std::vector<float> x = {-4.0f, -1.5f, 0.0f, 1.0f, 3.0f};
  auto run = [&](const std::string& op, Args args) {
    GraphBuilder b;
    b.input("x", DType::Float32, {5}).node(op, {"x"}, std::move(args), "y", DType::Float32, {5});
    return run1(b.g, HostTensor::from_floats({5}, x)).to_floats();
  };
  EXPECT_EQ(run("aten.hardswish", {}), (std::vector<float>{-0.0f, -0.375f, 0.0f, 4.0f / 6, 3.0f}));
  EXPECT_EQ(run("aten.hardsigmoid", {}), (std::vector<float>{0.0f, 0.25f, 0.5f, 4.0f / 6, 1.0f}));
  EXPECT_EQ(run("aten.leaky_relu", {{"negative_slope", 0.5}}),
            (std::vector<float>{-2.0f, -0.75f, 0.0f, 1.0f, 3.0f}));
  EXPECT_EQ(run("aten.elu", {{"alpha", 2.0}}),
            (std::vector<float>{static_cast<float>(2.0 * std::expm1(-4.0)),
                                static_cast<float>(2.0 * std::expm1(-1.5)), 0.0f, 1.0f, 3.0f}));
  EXPECT_EQ(run("aten.sigmoid", {})[3], static_cast<float>(1.0 / (1.0 + std::exp(-1.0))));
  EXPECT_EQ(run("aten.tanh", {})[1], static_cast<float>(std::tanh(-1.5)));
  EXPECT_EQ(run("aten.silu", {})[0], static_cast<float>(-4.0 / (1.0 + std::exp(4.0))));
  EXPECT_EQ(run("aten.gelu", {})[3],
            static_cast<float>(0.5 * (1.0 + std::erf(1.0 / std::sqrt(2.0)))));
  EXPECT_EQ(run("aten.gelu", {{"approximate", std::string("tanh")}})[1],
            static_cast<float>(
                0.5 * -1.5 *
                (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (-1.5 + 0.044715 * -1.5 * -1.5 * -1.5)))));
  std::string msg;
  EXPECT_EQ(code_of([&] { run("aten.gelu", {{"approximate", std::string("fast")}}); }, &msg),
            ErrorCode::InvalidArgument);
  EXPECT_NE(msg.find("approximate must be 'none' or 'tanh'"), std::string::npos) << msg;
}

// softmax / log_softmax along any dim: rows [0, ln 2] give 1/3, 2/3; a NaN spoils its row only.
TEST(InterpreterActivation, SoftmaxAlongAnyDim) {
  const float ln2 = static_cast<float>(std::log(2.0));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 2})
      .node("aten._softmax", {"x"}, {{"dim", int64_t{0}}, {"half_to_float", false}}, "s",
            DType::Float32, {2, 2})
      .node("aten.log_softmax.int", {"x"}, {{"dim", int64_t{-1}}}, "l", DType::Float32, {2, 2});
  auto values = interpret(b.g, {{"x", HostTensor::from_floats({2, 2}, {0.0f, nan, ln2, 1.0f})}});
  const std::vector<float> s = values.at("s").to_floats();
  EXPECT_EQ(s[0], static_cast<float>(1.0 / 3));  // column 0: [0, ln 2]
  EXPECT_EQ(s[2], static_cast<float>(2.0 / 3));
  EXPECT_TRUE(std::isnan(s[1]) && std::isnan(s[3]));  // column 1 holds the NaN
  const std::vector<float> l = values.at("l").to_floats();
  EXPECT_TRUE(std::isnan(l[0]) && std::isnan(l[1]));  // row 0 holds the NaN
  const double d = static_cast<double>(ln2) - 1.0;    // row 1: [ln 2, 1], max 1
  EXPECT_EQ(l[2], static_cast<float>(d - std::log(std::exp(d) + 1.0)));
  EXPECT_EQ(l[3], static_cast<float>(-std::log(std::exp(d) + 1.0)));
}

TEST(InterpreterReduce, MeanAndAdaptiveAvgPool) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 2, 2, 3})
      .node("aten.mean.dim", {"x"}, {{"dim", std::vector<int64_t>{-1, -2}}, {"keepdim", true}}, "m",
            DType::Float32, {1, 2, 1, 1})
      .node("aten.mean.dim", {"x"}, {{"dim", std::vector<int64_t>{3}}}, "w", DType::Float32,
            {1, 2, 2})
      .node("aten.adaptive_avg_pool2d", {"x"}, {{"output_size", std::vector<int64_t>{1, 1}}}, "p",
            DType::Float32, {1, 2, 1, 1});
  auto values = interpret(b.g, {{"x", iota_floats({1, 2, 2, 3})}});
  EXPECT_EQ(values.at("m").to_floats(), (std::vector<float>{2.5f, 8.5f}));
  EXPECT_EQ(values.at("w").to_floats(), (std::vector<float>{1, 4, 7, 10}));
  EXPECT_EQ(values.at("p").to_floats(), (std::vector<float>{2.5f, 8.5f}));
  // Summation is sequential float32 in row-major order: 1e8 + 1 + 1 + ... stays 1e8.
  GraphBuilder s;
  s.input("x", DType::Float32, {1, 1, 1, 4})
      .node("aten.mean.dim", {"x"}, {{"dim", std::vector<int64_t>{-1}}, {"keepdim", true}}, "y",
            DType::Float32, {1, 1, 1, 1});
  EXPECT_EQ(run1(s.g, HostTensor::from_floats({1, 1, 1, 4}, {1e8f, 1, 1, 1})).to_floats(),
            (std::vector<float>{1e8f / 4.0f}));
  // Another size: windows [floor(o * in / out), ceil((o + 1) * in / out)), widths [0, 2) and
  // [1, 3) of 3, rows [0, 1) and [1, 2) of 2.
  b.g.nodes[2].args["output_size"] = std::vector<int64_t>{2, 2};
  b.g.value("p").shape = {1, 2, 2, 2};
  EXPECT_EQ(interpret(b.g, {{"x", iota_floats({1, 2, 2, 3})}}).at("p").to_floats(),
            (std::vector<float>{0.5f, 1.5f, 3.5f, 4.5f, 6.5f, 7.5f, 9.5f, 10.5f}));
}

// sum.dim_IntList and linalg_vector_norm (ord 2) over a dim list, keepdim or not, against sums
// computed here in float32 in row-major input order (as the references document, and the GPU's
// float_sum / float_vector_norm compute).
TEST(InterpreterReduce, SumAndVectorNorm) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 4})
      .node("aten.sum.dim_IntList", {"x"}, {{"dim", std::vector<int64_t>{1}}}, "s1", DType::Float32,
            {2, 4})
      .node("aten.sum.dim_IntList", {"x"},
            {{"dim", std::vector<int64_t>{0, -1}}, {"keepdim", true}}, "s02", DType::Float32,
            {1, 3, 1})
      .node("aten.sum.dim_IntList", {"x"}, {{"dim", NoneArg{}}}, "all", DType::Float32, {})
      .node("aten.linalg_vector_norm", {"x"},
            {{"ord", int64_t{2}}, {"dim", std::vector<int64_t>{-1}}, {"keepdim", true}}, "n",
            DType::Float32, {2, 3, 1});
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.37f * static_cast<float>(i) - 4.1f;
  auto values = interpret(b.g, {{"x", HostTensor::from_floats({2, 3, 4}, xs)}});
  const auto at = [&](int64_t i, int64_t j, int64_t k) {
    return xs[static_cast<size_t>((i * 3 + j) * 4 + k)];
  };
  // float32 sums from +0.0 in row-major input order, each product and sum rounded on its own.
  std::vector<float> s1, s02, n;
  float all = 0.0f;
  for (const float v : xs) all = all + v;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t k = 0; k < 4; ++k) {
      float acc = 0.0f;
      for (int64_t j = 0; j < 3; ++j) acc = acc + at(i, j, k);
      s1.push_back(acc);
    }
  }
  for (int64_t j = 0; j < 3; ++j) {
    float acc = 0.0f;
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t k = 0; k < 4; ++k) acc = acc + at(i, j, k);
    }
    s02.push_back(acc);
  }
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      float sq = 0.0f;
      for (int64_t k = 0; k < 4; ++k) {
        const float p = at(i, j, k) * at(i, j, k);
        sq = sq + p;
      }
      n.push_back(std::sqrt(sq));
    }
  }
  EXPECT_EQ(values.at("s1").shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(values.at("s02").shape, (std::vector<int64_t>{1, 3, 1}));
  EXPECT_EQ(values.at("n").shape, (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(values.at("s1").to_floats(), s1);
  EXPECT_EQ(values.at("s02").to_floats(), s02);
  EXPECT_EQ(values.at("all").to_floats(), (std::vector<float>{all}));
  EXPECT_EQ(values.at("n").to_floats(), n);

  // Only ord 2: another ord is refused by name.
  b.g.nodes[3].args["ord"] = 1.0;
  std::string message;
  EXPECT_EQ(
      code_of([&] { interpret(b.g, {{"x", HostTensor::from_floats({2, 3, 4}, xs)}}); }, &message),
      ErrorCode::InvalidArgument);
  EXPECT_NE(message.find("ord 1 is not supported"), std::string::npos) << message;
}

// avg_pool2d 2x2, stride 2, padding 1 over 0..8 (3x3): windows rows / columns [0, 1) and [1, 3),
// each of extent 2; the divisor is 4 with count_include_pad, else the input positions, or the
// override. ceil_mode drops the third window, which would start in the right padding.
TEST(InterpreterReduce, AvgPool2dDivisors) {
  const std::vector<int64_t> k2 = {2, 2};
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 1, 3, 3})
      .node("aten.avg_pool2d", {"x"},
            {{"kernel_size", k2},
             {"stride", k2},
             {"padding", std::vector<int64_t>{1, 1}},
             {"ceil_mode", true}},
            "with", DType::Float32, {1, 1, 2, 2})
      .node("aten.avg_pool2d", {"x"},
            {{"kernel_size", k2},
             {"stride", k2},
             {"padding", std::vector<int64_t>{1, 1}},
             {"count_include_pad", false}},
            "without", DType::Float32, {1, 1, 2, 2})
      .node("aten.avg_pool2d", {"x"},
            {{"kernel_size", k2},
             {"padding", std::vector<int64_t>{1, 1}},
             {"divisor_override", int64_t{3}}},
            "over", DType::Float32, {1, 1, 2, 2});
  auto values = interpret(b.g, {{"x", iota_floats({1, 1, 3, 3})}});
  EXPECT_EQ(values.at("with").to_floats(), (std::vector<float>{0, 0.75f, 2.25f, 6}));
  EXPECT_EQ(values.at("without").to_floats(), (std::vector<float>{0, 1.5f, 4.5f, 6}));
  EXPECT_EQ(values.at("over").to_floats(), (std::vector<float>{0, 1, 3, 8}));
}

TEST(InterpreterCopies, ViewCloneAlias) {
  GraphBuilder b;
  b.input("x", DType::Int8, {1, 2, 3})
      .node("aten.view_copy", {"x"}, {{"size", std::vector<int64_t>{3, -1}}}, "v", DType::Int8,
            {3, 2})
      .node("aten.clone", {"v"}, {{"memory_format", NoneArg{}}}, "c", DType::Int8, {3, 2})
      .node("aten.alias_copy", {"c"}, {}, "a", DType::Int8, {3, 2})
      .node("aten._clone_dim_order", {"a"},
            {{"non_blocking", false}, {"dim_order", std::vector<int64_t>{0, 1}}}, "d", DType::Int8,
            {3, 2});
  const std::vector<int8_t> data = {1, -2, 3, -4, 5, -6};
  auto values = interpret(b.g, {{"x", HostTensor::from_int8({1, 2, 3}, data)}});
  for (const char* name : {"v", "c", "a", "d"}) {
    EXPECT_EQ(values.at(name).to_int8(), data) << name;
    EXPECT_EQ(values.at(name).shape, (std::vector<int64_t>{3, 2})) << name;
  }
  b.g.nodes[0].args["size"] = std::vector<int64_t>{4, -1};
  EXPECT_EQ(code_of([&] { interpret(b.g, {{"x", HostTensor::from_int8({1, 2, 3}, data)}}); }),
            ErrorCode::InvalidArgument);
}

// A quantized conv block as the exporter writes it: q -> dq -> conv(dq_per_channel(w)) -> relu
// -> q. interpret returns every value, constants included.
// to.dtype to float32: float32 unchanged, int32 / int8 converted; expand_as repeats the size-1
// dims to the other tensor's shape.
TEST(InterpreterCopies, ToDtypeAndExpandAs) {
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 1})
      .input("i", DType::Int32, {3})
      .constant("other", HostTensor::from_floats({3, 2, 3}, std::vector<float>(18, 0.0f)))
      .node("aten.to.dtype", {"x"}, {{"dtype", std::string("float32")}}, "f", DType::Float32,
            {2, 1})
      .node("aten.to.dtype", {"i"}, {{"dtype", std::string("float32")}}, "fi", DType::Float32, {3})
      .node("aten.expand_as", {"x", "other"}, {}, "e", DType::Float32, {3, 2, 3});
  const int32_t big = (1 << 24) + 1;  // float32 rounds it to 2^24 (ties to even)
  auto values = interpret(b.g, {{"x", HostTensor::from_floats({2, 1}, {1.5f, -2})},
                                {"i", HostTensor::from_int32({3}, {-7, 0, big})}});
  EXPECT_EQ(values.at("f").to_floats(), (std::vector<float>{1.5f, -2}));
  EXPECT_EQ(values.at("fi").to_floats(), (std::vector<float>{-7, 0, static_cast<float>(big)}));
  std::vector<float> want;
  for (int k = 0; k < 3; ++k) {
    for (float v : {1.5f, -2.0f}) want.insert(want.end(), 3, v);
  }
  EXPECT_EQ(values.at("e").to_floats(), want);

  GraphBuilder bad;  // [2, 1] does not expand to [3]
  bad.input("x", DType::Float32, {2, 1})
      .constant("other", HostTensor::from_floats({3}, {0, 0, 0}))
      .node("aten.expand_as", {"x", "other"}, {}, "y", DType::Float32, {3});
  EXPECT_EQ(code_of([&] { run1(bad.g, iota_floats({2, 1})); }), ErrorCode::InvalidArgument);
}

TEST(InterpreterGraph, QuantizedConvBlockReturnsAllValues) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 1, 2, 2})
      .constant("wq", HostTensor::from_int8({2, 1, 1, 1}, {10, -20}))
      .constant("ws", HostTensor::from_floats({2}, {0.1f, 0.05f}))
      .constant("wz", HostTensor::from_int32({2}, {0, 0}))
      .node("quantized_decomposed.quantize_per_tensor", {"x"},
            {{"scale", 0.5},
             {"zero_point", int64_t{-1}},
             {"quant_min", int64_t{-128}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            "xq", DType::Int8, {1, 1, 2, 2})
      .node("quantized_decomposed.dequantize_per_tensor", {"xq"},
            {{"scale", 0.5},
             {"zero_point", int64_t{-1}},
             {"quant_min", int64_t{-128}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            "xd", DType::Float32, {1, 1, 2, 2})
      .node("quantized_decomposed.dequantize_per_channel", {"wq", "ws", "wz"},
            {{"axis", int64_t{0}},
             {"quant_min", int64_t{-127}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            "wd", DType::Float32, {2, 1, 1, 1})
      .node("aten.convolution", {"xd", "wd"}, conv_args({1}, {0}, {1}, 1), "c", DType::Float32,
            {1, 2, 2, 2})
      .node("aten.relu", {"c"}, {}, "r", DType::Float32, {1, 2, 2, 2})
      .node("quantized_decomposed.quantize_per_tensor", {"r"},
            {{"scale", 0.25},
             {"zero_point", int64_t{0}},
             {"quant_min", int64_t{-128}},
             {"quant_max", int64_t{127}},
             {"dtype", std::string("int8")}},
            "y", DType::Int8, {1, 2, 2, 2});
  b.g.outputs = {"y"};
  auto values = interpret(b.g, {{"x", HostTensor::from_floats({1, 1, 2, 2}, {1, -2, 3.2f, 0})}});
  EXPECT_EQ(values.size(), 10u);  // x, 3 constants, 6 node outputs
  EXPECT_EQ(values.at("wz").to_int32(), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(values.at("xq").to_int8(), (std::vector<int8_t>{1, -5, 5, -1}));  // 6.4 -> 6
  EXPECT_EQ(values.at("xd").to_floats(), (std::vector<float>{1, -2, 3, 0}));
  // channel 0: x * 1.0, channel 1: x * -1.0, relu, / 0.25
  EXPECT_EQ(values.at("y").to_int8(), (std::vector<int8_t>{4, 0, 12, 0, 0, 8, 0, 0}));
}

TEST(InterpreterInputs, ChecksNameDtypeShapeAndBytes) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 2}).node("aten.relu", {"x"}, {}, "y", DType::Float32, {1, 2});
  const HostTensor good = HostTensor::from_floats({1, 2}, {1, -1});
  EXPECT_EQ(interpret(b.g, {{"x", good}}).at("y").to_floats(), (std::vector<float>{1, 0}));

  const auto expect_error = [&](const std::map<std::string, HostTensor>& inputs,
                                const std::string& needle) {
    std::string msg;
    EXPECT_EQ(code_of([&] { interpret(b.g, inputs); }, &msg), ErrorCode::InvalidArgument);
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  };
  expect_error({}, "'x' is missing");
  expect_error({{"x", good}, {"extra", good}}, "'extra'");
  expect_error({{"x", HostTensor::from_floats({2}, {1, 2})}}, "input 'x' has shape [2]");
  expect_error({{"x", HostTensor::from_int32({1, 2}, {1, 2})}}, "input 'x' has dtype");
  HostTensor truncated = good;
  truncated.bytes.pop_back();
  expect_error({{"x", truncated}}, "input 'x' holds 7 bytes");
}

TEST(InterpreterGraph, ChecksDeclaredOutputsAndOps) {
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 4, 2, 2})
      .node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{2}}}, "y", DType::Float32,
            {1, 4, 2, 2});  // wrong: the op gives [1, 1, 4, 4]
  std::string msg;
  EXPECT_EQ(code_of([&] { run1(b.g, iota_floats({1, 4, 2, 2})); }, &msg),
            ErrorCode::InvalidArgument);
  EXPECT_NE(msg.find("node 0 (aten.pixel_shuffle): output 'y' has shape [1, 1, 4, 4]"),
            std::string::npos)
      << msg;
  b.g.nodes[0].op = "aten.cumsum";
  EXPECT_EQ(code_of([&] { run1(b.g, iota_floats({1, 4, 2, 2})); }), ErrorCode::Unsupported);
  // A node reading a value nothing computed.
  b.g.nodes[0].op = "aten.relu";
  b.g.nodes[0].inputs = {"nowhere"};
  EXPECT_EQ(code_of([&] { run1(b.g, iota_floats({1, 4, 2, 2})); }), ErrorCode::InvalidArgument);
}

// The parser keeps an op it has no descriptor for (a host node under --partition); the
// interpreter cannot run it and says which node. Ranks up to 6 run like any other.
TEST(InterpreterGraph, UnknownOpIsUnsupportedNamingTheNodeAndRank5Runs) {
  const Graph g = parse_graph(
      R"({"vkd_graph": 1, "inputs": ["x"], "outputs": ["g"],
          "values": {"x": {"dtype": "float32", "shape": [1, 1, 2, 2, 2]},
                     "g": {"dtype": "float32", "shape": [1, 1, 2, 2, 2]}},
          "nodes": [{"op": "aten.relu", "inputs": ["x"], "outputs": ["r"]},
                    {"op": "aten.cumsum", "inputs": ["r"], "outputs": ["g"]}]})",
      "g.json", nullptr);
  const HostTensor x = iota_floats({1, 1, 2, 2, 2}, -4.0f);
  std::string msg;
  EXPECT_EQ(code_of([&] { interpret(g, {{"x", x}}); }, &msg), ErrorCode::Unsupported);
  EXPECT_NE(
      msg.find("node 1 (aten.cumsum): op 'aten.cumsum' is not an edge op the interpreter knows"),
      std::string::npos)
      << msg;
  Graph relu_only = g;
  relu_only.nodes.pop_back();
  relu_only.outputs = {"r"};
  EXPECT_EQ(interpret(relu_only, {{"x", x}}).at("r").to_floats(),
            (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3}));
}

// ---------------------------------------------------------------------------------------------
// aten.embedding (the float32 table against PyTorch: torch_oracle.py)

TEST(InterpreterEmbedding, GathersInt8RowsAndNamesAnIdOutsideTheTable) {
  GraphBuilder b;
  const std::vector<int8_t> table = {-128, 1, 2, 3, 4, 5, 6, 7, 127};  // [3, 3]
  b.input("ids", DType::Int32, {1, 4})
      .constant("w", HostTensor::from_int8({3, 3}, table))
      .node("aten.embedding", {"w", "ids"}, {{"padding_idx", int64_t{0}}}, "y", DType::Int8,
            {1, 4, 3});
  auto values = interpret(b.g, {{"ids", HostTensor::from_int32({1, 4}, {2, 0, 0, 1})}});
  EXPECT_EQ(values.at("y").to_int8(),
            (std::vector<int8_t>{6, 7, 127, -128, 1, 2, -128, 1, 2, 3, 4, 5}));
  for (int32_t bad : {3, -1}) {
    std::string message;
    EXPECT_EQ(
        code_of([&] { interpret(b.g, {{"ids", HostTensor::from_int32({1, 4}, {0, 1, bad, 0})}}); },
                &message),
        ErrorCode::InvalidArgument);
    EXPECT_NE(message.find("indices element 2 is " + std::to_string(bad) +
                           ", outside the table's [0, 3)"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace vkd::compiler
