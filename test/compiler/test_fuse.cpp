// fuse_and_lower on edge-dialect graphs built in C++: every fusion pattern with its exact backend
// args and folded constants, float-output variants, half matches left unfused (with their report
// lines), lowering of leftover ops, int8x4 dtypes with QuantInfo, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include "compiler/Fuse.h"
#include "core/Error.h"
#include "partitioner_schema/OpSchema.h"
#include "test/reference/LutReference.h"

namespace {

using namespace vkd::compiler;
using namespace vkd::schema;
using vkd::DType;

const char* const kQ = "quantized_decomposed.quantize_per_tensor";
const char* const kDq = "quantized_decomposed.dequantize_per_tensor";
const char* const kDqChannel = "quantized_decomposed.dequantize_per_channel";

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<float> floats_of(const Value& v) {
  EXPECT_TRUE(v.data.has_value()) << v.name;
  if (!v.data) return {};
  std::vector<float> out(v.data->size() / 4);
  std::memcpy(out.data(), v.data->data(), out.size() * 4);
  return out;
}

std::vector<uint8_t> i32_bytes(const std::vector<int32_t>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::vector<uint8_t> ramp_i8(int64_t n) {
  std::vector<uint8_t> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7 - 60);
  return out;
}

Args q_args(double scale, int64_t zp, int64_t qmin = -128, int64_t qmax = 127) {
  return {{"scale", scale},
          {"zero_point", zp},
          {"quant_min", qmin},
          {"quant_max", qmax},
          {"dtype", std::string("int8")}};
}

// Builds an edge-dialect graph with every value's dtype and shape set.
struct Builder {
  Graph g;

  void input(const std::string& name, DType dtype, std::vector<int64_t> shape) {
    value(name, dtype, std::move(shape));
    g.inputs.push_back(name);
  }
  void value(const std::string& name, DType dtype, std::vector<int64_t> shape) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    g.add_value(v);
  }
  void constant(const std::string& name, DType dtype, std::vector<int64_t> shape,
                std::vector<uint8_t> data) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.data = std::move(data);
    g.add_value(v);
  }
  void node(const std::string& op, std::vector<std::string> in, Args args,
            std::vector<std::string> out) {
    const std::string origin = "node " + std::to_string(g.nodes.size()) + " (" + op + ")";
    g.nodes.push_back({op, std::move(in), std::move(args), std::move(out), origin});
  }
  void output(const std::string& name) { g.outputs.push_back(name); }

  // Float `out` (shape of `xq`) = dq(xq).
  void dq(const std::string& xq, const std::string& out, double scale, int64_t zp,
          int64_t qmin = -128, int64_t qmax = 127) {
    value(out, DType::Float32, g.value(xq).shape);
    node(kDq, {xq}, q_args(scale, zp, qmin, qmax), {out});
  }
  // Int8 `out` (shape of `x`) = q(x).
  void q(const std::string& x, const std::string& out, double scale, int64_t zp) {
    value(out, DType::Int8, g.value(x).shape);
    node(kQ, {x}, q_args(scale, zp), {out});
  }
  // A residual add: int8 `out` = q(dq(x_q) + dq(rq)) (out_scale, out_zp), 'rq' a new int8 graph
  // input of x_q's sizes read at (0.4, 0); the floats are `x_f`, 'rf' and 's'.
  void residual_add(const std::string& x_q, const std::string& x_f, double x_scale, int64_t x_zp,
                    const std::string& out, double out_scale, int64_t out_zp) {
    const std::vector<int64_t> shape = g.value(x_q).shape;
    input("rq", DType::Int8, shape);
    dq(x_q, x_f, x_scale, x_zp);
    dq("rq", "rf", 0.4, 0);
    value("s", DType::Float32, shape);
    node("aten.add.Tensor", {x_f, "rf"}, {}, {"s"});
    q("s", out, out_scale, out_zp);
  }
  // Int8 weight `w` with per-channel scales `ws` and int32 zero points `wzp`, dequantized
  // into float `wf` (axis 0).
  void per_channel_weight(std::vector<int64_t> shape, const std::vector<float>& scales,
                          const std::vector<int32_t>& zps, const std::string& prefix = "w") {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const int64_t out_ch = shape[0];
    constant(prefix, DType::Int8, shape, ramp_i8(n));
    constant(prefix + "s", DType::Float32, {out_ch}, f32_bytes(scales));
    constant(prefix + "zp", DType::Int32, {out_ch}, i32_bytes(zps));
    value(prefix + "f", DType::Float32, shape);
    node(kDqChannel, {prefix, prefix + "s", prefix + "zp"},
         {{"axis", int64_t{0}},
          {"quant_min", int64_t{-127}},
          {"quant_max", int64_t{127}},
          {"dtype", std::string("int8")}},
         {prefix + "f"});
  }
  void conv(const std::string& x, const std::string& w, const std::string& b,
            const std::string& out, std::vector<int64_t> out_shape, Args extra = {}) {
    value(out, DType::Float32, std::move(out_shape));
    Args args = {
        {"stride", std::vector<int64_t>{1, 1}},         {"padding", std::vector<int64_t>{1, 1}},
        {"dilation", std::vector<int64_t>{1, 1}},       {"transposed", false},
        {"output_padding", std::vector<int64_t>{0, 0}}, {"groups", int64_t{1}}};
    for (auto& kv : extra) args[kv.first] = kv.second;
    std::vector<std::string> in = {x, w};
    if (!b.empty()) in.push_back(b);
    node("aten.convolution", in, args, {out});
  }
};

int count_op(const Graph& g, const std::string& op) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op == op; }));
}

const Node& only_node(const Graph& g, const std::string& op) {
  EXPECT_EQ(count_op(g, op), 1) << op;
  for (const auto& n : g.nodes) {
    if (n.op == op) return n;
  }
  static const Node none;
  return none;
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n.op);
  return out;
}

bool has_line(const PassReport& r, const std::string& line) {
  return std::find(r.lines.begin(), r.lines.end(), line) != r.lines.end();
}

std::string all_lines(const PassReport& r) {
  std::string s;
  for (const auto& l : r.lines) s += "  " + l + "\n";
  return s;
}

int64_t arg_i(const Node& n, const std::string& name) { return std::get<int64_t>(n.args.at(name)); }
double arg_d(const Node& n, const std::string& name) { return std::get<double>(n.args.at(name)); }
std::vector<int64_t> arg_l(const Node& n, const std::string& name) {
  return std::get<std::vector<int64_t>>(n.args.at(name));
}

std::pair<int64_t, int64_t> activation_of(const Node& n) {
  return {arg_i(n, "activation_min"), arg_i(n, "activation_max")};
}

std::vector<std::string> arg_names(const Node& n) {
  std::vector<std::string> out;
  for (const auto& kv : n.args) out.push_back(kv.first);
  return out;
}

void expect_quant(const Value& v, double scale, int64_t zp, int64_t qmin, int64_t qmax) {
  ASSERT_TRUE(v.quant.has_value()) << v.name;
  EXPECT_EQ(v.quant->scale, scale) << v.name;
  EXPECT_EQ(v.quant->zero_point, zp) << v.name;
  EXPECT_EQ(v.quant->quant_min, qmin) << v.name;
  EXPECT_EQ(v.quant->quant_max, qmax) << v.name;
}

// The graph is well formed and every backend node matches its OpSchema entry: tensor inputs in
// schema order (count), scalar args by name and kind, tensor dtypes, constants where required.
void expect_valid(const Graph& g) {
  std::set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& name : g.value_names()) {
    if (g.value(name).is_constant()) defined.insert(name);
  }
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      EXPECT_TRUE(defined.count(in)) << n.op << " reads '" << in << "' before it is written";
    }
    for (const auto& out : n.outputs) {
      EXPECT_TRUE(g.has_value(out)) << out;
      defined.insert(out);
    }
    const OpSchema* s = find_op_schema(n.op);
    if (s == nullptr) continue;
    size_t tin = 0, tout = 0, scalars = 0, fixed_inputs = 0;
    for (const auto& a : s->args) fixed_inputs += a.kind == ArgKind::Tensor && !a.output;
    for (const auto& a : s->args) {
      if (a.kind == ArgKind::TensorList) {  // every input the other tensor args leave
        for (; tin + fixed_inputs < n.inputs.size(); ++tin) {
          const Value& v = g.value(n.inputs[tin]);
          EXPECT_NE(std::find(a.dtypes.begin(), a.dtypes.end(), v.dtype), a.dtypes.end())
              << n.op << " " << a.name << " is " << vkd::to_string(v.dtype);
        }
        continue;
      }
      if (a.kind != ArgKind::Tensor) {
        ++scalars;
        ASSERT_TRUE(n.args.count(a.name)) << n.op << " lacks " << a.name;
        const ArgValue& v = n.args.at(a.name);
        switch (a.kind) {
          case ArgKind::Int: EXPECT_TRUE(std::holds_alternative<int64_t>(v)) << a.name; break;
          case ArgKind::Float: EXPECT_TRUE(std::holds_alternative<double>(v)) << a.name; break;
          case ArgKind::IntList:
            EXPECT_TRUE(std::holds_alternative<std::vector<int64_t>>(v)) << a.name;
            break;
          default: break;
        }
        continue;
      }
      const auto& list = a.output ? n.outputs : n.inputs;
      const size_t k = a.output ? tout++ : tin++;
      ASSERT_LT(k, list.size()) << n.op << " " << a.name;
      const Value& v = g.value(list[k]);
      EXPECT_NE(std::find(a.dtypes.begin(), a.dtypes.end(), v.dtype), a.dtypes.end())
          << n.op << " " << a.name << " is " << vkd::to_string(v.dtype);
      if (a.constant) {
        EXPECT_TRUE(v.is_constant()) << n.op << " " << a.name;
      }
    }
    EXPECT_EQ(n.inputs.size(), tin) << n.op;
    EXPECT_EQ(n.outputs.size(), tout) << n.op;
    EXPECT_EQ(n.args.size(), scalars) << n.op;
  }
}

// ---- linear ------------------------------------------------------------------------------------

// 0 weight dq, 1 dq, 2 linear, 3 q.
Builder linear_graph(const std::vector<int32_t>& wzp = {0, 0, 0, 0}, bool bias = true,
                     bool quantized = true) {
  Builder b;
  b.input("xq", DType::Int8, {2, 8});
  b.per_channel_weight({4, 8}, {0.5f, 0.25f, 0.125f, 0.0625f}, wzp);
  if (bias) b.constant("b", DType::Float32, {4}, f32_bytes({1, 2, 3, 4}));
  b.dq("xq", "x", 0.1, 2);
  b.value("y", DType::Float32, {2, 4});
  std::vector<std::string> in = {"x", "wf"};
  if (bias) in.push_back("b");
  b.node("aten.linear", in, {}, {"y"});
  if (quantized) {
    b.q("y", "yq", 0.2, -3);
    b.output("yq");
  } else {
    b.output("y");
  }
  return b;
}

TEST(Fuse, LinearPerChannelQuantizedOutput) {
  Builder b = linear_graph();
  const std::vector<uint8_t> weight_bytes = *b.g.value("w").data;
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  EXPECT_EQ(r.pass, "fuse_and_lower");
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_linear");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_names(n),
            (std::vector<std::string>{"activation_max", "activation_min", "input_scale",
                                      "input_zero_point", "output_scale", "output_zero_point"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
  EXPECT_EQ(arg_i(n, "activation_min"), -128);
  EXPECT_EQ(arg_i(n, "activation_max"), 127);
  // Folded constants: the int8 weight is reused, the scales are a new float32 [N] constant.
  EXPECT_EQ(*g.value("w").data, weight_bytes);
  EXPECT_EQ(g.value("w").dtype, DType::Int8);
  const Value& scales = g.value("w_scales");
  EXPECT_EQ(scales.dtype, DType::Float32);
  EXPECT_EQ(scales.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(*scales.data, f32_bytes({0.5f, 0.25f, 0.125f, 0.0625f}));
  // Intermediates, the weight dq output and the dead scale / zero-point constants are gone.
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"xq", "w", "b", "yq", "w_scales"}));
  EXPECT_EQ(g.value("xq").dtype, DType::Int8x4);
  expect_quant(g.value("xq"), 0.1, 2, -128, 127);
  EXPECT_EQ(g.value("yq").dtype, DType::Int8x4);
  expect_quant(g.value("yq"), 0.2, -3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.linear -> q (node 1..3) into q8ta_linear 'yq' "
                       "(activation none)"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "folded 1 weight dequantize node(s) (node 0)")) << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, LinearPerTensorWeightCreatesZeroBias) {
  Builder b;
  b.input("xq", DType::Int8, {3, 8});
  b.constant("w", DType::Int8, {5, 8}, ramp_i8(40));
  b.value("wf", DType::Float32, {5, 8});
  b.node(kDq, {"w"}, q_args(0.05, 0, -127, 127), {"wf"});
  b.dq("xq", "x", 0.25, -1);
  b.value("y", DType::Float32, {3, 5});
  b.node("aten.linear", {"x", "wf"}, {}, {"y"});
  b.q("y", "yq", 0.5, 0);
  b.output("yq");
  fuse_and_lower(b.g);
  const Graph& g = b.g;
  const Node& n = only_node(g, "q8ta_linear");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "yq_bias"}));
  EXPECT_EQ(floats_of(g.value("w_scales")), std::vector<float>(5, 0.05f));
  const Value& bias = g.value("yq_bias");
  EXPECT_EQ(bias.dtype, DType::Float32);
  EXPECT_EQ(bias.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(floats_of(bias), std::vector<float>(5, 0.0f));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.25);
  EXPECT_EQ(arg_i(n, "input_zero_point"), -1);
  EXPECT_EQ(g.nodes.size(), 1u);
  expect_valid(g);
}

TEST(Fuse, LinearFloatOutput) {
  Builder b = linear_graph({0, 0, 0, 0}, /*bias=*/false, /*quantized=*/false);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_linear_dq");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "y_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(arg_names(n), (std::vector<std::string>{"input_scale", "input_zero_point"}));
  EXPECT_EQ(g.value("y").dtype, DType::Float32);
  EXPECT_FALSE(g.value("y").quant.has_value());
  EXPECT_EQ(floats_of(g.value("y_bias")), std::vector<float>(4, 0.0f));
  EXPECT_TRUE(has_line(r, "fused dq -> aten.linear (node 1..2) into q8ta_linear_dq 'y'"))
      << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, AsymmetricWeightsStayUnfused) {
  {
    Builder b = linear_graph({0, 3, 0, 0});
    const PassReport r = fuse_and_lower(b.g);
    const Graph& g = b.g;
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.linear -> q (node 1..3) as q8ta_linear: "
                         "weight 'w' has nonzero zero points (channel 1: 3) (asymmetric "
                         "weights are not supported)"))
        << all_lines(r);
    // The float op stays between explicit (lowered) q/dq; the weight dq is not folded.
    EXPECT_EQ(ops_of(g), (std::vector<std::string>{kDqChannel, "q8ta_dequantize", "aten.linear",
                                                   "q8ta_quantize"}));
    EXPECT_TRUE(g.has_value("ws") && g.has_value("wzp") && g.has_value("wf"));
    EXPECT_FALSE(g.has_value("w_scales"));
    expect_valid(g);
  }
  {
    Builder b;
    b.input("xq", DType::Int8, {2, 8});
    b.constant("w", DType::Int8, {4, 8}, ramp_i8(32));
    b.value("wf", DType::Float32, {4, 8});
    b.node(kDq, {"w"}, q_args(0.05, 5), {"wf"});
    b.dq("xq", "x", 0.1, 0);
    b.value("y", DType::Float32, {2, 4});
    b.node("aten.linear", {"x", "wf"}, {}, {"y"});
    b.output("y");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.linear (node 1..2) as q8ta_linear_dq: weight "
                         "'w' has zero point 5 (asymmetric weights are not supported)"))
        << all_lines(r);
    EXPECT_EQ(count_op(b.g, "aten.linear"), 1);
    EXPECT_EQ(count_op(b.g, kDq), 1);  // the constant's dq stays an edge op
  }
}

TEST(Fuse, SharedWeightIsFoldedOnce) {
  Builder b;
  b.input("aq", DType::Int8, {2, 8});
  b.input("cq", DType::Int8, {2, 8});
  b.per_channel_weight({4, 8}, {1, 2, 3, 4}, {0, 0, 0, 0});
  b.dq("aq", "a", 0.1, 0);
  b.value("ya", DType::Float32, {2, 4});
  b.node("aten.linear", {"a", "wf"}, {}, {"ya"});
  b.dq("cq", "c", 0.2, 0);
  b.value("yc", DType::Float32, {2, 4});
  b.node("aten.linear", {"c", "wf"}, {}, {"yc"});
  b.output("ya");
  b.output("yc");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_linear_dq", "q8ta_linear_dq"}))
      << all_lines(r);
  EXPECT_EQ(g.nodes[0].inputs[2], "w_scales");
  EXPECT_EQ(g.nodes[1].inputs[2], "w_scales");
  EXPECT_FALSE(g.has_value("w_scales.1"));
  EXPECT_TRUE(has_line(r, "folded 1 weight dequantize node(s) (node 0)")) << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, WeightDqAlsoReadElsewhereIsKept) {
  Builder b = linear_graph();
  b.output("wf");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{kDqChannel, "q8ta_linear"})) << all_lines(r);
  EXPECT_EQ(only_node(g, "q8ta_linear").inputs[1], "w");
  EXPECT_TRUE(has_line(r,
                       "kept weight dequantize node 0: its output is also read by unfused "
                       "nodes or is a graph output"))
      << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, NewNamesAvoidExistingValues) {
  Builder b;
  b.input("xq", DType::Int8, {2, 8});
  b.per_channel_weight({4, 8}, {1, 2, 3, 4}, {0, 0, 0, 0}, "w");
  b.input("yq_bias", DType::Float32, {4});  // a name the zero bias would take
  b.dq("xq", "x", 0.1, 0);
  b.value("y", DType::Float32, {2, 4});
  b.node("aten.linear", {"x", "wf"}, {}, {"y"});
  b.q("y", "yq", 0.2, 0);
  b.output("yq");
  b.output("yq_bias");
  b.g.add_value([] {
    Value v;
    v.name = "w_scales";
    v.dtype = DType::Float32;
    v.shape = {1};
    return v;
  }());
  b.g.inputs.push_back("w_scales");
  fuse_and_lower(b.g);
  const Node& n = only_node(b.g, "q8ta_linear");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales.1", "yq_bias.1"}));
}

// ---- convolution ------------------------------------------------------------------------------

// 0 weight dq, 1 dq, 2 conv, 3 activation (unless act is empty), then q with (scale, zp).
Builder conv_act_graph(const std::string& act, Args act_args, double scale, int64_t zp) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 8, 8});
  b.per_channel_weight({4, 3, 3, 3}, {0.5f, 0.25f, 2.0f, 1.0f}, {0, 0, 0, 0});
  b.constant("b", DType::Float32, {4}, f32_bytes({0.5f, -1, 2, 0}));
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "wf", "b", "y", {1, 4, 4, 4},
         {{"stride", std::vector<int64_t>{2}}, {"padding", std::vector<int64_t>{1}}});
  std::string last = "y";
  if (!act.empty()) {
    b.value("r", DType::Float32, {1, 4, 4, 4});
    b.node(act, {"y"}, act_args, {"r"});
    last = "r";
  }
  b.q(last, "yq", scale, zp);
  b.output("yq");
  return b;
}

TEST(Fuse, ConvReluQuantized) {
  Builder b = conv_act_graph("aten.relu", {}, 0.1, -5);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_conv2d");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_l(n, "stride"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(arg_l(n, "padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_i(n, "groups"), 1);
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -5);
  EXPECT_EQ(arg_i(n, "activation_min"), -5);  // relu: q(0) = the output zero point
  EXPECT_EQ(arg_i(n, "activation_max"), 127);
  EXPECT_EQ(*g.value("w_scales").data, f32_bytes({0.5f, 0.25f, 2.0f, 1.0f}));
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"xq", "w", "b", "yq", "w_scales"}));
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.convolution -> aten.relu -> q (node 1..4) into "
            "q8ta_conv2d 'yq' (activation relu)");
  expect_valid(g);
}

std::pair<int64_t, int64_t> conv_range(const std::string& act, Args act_args, double scale,
                                       int64_t zp, std::string* line = nullptr) {
  Builder b = conv_act_graph(act, std::move(act_args), scale, zp);
  const PassReport r = fuse_and_lower(b.g);
  if (line && !r.lines.empty()) *line = r.lines[0];
  if (count_op(b.g, "q8ta_conv2d") != 1) {
    ADD_FAILURE() << "not fused:\n" << all_lines(r);
    return {0, 0};
  }
  expect_valid(b.g);
  const Node& n = only_node(b.g, "q8ta_conv2d");
  return {arg_i(n, "activation_min"), arg_i(n, "activation_max")};
}

TEST(Fuse, ConvActivationRanges) {
  using R = std::pair<int64_t, int64_t>;
  std::string line;
  // No activation: the full int8 range.
  EXPECT_EQ(conv_range("", {}, 0.1, 7, &line), R(-128, 127));
  EXPECT_EQ(line,
            "fused dq -> aten.convolution -> q (node 1..3) into q8ta_conv2d 'yq' "
            "(activation none)");
  // hardtanh(0, 6) (relu6): 0/0.05 - 128 = -128, 6/0.05 - 128 = -8.
  EXPECT_EQ(conv_range("aten.hardtanh", {{"min_val", 0.0}, {"max_val", 6.0}}, 0.05, -128, &line),
            R(-128, -8));
  EXPECT_EQ(line,
            "fused dq -> aten.convolution -> aten.hardtanh -> q (node 1..4) into "
            "q8ta_conv2d 'yq' (activation hardtanh(0, 6))");
  // hardtanh defaults (-1, 1): -250 + 10 and 250 + 10 clamp to the int8 range.
  EXPECT_EQ(conv_range("aten.hardtanh", {}, 0.004, 10), R(-128, 127));
  // clamp(min=0) only: zero point .. qmax.
  EXPECT_EQ(conv_range("aten.clamp", {{"min", int64_t{0}}, {"max", NoneArg{}}}, 0.1, 4, &line),
            R(4, 127));
  EXPECT_EQ(line,
            "fused dq -> aten.convolution -> aten.clamp -> q (node 1..4) into q8ta_conv2d "
            "'yq' (activation clamp(0, none))");
  // Ties round to even, as q8ta_quantize does: -4.5 -> -4, 2.5 -> 2.
  EXPECT_EQ(conv_range("aten.clamp", {{"min", -0.45}, {"max", 0.25}}, 0.1, 0), R(-4, 2));
  // Bounds inside the range with a zero point: round(-1 / 0.02) + 20 = -30, 1/0.02 + 20 = 70.
  EXPECT_EQ(conv_range("aten.hardtanh", {{"min_val", -1.0}, {"max_val", 1.0}}, 0.02, 20),
            R(-30, 70));
}

TEST(Fuse, ConvFloatOutputGroupsAndPadding) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 8, 8});
  b.per_channel_weight({6, 2, 3, 3}, {1, 2, 3, 4, 5, 6}, {0, 0, 0, 0, 0, 0});
  b.dq("xq", "x", 0.5, 0);
  b.conv(
      "x", "wf", "", "y", {1, 6, 8, 8},
      {{"padding", std::vector<int64_t>{1, 2}}, {"dilation", int64_t{1}}, {"groups", int64_t{2}}});
  b.output("y");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_conv2d_dq");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "y_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(arg_names(n), (std::vector<std::string>{"dilation", "groups", "input_scale",
                                                    "input_zero_point", "padding", "stride"}));
  EXPECT_EQ(arg_l(n, "padding"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(arg_l(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "stride"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_i(n, "groups"), 2);
  EXPECT_EQ(floats_of(g.value("y_bias")), std::vector<float>(6, 0.0f));
  EXPECT_EQ(g.value("y").dtype, DType::Float32);
  EXPECT_TRUE(has_line(r, "fused dq -> aten.convolution (node 1..2) into q8ta_conv2d_dq 'y'"))
      << all_lines(r);
  expect_valid(g);
}

// ---- half matches -----------------------------------------------------------------------------

TEST(Fuse, DequantizedInputWithTwoConsumersIsNotFused) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 8, 8});
  b.per_channel_weight({4, 3, 3, 3}, {1, 1, 1, 1}, {0, 0, 0, 0});
  b.dq("xq", "x", 0.1, 0);
  b.conv("x", "wf", "", "y", {1, 4, 8, 8});
  b.q("y", "yq", 0.1, 0);
  b.value("r", DType::Float32, {1, 3, 8, 8});
  b.node("aten.relu", {"x"}, {}, {"r"});
  b.output("yq");
  b.output("r");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.convolution -> q (node 1..3) as q8ta_conv2d: "
                       "'x' has 2 consumers (nodes 2, 4)"))
      << all_lines(r);
  // Still valid: the float conv sits between the lowered dq and q.
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{kDqChannel, "q8ta_dequantize", "aten.convolution",
                                                 "q8ta_quantize", "relu"}));
  EXPECT_TRUE(g.has_value("x") && g.has_value("y") && g.has_value("wf"));
  EXPECT_TRUE(has_line(r, "left 2 node(s) as edge ops: " + std::string(kDqChannel) +
                              " (node 0), aten.convolution (node 2)"))
      << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, ReluFollowedBySomethingElseFallsBackToFloatOutput) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 8, 8});
  b.per_channel_weight({4, 3, 3, 3}, {1, 1, 1, 1}, {0, 0, 0, 0});
  b.dq("xq", "x", 0.1, 0);
  b.conv("x", "wf", "", "y", {1, 4, 8, 8});
  b.value("r", DType::Float32, {1, 4, 8, 8});
  b.node("aten.relu", {"y"}, {}, {"r"});
  b.value("m", DType::Float32, {1, 4, 4, 4});
  b.node("aten.max_pool2d", {"r"}, {{"kernel_size", std::vector<int64_t>{2, 2}}}, {"m"});
  b.q("m", "mq", 0.1, 0);
  b.output("mq");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_GE(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0],
            "not fused: dq -> aten.convolution -> aten.relu (node 1..3) as "
            "q8ta_conv2d: 'r' feeds aten.max_pool2d (node 4), not "
            "quantize_per_tensor");
  EXPECT_EQ(r.lines[1], "fused dq -> aten.convolution (node 1..2) into q8ta_conv2d_dq 'y'");
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_dq", "relu", "aten.max_pool2d",
                                                 "q8ta_quantize"}));
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"y"}));
  expect_valid(g);
}

TEST(Fuse, ConvOutputThatIsAGraphOutputKeepsItsQ) {
  Builder b = conv_act_graph("", {}, 0.1, 0);
  b.output("y");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.convolution -> q (node 1..3) as q8ta_conv2d: "
                       "'y' is a graph output"))
      << all_lines(r);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_dq", "q8ta_quantize"}));
  expect_valid(b.g);
}

// ---- add --------------------------------------------------------------------------------------

TEST(Fuse, AddReluQuantized) {
  Builder b;
  b.input("aq", DType::Int8, {1, 4, 2, 2});
  b.input("bq", DType::Int8, {1, 4, 2, 2});
  b.dq("aq", "a", 0.1, 1);
  b.dq("bq", "bf", 0.3, -2);
  b.value("s", DType::Float32, {1, 4, 2, 2});
  b.node("aten.add.Tensor", {"a", "bf"}, {{"alpha", int64_t{1}}}, {"s"});
  b.value("r", DType::Float32, {1, 4, 2, 2});
  b.node("aten.relu", {"s"}, {}, {"r"});
  b.q("r", "yq", 0.2, 3);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_add");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"aq", "bq"}));
  EXPECT_EQ(arg_d(n, "a_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "a_zero_point"), 1);
  EXPECT_EQ(arg_d(n, "b_scale"), 0.3);
  EXPECT_EQ(arg_i(n, "b_zero_point"), -2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(arg_i(n, "activation_min"), 3);
  EXPECT_EQ(arg_i(n, "activation_max"), 127);
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"aq", "bq", "yq"}));
  expect_quant(g.value("aq"), 0.1, 1, -128, 127);
  expect_quant(g.value("bq"), 0.3, -2, -128, 127);
  EXPECT_EQ(r.lines.at(0),
            "fused dq, dq -> aten.add.Tensor -> aten.relu -> q (node 0..4) into "
            "q8ta_add 'yq' (activation relu)");
  expect_valid(g);
}

// The fused node goes where its last matched node was: here b is only quantized after a's dq.
TEST(Fuse, AddIsPlacedAfterItsLastInput) {
  Builder b;
  b.input("aq", DType::Int8, {1, 4, 2, 2});
  b.input("f", DType::Float32, {1, 4, 2, 2});
  b.dq("aq", "a", 0.1, 0);   // 0
  b.q("f", "bq", 0.1, 0);    // 1
  b.dq("bq", "bf", 0.1, 0);  // 2
  b.value("s", DType::Float32, {1, 4, 2, 2});
  b.node("aten.add.Tensor", {"a", "bf"}, {}, {"s"});  // 3
  b.q("s", "yq", 0.2, 0);                             // 4
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_quantize", "q8ta_add"})) << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq -> aten.add.Tensor -> q (nodes 0, 2..4) into q8ta_add "
                       "'yq' (activation none)"))
      << all_lines(r);
  expect_valid(b.g);
}

TEST(Fuse, AddHalfMatches) {
  {  // one side is a float graph input
    Builder b;
    b.input("aq", DType::Int8, {1, 4, 2, 2});
    b.input("bf", DType::Float32, {1, 4, 2, 2});
    b.dq("aq", "a", 0.1, 0);
    b.value("s", DType::Float32, {1, 4, 2, 2});
    b.node("aten.add.Tensor", {"a", "bf"}, {}, {"s"});
    b.q("s", "yq", 0.2, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.add.Tensor -> q (node 0..2) as q8ta_add: "
                         "'bf' is not dequantized (a graph input)"))
        << all_lines(r);
    EXPECT_EQ(ops_of(b.g),
              (std::vector<std::string>{"q8ta_dequantize", "aten.add.Tensor", "q8ta_quantize"}));
    expect_valid(b.g);
  }
  {  // float output: q8ta_add has no float-output variant
    Builder b;
    b.input("aq", DType::Int8, {1, 4, 2, 2});
    b.input("bq", DType::Int8, {1, 4, 2, 2});
    b.dq("aq", "a", 0.1, 0);
    b.dq("bq", "bf", 0.1, 0);
    b.value("s", DType::Float32, {1, 4, 2, 2});
    b.node("aten.add.Tensor", {"a", "bf"}, {}, {"s"});
    b.output("s");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.add.Tensor (node 0..2) as q8ta_add: 's' "
                         "is a graph output, not quantized (q8ta_add has no float-output "
                         "variant)"))
        << all_lines(r);
    EXPECT_EQ(count_op(b.g, "aten.add.Tensor"), 1);
  }
  {  // alpha != 1
    Builder b;
    b.input("aq", DType::Int8, {4});
    b.input("bq", DType::Int8, {4});
    b.dq("aq", "a", 0.1, 0);
    b.dq("bq", "bf", 0.1, 0);
    b.value("s", DType::Float32, {4});
    b.node("aten.add.Tensor", {"a", "bf"}, {{"alpha", 2.0}}, {"s"});
    b.q("s", "yq", 0.2, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.add.Tensor -> q (node 0..3) as q8ta_add: "
                         "alpha is not 1"))
        << all_lines(r);
  }
}

// ---- pixel shuffle ----------------------------------------------------------------------------

TEST(Fuse, PixelShuffleThroughClones) {
  Builder b;
  b.input("xq", DType::Int8, {1, 8, 2, 2});
  b.dq("xq", "x", 0.05, -7);
  b.value("c0", DType::Float32, {1, 8, 2, 2});
  b.node("aten.clone", {"x"}, {}, {"c0"});
  b.value("p", DType::Float32, {1, 2, 4, 4});
  b.node("aten.pixel_shuffle", {"c0"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.value("c1", DType::Float32, {1, 2, 4, 4});
  b.node("aten._clone_dim_order", {"p"}, {}, {"c1"});
  b.value("c2", DType::Float32, {1, 2, 4, 4});
  b.node("aten.alias_copy", {"c1"}, {}, {"c2"});
  b.q("c2", "yq", 0.06, 4);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(g.nodes.size(), 1u) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_pixel_shuffle");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "input_zero_point"), -7);
  EXPECT_EQ(arg_i(n, "upscale_factor"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.06);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 4);
  EXPECT_EQ(g.value_names(), (std::vector<std::string>{"xq", "yq"}));
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.clone -> aten.pixel_shuffle -> "
            "aten._clone_dim_order -> aten.alias_copy -> q (node 0..5) into "
            "q8ta_pixel_shuffle 'yq'");
  expect_valid(g);
}

// float16 data movement lowers (pixel_shuffle, a clone into identity) with float16 tensors the
// schema accepts; float16 arithmetic (relu) stays an edge op.
TEST(Fuse, Float16PixelShuffleLowersReluStaysAnEdgeOp) {
  Builder b;
  b.input("x", DType::Float16, {1, 8, 2, 2});
  b.value("c", DType::Float16, {1, 8, 2, 2});
  b.node("aten.clone", {"x"}, {}, {"c"});
  b.value("p", DType::Float16, {1, 2, 4, 4});
  b.node("aten.pixel_shuffle", {"c"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.output("p");
  b.value("r", DType::Float16, {1, 8, 2, 2});
  b.node("aten.relu", {"x"}, {}, {"r"});
  b.output("r");
  const PassReport rep = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"identity", "pixel_shuffle", "aten.relu"}))
      << all_lines(rep);
  EXPECT_EQ(b.g.value("p").dtype, DType::Float16);
  EXPECT_TRUE(has_line(rep, "left 1 node(s) as edge ops: aten.relu (node 2)")) << all_lines(rep);
}

// `vkd compile --partition`: patterns whose backend op has no kernel yet stay edge ops (the
// host runs them as given); lowering into kernel-less ops (float pixel_shuffle) is skipped too.
// With runnable_only, a pattern whose backend op has a kernel fuses (the pixel shuffle), and a
// node whose backend op has none (the float relu) stays an edge op for the host.
TEST(Fuse, RunnableOnlyFusesOpsWithKernelsAndLeavesTheRest) {
  Builder b;
  b.input("xq", DType::Int8, {1, 8, 2, 2});
  b.dq("xq", "x", 0.05, 0);
  b.value("p", DType::Float32, {1, 2, 4, 4});
  b.node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.value("c", DType::Float32, {1, 2, 4, 4});
  b.node("aten.clone", {"p"}, {}, {"c"});
  b.q("c", "yq", 0.05, 0);
  b.output("yq");
  b.dq("xq", "x2", 0.05, 0);
  b.value("r", DType::Float32, {1, 8, 2, 2});
  b.node("aten.relu", {"x2"}, {}, {"r"});
  b.output("r");
  const PassReport r = fuse_and_lower(b.g, FuseOptions{true});
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.pixel_shuffle -> aten.clone -> q (node 0..3) into "
                       "q8ta_pixel_shuffle 'yq'"))
      << all_lines(r);
  EXPECT_EQ(ops_of(b.g),
            (std::vector<std::string>{"q8ta_pixel_shuffle", "q8ta_dequantize", "aten.relu"}));
}

TEST(Fuse, PixelShuffleCloneWithTwoConsumersIsNotFused) {
  Builder b;
  b.input("xq", DType::Int8, {1, 8, 2, 2});
  b.dq("xq", "x", 0.05, 0);
  b.value("p", DType::Float32, {1, 2, 4, 4});
  b.node("aten.pixel_shuffle", {"x"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.value("c", DType::Float32, {1, 2, 4, 4});
  b.node("aten.clone", {"p"}, {}, {"c"});
  b.q("c", "yq", 0.05, 0);
  b.output("yq");
  b.output("c");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.pixel_shuffle -> aten.clone -> q (node 0..3) as "
                       "q8ta_pixel_shuffle: 'c' is a graph output"))
      << all_lines(r);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_dequantize", "pixel_shuffle", "identity",
                                                   "q8ta_quantize"}));
  expect_valid(b.g);
}

// ---- lowering and dtypes ----------------------------------------------------------------------

TEST(Fuse, LowersLeftoverOps) {
  Builder b;
  b.input("x", DType::Float32, {1, 4, 2, 2});
  b.q("x", "xq", 0.1, 3);  // 0
  b.value("xc", DType::Int8, {1, 4, 2, 2});
  b.node("aten.clone", {"xq"}, {}, {"xc"});  // 1
  b.dq("xc", "xf", 0.1, 3);                  // 2
  b.value("r", DType::Float32, {1, 4, 2, 2});
  b.node("aten.relu", {"xf"}, {}, {"r"});  // 3
  b.value("h", DType::Float32, {1, 4, 2, 2});
  b.node("aten.hardtanh", {"r"}, {{"min_val", 0.0}, {"max_val", int64_t{6}}}, {"h"});  // 4
  b.value("c", DType::Float32, {1, 4, 2, 2});
  b.node("aten.clamp", {"h"}, {{"min", -1.0}}, {"c"});  // 5
  b.value("v", DType::Float32, {4, 2, 2});
  b.node("aten.view_copy", {"c"}, {{"size", std::vector<int64_t>{4, 2, 2}}}, {"v"});  // 6
  b.value("v2", DType::Float32, {2, 8});
  b.node("aten.view_copy", {"v"}, {{"size", std::vector<int64_t>{2, 8}}}, {"v2"});  // 7
  b.value("ps", DType::Float32, {1, 1, 4, 4});
  b.node("aten.pixel_shuffle", {"c"}, {{"upscale_factor", int64_t{2}}}, {"ps"});  // 8
  b.output("v2");
  b.output("ps");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_quantize", "identity", "q8ta_dequantize",
                                                 "relu", "clamp", "clamp", "identity",
                                                 "aten.view_copy", "pixel_shuffle"}))
      << all_lines(r);
  const Node& q = g.nodes[0];
  EXPECT_EQ(arg_names(q),
            (std::vector<std::string>{"quant_max", "quant_min", "scale", "zero_point"}));
  EXPECT_EQ(arg_d(q, "scale"), 0.1);
  EXPECT_EQ(arg_i(q, "zero_point"), 3);
  EXPECT_EQ(arg_i(q, "quant_min"), -128);
  EXPECT_EQ(arg_i(q, "quant_max"), 127);
  EXPECT_TRUE(g.nodes[1].args.empty());
  EXPECT_EQ(arg_d(g.nodes[2], "scale"), 0.1);
  EXPECT_EQ(arg_i(g.nodes[2], "zero_point"), 3);
  EXPECT_EQ(arg_d(g.nodes[4], "min"), 0.0);
  EXPECT_EQ(arg_d(g.nodes[4], "max"), 6.0);
  EXPECT_EQ(arg_d(g.nodes[5], "min"), -1.0);
  EXPECT_EQ(arg_d(g.nodes[5], "max"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(arg_i(g.nodes[8], "upscale_factor"), 2);
  EXPECT_EQ(g.nodes[3].origin, "node 3 (aten.relu)");  // origins survive lowering
  // int8 activations around the lowered q/clone/dq.
  for (const char* name : {"xq", "xc"}) {
    EXPECT_EQ(g.value(name).dtype, DType::Int8x4) << name;
    expect_quant(g.value(name), 0.1, 3, -128, 127);
  }
  EXPECT_EQ(g.value("x").dtype, DType::Float32);
  EXPECT_TRUE(has_line(r,
                       "lowered 8 node(s): 2 clamp, 2 identity, 1 pixel_shuffle, 1 "
                       "q8ta_dequantize, 1 q8ta_quantize, 1 relu"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "left 1 node(s) as edge ops: aten.view_copy (node 7)")) << all_lines(r);
  expect_valid(g);
}

TEST(Fuse, Int8x4ActivationsCarryQuantInfo) {
  Builder b = conv_act_graph("", {}, 0.2, -3);
  // xq is dequantized with a restricted range; yq is then viewed into a graph output.
  b.g.nodes[1].args["quant_min"] = int64_t{-127};
  b.value("yc", DType::Int8, {1, 4, 4, 4});
  b.node("aten.clone", {"yq"}, {}, {"yc"});
  b.g.outputs = {"yc"};
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d", "identity"})) << all_lines(r);
  EXPECT_EQ(g.value("xq").dtype, DType::Int8x4);
  expect_quant(g.value("xq"), 0.1, 2, -127, 127);
  EXPECT_EQ(g.value("yq").dtype, DType::Int8x4);
  expect_quant(g.value("yq"), 0.2, -3, -128, 127);
  EXPECT_EQ(g.value("yc").dtype, DType::Int8x4);  // through the identity
  expect_quant(g.value("yc"), 0.2, -3, -128, 127);
  EXPECT_EQ(g.value("w").dtype, DType::Int8);  // constant weights stay int8
  EXPECT_FALSE(g.value("w").quant.has_value());
  EXPECT_EQ(g.value("b").dtype, DType::Float32);
  expect_valid(g);
}

TEST(Fuse, ProducerQuantizationWinsAndMismatchIsReported) {
  Builder b;
  b.input("x", DType::Float32, {1, 4, 2, 2});
  b.q("x", "xq", 0.2, 0);
  b.dq("xq", "y", 0.3, 1);
  b.output("y");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_quantize", "q8ta_dequantize"}));
  expect_quant(g.value("xq"), 0.2, 0, -128, 127);
  EXPECT_EQ(arg_d(g.nodes[1], "scale"), 0.3);  // the dequantize keeps its own parameters
  EXPECT_TRUE(has_line(r,
                       "quantization mismatch on 'xq': it is scale 0.2 zero_point 0 range "
                       "-128..127 but node 1 dequantizes it with scale 0.3 zero_point 1 range "
                       "-128..127 (that node keeps its own parameters)"))
      << all_lines(r);
}

TEST(Fuse, Int8GraphInputOnlyReadByUnsupportedOpStaysInt8) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 2, 2});
  b.value("m", DType::Int8, {1, 4, 1, 1});
  b.node("aten.max_pool2d", {"xq"}, {{"kernel_size", std::vector<int64_t>{2, 2}}}, {"m"});
  b.output("m");
  fuse_and_lower(b.g);
  EXPECT_EQ(b.g.value("xq").dtype, DType::Int8);
  EXPECT_FALSE(b.g.value("xq").quant.has_value());
}

// ---- determinism ------------------------------------------------------------------------------

// conv+relu -> add with a second branch -> pixel shuffle -> linear head, plus leftovers.
Builder mixed_graph() {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 4, 4});
  b.per_channel_weight({4, 4, 3, 3}, {1, 2, 3, 4}, {0, 0, 0, 0}, "cw");
  b.dq("xq", "x", 0.1, 0);
  b.conv("x", "cwf", "", "c", {1, 4, 4, 4});
  b.value("cr", DType::Float32, {1, 4, 4, 4});
  b.node("aten.relu", {"c"}, {}, {"cr"});
  b.q("cr", "cq", 0.1, -128);
  b.dq("cq", "ca", 0.1, -128);
  b.dq("xq", "xa", 0.1, 0);
  b.value("s", DType::Float32, {1, 4, 4, 4});
  b.node("aten.add.Tensor", {"ca", "xa"}, {}, {"s"});
  b.q("s", "sq", 0.2, 0);
  b.dq("sq", "sf", 0.2, 0);
  b.value("p", DType::Float32, {1, 1, 8, 8});
  b.node("aten.pixel_shuffle", {"sf"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.q("p", "pq", 0.2, 0);
  b.dq("pq", "pf", 0.2, 0);
  b.value("v", DType::Float32, {8, 8});
  b.node("aten.view_copy", {"pf"}, {{"size", std::vector<int64_t>{8, 8}}}, {"v"});
  b.per_channel_weight({3, 8}, {0.5, 0.5, 0.5}, {0, 0, 0}, "lw");
  b.value("vq", DType::Int8, {8, 8});
  b.node(kQ, {"v"}, q_args(0.3, 0), {"vq"});
  b.dq("vq", "vf", 0.3, 0);
  b.value("out", DType::Float32, {8, 3});
  b.node("aten.linear", {"vf", "lwf"}, {}, {"out"});
  b.output("out");
  return b;
}

void expect_same_graph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].op, b.nodes[i].op) << i;
    EXPECT_EQ(a.nodes[i].inputs, b.nodes[i].inputs) << i;
    EXPECT_EQ(a.nodes[i].outputs, b.nodes[i].outputs) << i;
    EXPECT_TRUE(a.nodes[i].args == b.nodes[i].args) << i;
    EXPECT_EQ(a.nodes[i].origin, b.nodes[i].origin) << i;
  }
  ASSERT_EQ(a.value_names(), b.value_names());
  for (const auto& name : a.value_names()) {
    const Value &va = a.value(name), &vb = b.value(name);
    EXPECT_EQ(va.dtype, vb.dtype) << name;
    EXPECT_EQ(va.shape, vb.shape) << name;
    EXPECT_EQ(va.data, vb.data) << name;
    EXPECT_EQ(va.quant.has_value(), vb.quant.has_value()) << name;
    if (va.quant && vb.quant) {
      EXPECT_EQ(va.quant->scale, vb.quant->scale) << name;
      EXPECT_EQ(va.quant->zero_point, vb.quant->zero_point) << name;
    }
  }
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
}

TEST(Fuse, Deterministic) {
  const Builder original = mixed_graph();
  Graph g1 = original.g, g2 = original.g;
  const PassReport r1 = fuse_and_lower(g1);
  const PassReport r2 = fuse_and_lower(g2);
  EXPECT_EQ(r1.lines, r2.lines);
  expect_same_graph(g1, g2);
  // And the result is the one expected, so a change in order or naming shows up here.
  EXPECT_EQ(ops_of(g1), (std::vector<std::string>{"q8ta_conv2d_add", "q8ta_pixel_shuffle",
                                                  "identity", "q8ta_clamp", "q8ta_linear_dq"}))
      << all_lines(r1);
  EXPECT_EQ(g1.value_names(),
            (std::vector<std::string>{"xq", "cw", "sq", "pq", "lw", "vq", "out", "cw_scales",
                                      "cq_bias", "v_int8", "lw_scales", "out_bias"}));
  expect_valid(g1);
  // A second run on the lowered graph changes nothing.
  Graph g3 = g1;
  fuse_and_lower(g3);
  expect_same_graph(g1, g3);
}

// ---- q8ta_add broadcasting, max_pool2d, mean --------------------------------------------------

// dq(aq) (0.1, 0) + dq(bq) (0.2, 1) -> aten.add.Tensor (or `op`) -> s (`out` shape) -> q (0.3, 0)
// -> yq.
Builder add_graph(std::vector<int64_t> a_shape, std::vector<int64_t> b_shape,
                  std::vector<int64_t> out, const std::string& op = "aten.add.Tensor") {
  Builder b;
  b.input("aq", DType::Int8, std::move(a_shape));
  b.input("bq", DType::Int8, std::move(b_shape));
  b.dq("aq", "a", 0.1, 0);
  b.dq("bq", "bf", 0.2, 1);
  b.value("s", DType::Float32, std::move(out));
  b.node(op, {"a", "bf"}, {}, {"s"});
  b.q("s", "yq", 0.3, 0);
  b.output("yq");
  return b;
}

// xq (`in` shape) -> dq (0.1, 2) -> `op` -> m (`out` shape) -> q (`scale`, `zp`) -> yq.
Builder unary_graph(const std::string& op, std::vector<int64_t> in, Args args,
                    std::vector<int64_t> out, double scale, int64_t zp) {
  Builder b;
  b.input("xq", DType::Int8, std::move(in));
  b.dq("xq", "x", 0.1, 2);
  b.value("m", DType::Float32, std::move(out));
  b.node(op, {"x"}, std::move(args), {"m"});
  b.q("m", "yq", scale, zp);
  b.output("yq");
  return b;
}

TEST(Fuse, AddBroadcastsAChannelOrScalarOperandInEitherPosition) {
  for (const std::vector<int64_t>& small :
       {std::vector<int64_t>{1, 4, 1, 1}, {2, 4, 1, 1}, {1, 1, 1, 1}}) {
    for (bool small_first : {false, true}) {
      const std::vector<int64_t> big = {2, 4, 3, 3};
      Builder b = small_first ? add_graph(small, big, big) : add_graph(big, small, big);
      const PassReport r = fuse_and_lower(b.g);
      EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_add"})) << all_lines(r);
      expect_valid(b.g);
    }
  }
  Builder b = add_graph({1, 4, 3, 3}, {1, 4, 1, 3}, {1, 4, 3, 3});  // [1, 4, 1, 3] is neither form
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq, dq -> aten.add.Tensor -> q (node 0..3) as q8ta_add: "
                       "broadcasting add ([1, 4, 3, 3] + [1, 4, 1, 3]; q8ta_add broadcasts "
                       "only a 4-D [N or 1, C, 1, 1] or [1, 1, 1, 1] operand)"))
      << all_lines(r);
}

// ---- mul
// -----------------------------------------------------------------------------------------

// Squeeze-excite: dq(scale [N or 1, C, 1, 1]) * dq(x) -> q, the broadcast operand in either
// position, as q8ta_add broadcasts; other broadcasts are reported.
TEST(Fuse, MulOfTwoInt8TensorsBecomesQ8taMul) {
  for (const std::vector<int64_t>& small :
       {std::vector<int64_t>{1, 4, 1, 1}, {2, 4, 1, 1}, {1, 1, 1, 1}, {2, 4, 3, 3}}) {
    for (bool small_first : {false, true}) {
      const std::vector<int64_t> big = {2, 4, 3, 3};
      Builder b = small_first ? add_graph(small, big, big, "aten.mul.Tensor")
                              : add_graph(big, small, big, "aten.mul.Tensor");
      const PassReport r = fuse_and_lower(b.g);
      ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul"})) << all_lines(r);
      const Node& n = b.g.nodes[0];
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"aq", "bq"}));
      EXPECT_EQ(arg_d(n, "a_scale"), 0.1);
      EXPECT_EQ(arg_i(n, "a_zero_point"), 0);
      EXPECT_EQ(arg_d(n, "b_scale"), 0.2);
      EXPECT_EQ(arg_i(n, "b_zero_point"), 1);
      EXPECT_EQ(arg_d(n, "output_scale"), 0.3);
      EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
      EXPECT_TRUE(has_line(r,
                           "fused dq, dq -> aten.mul.Tensor -> q (node 0..3) into q8ta_mul "
                           "'yq' (activation none)"))
          << all_lines(r);
      expect_valid(b.g);
    }
  }
  Builder b = add_graph({1, 4, 3, 3}, {1, 4, 1, 3}, {1, 4, 3, 3}, "aten.mul.Tensor");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq, dq -> aten.mul.Tensor -> q (node 0..3) as q8ta_mul: "
                       "broadcasting mul ([1, 4, 3, 3] * [1, 4, 1, 3]; q8ta_mul broadcasts "
                       "only a 4-D [N or 1, C, 1, 1] or [1, 1, 1, 1] operand)"))
      << all_lines(r);
}

// A relu / hardtanh after the mul is its epilogue's range, like q8ta_add's; a float mul output
// is reported (no float-output variant).
TEST(Fuse, MulFusesItsActivationAndNeedsAQuantizedOutput) {
  {
    Builder b = add_graph({1, 4, 3, 3}, {1, 4, 1, 1}, {1, 4, 3, 3}, "aten.mul.Tensor");
    b.g.nodes.pop_back();  // the q: hardtanh(0, 6) first, then q (0.05, -100)
    b.g.remove_value("yq");
    b.value("h", DType::Float32, {1, 4, 3, 3});
    b.node("aten.hardtanh", {"s"}, {{"min_val", 0.0}, {"max_val", 6.0}}, {"h"});
    b.q("h", "yq", 0.05, -100);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul"})) << all_lines(r);
    // 0 -> -100, 6 / 0.05 = 120 -> 20
    EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{-100, 20}));
    EXPECT_TRUE(has_line(r,
                         "fused dq, dq -> aten.mul.Tensor -> aten.hardtanh -> q (node 0..4) "
                         "into q8ta_mul 'yq' (activation hardtanh(0, 6))"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b = add_graph({1, 4, 3, 3}, {1, 4, 3, 3}, {1, 4, 3, 3}, "aten.mul.Tensor");
    b.g.nodes.pop_back();
    b.g.remove_value("yq");
    b.g.outputs = {"s"};
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.mul.Tensor (node 0..2) as q8ta_mul: 's' is "
                         "a graph output, not quantized (q8ta_mul has no float-output "
                         "variant)"))
        << all_lines(r);
  }
}

// dq -> mul by a number (aten.mul.Scalar), by a float32 one-element constant, or by an int8
// one-element constant behind its dequantize (FX's quantized buffer) [-> relu] -> q becomes
// q8ta_mul_scalar: the float32 scalar as the reference multiplies by it, the range from the
// chain over all 256 inputs (relu after a negative scalar keeps the inputs below the zero point).
TEST(Fuse, MulByAScalarBecomesQ8taMulScalar) {
  {
    Builder b =
        unary_graph("aten.mul.Scalar", {1, 4, 3, 3}, {{"other", 0.5}}, {1, 4, 3, 3}, 0.1, 2);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul_scalar"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(arg_d(n, "scalar"), 0.5);
    EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "output_zero_point"), 2);
    // (q - 2) * 0.5 + 2 over -128..127: -63..64.
    EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-63, 64}));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.mul.Scalar -> q (node 0..2) into q8ta_mul_scalar "
                         "'yq' (scalar 0.5, activation range -63..64)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // float32 constant [1] as the first operand, then relu
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 3, 3});
    b.dq("xq", "x", 0.1, 0);
    b.constant("k", DType::Float32, {1}, f32_bytes({-2.0f}));
    b.value("m", DType::Float32, {1, 4, 3, 3});
    b.node("aten.mul.Tensor", {"k", "x"}, {}, {"m"});
    b.value("r", DType::Float32, {1, 4, 3, 3});
    b.node("aten.relu", {"m"}, {}, {"r"});
    b.q("r", "yq", 0.2, -128);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul_scalar"})) << all_lines(r);
    EXPECT_EQ(arg_d(b.g.nodes[0], "scalar"), -2.0);
    EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"xq"}));
    // relu(-0.2 q) / 0.2 - 128: q = -128 gives 128 - 128 = 0; q >= 0 gives -128.
    EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{-128, 0}));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.mul.Tensor -> aten.relu -> q (node 0..3) into "
                         "q8ta_mul_scalar 'yq' (scalar -2, activation range -128..0)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // int8 constant behind a dequantize: scalar = (100 - (-128)) * 0.0025 = 0.57
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 3, 3});
    b.constant("kq", DType::Int8, {1}, {100});
    b.dq("kq", "k", 0.0025, -128);
    b.dq("xq", "x", 0.1, 0);
    b.value("m", DType::Float32, {1, 4, 3, 3});
    b.node("aten.mul.Tensor", {"x", "k"}, {}, {"m"});
    b.q("m", "yq", 0.1, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mul_scalar"})) << all_lines(r);
    EXPECT_EQ(arg_d(b.g.nodes[0], "scalar"), static_cast<double>(228.0f * 0.0025f));
    EXPECT_FALSE(b.g.has_value("kq"));
    EXPECT_TRUE(has_line(r, "folded 1 weight dequantize node(s) (node 0)")) << all_lines(r);
    expect_valid(b.g);
  }
  {  // a scalar of higher rank than x broadcasts it: not this kernel
    Builder b;
    b.input("xq", DType::Int8, {4, 3});
    b.dq("xq", "x", 0.1, 0);
    b.constant("k", DType::Float32, {1, 1, 1}, f32_bytes({3.0f}));
    b.value("m", DType::Float32, {1, 4, 3});
    b.node("aten.mul.Tensor", {"x", "k"}, {}, {"m"});
    b.q("m", "yq", 0.1, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.mul.Tensor -> q (node 0..2) as "
                         "q8ta_mul_scalar: the scalar 'k' broadcasts [4, 3] to [1, 4, 3]"))
        << all_lines(r);
  }
  {  // a per-channel float constant is no scalar and no int8 operand
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 3, 3});
    b.dq("xq", "x", 0.1, 0);
    b.constant("k", DType::Float32, {1, 4, 1, 1}, f32_bytes({1, 2, 3, 4}));
    b.value("m", DType::Float32, {1, 4, 3, 3});
    b.node("aten.mul.Tensor", {"x", "k"}, {}, {"m"});
    b.q("m", "yq", 0.1, 0);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.mul.Tensor -> q (node 0..2) as q8ta_mul: 'k' "
                         "is not dequantized (a constant)"))
        << all_lines(r);
  }
}

TEST(Fuse, MaxPoolWithSharedQparamsFuses) {
  Builder b = unary_graph("aten.max_pool2d", {1, 4, 7, 6},
                          {{"kernel_size", std::vector<int64_t>{3, 3}},
                           {"stride", std::vector<int64_t>{2, 2}},
                           {"padding", std::vector<int64_t>{1, 1}},
                           {"dilation", std::vector<int64_t>{1, 1}},
                           {"ceil_mode", true}},
                          {1, 4, 4, 4}, 0.1, 2);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(b.g.nodes.size(), 1u) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_max_pool2d");
  EXPECT_EQ(std::get<std::vector<int64_t>>(n.args.at("kernel_size")), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(std::get<std::vector<int64_t>>(n.args.at("padding")), (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(std::get<bool>(n.args.at("ceil_mode")));
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 2);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.max_pool2d -> q (node 0..2) into q8ta_max_pool2d 'yq'");
  expect_valid(b.g);
}

// Other output qparams: the kernel requantizes the max (U-Net encoders, where FX gives the
// pooled map its own observer), which equals dq -> q for all 256 int8 values.
TEST(Fuse, MaxPoolWithOtherOutputQparamsRequantizes) {
  Builder b = unary_graph("aten.max_pool2d", {1, 4, 6, 6},
                          {{"kernel_size", std::vector<int64_t>{2, 2}}}, {1, 4, 3, 3}, 0.2, -5);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), std::vector<std::string>{"q8ta_max_pool2d"}) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -5);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.max_pool2d -> q (node 0..2) into q8ta_max_pool2d "
            "'yq' (the max requantized: scale 0.1 zero_point 2 -> scale 0.2 "
            "zero_point -5)");
  expect_valid(b.g);
}

// A pixel shuffle moves values as a max pool selects them: into other output qparams over the
// full int8 range the kernel requantizes each one, which equals dq -> q for all 256 int8 values
// (PixelShuffleThroughClones checks the args).
TEST(Fuse, PixelShuffleRequantizingIntoTheFullRangeFuses) {
  Builder b = unary_graph("aten.pixel_shuffle", {1, 8, 2, 2}, {{"upscale_factor", int64_t{2}}},
                          {1, 2, 4, 4}, 0.2, -5);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), std::vector<std::string>{"q8ta_pixel_shuffle"}) << all_lines(r);
  EXPECT_EQ(arg_i(b.g.nodes[0], "output_zero_point"), -5);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.pixel_shuffle -> q (node 0..2) into "
            "q8ta_pixel_shuffle 'yq'");
  expect_valid(b.g);
}

// A narrower output range is no requantization the kernels that move or select int8 values do
// (they clamp to -128..127), and, with the dq's scale too, no byte move (-128 does not come
// back): reported, and the nodes stay edge ops.
TEST(Fuse, MaxPoolAndPixelShuffleIntoANarrowerRangeAreNotFused) {
  struct Case {
    std::string op;
    Args args;
    std::vector<int64_t> in, out;
    std::string backend, edge_op;  // the edge op as lowered
  };
  const std::vector<Case> cases = {{"aten.max_pool2d",
                                    {{"kernel_size", std::vector<int64_t>{2, 2}}},
                                    {1, 4, 6, 6},
                                    {1, 4, 3, 3},
                                    "q8ta_max_pool2d",
                                    "aten.max_pool2d"},
                                   {"aten.pixel_shuffle",
                                    {{"upscale_factor", int64_t{2}}},
                                    {1, 8, 2, 2},
                                    {1, 2, 4, 4},
                                    "q8ta_pixel_shuffle",
                                    "pixel_shuffle"}};
  for (const Case& c : cases) {
    for (const auto& [scale, text] : {std::pair<double, std::string>{0.2, "0.2"}, {0.1, "0.1"}}) {
      Builder b = unary_graph(c.op, c.in, c.args, c.out, scale, 2);
      b.g.nodes.back().args["quant_min"] = int64_t{-127};
      const PassReport r = fuse_and_lower(b.g);
      EXPECT_TRUE(has_line(r, "not fused: dq -> " + c.op + " -> q (node 0..2) as " + c.backend +
                                  ": input (scale 0.1 zero_point 2 range -128..127) and output "
                                  "(scale " +
                                  text +
                                  " zero_point 2 range -127..127) "
                                  "quantization differ and the quantize's range -127..127 is "
                                  "not the full int8 range a requantizing kernel writes"))
          << all_lines(r);
      EXPECT_EQ(ops_of(b.g),
                (std::vector<std::string>{"q8ta_dequantize", c.edge_op, "q8ta_quantize"}))
          << all_lines(r);
      expect_valid(b.g);
    }
  }
}

TEST(Fuse, MeanOverHeightAndWidthAndAdaptiveAvgPoolFuse) {
  {
    Builder b = unary_graph("aten.mean.dim", {2, 8, 5, 5},
                            {{"dim", std::vector<int64_t>{-1, -2}}, {"keepdim", true}},
                            {2, 8, 1, 1}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(b.g.nodes.size(), 1u) << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].op, "q8ta_mean");
    EXPECT_EQ(arg_d(b.g.nodes[0], "output_scale"), 0.05);
    EXPECT_EQ(arg_i(b.g.nodes[0], "output_zero_point"), -3);
    expect_valid(b.g);
  }
  {
    Builder b = unary_graph("aten.adaptive_avg_pool2d", {1, 8, 5, 5},
                            {{"output_size", std::vector<int64_t>{1, 1}}}, {1, 8, 1, 1}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mean"})) << all_lines(r);
    expect_valid(b.g);
  }
  {  // over W only: not this op
    Builder b =
        unary_graph("aten.mean.dim", {1, 8, 5, 5},
                    {{"dim", std::vector<int64_t>{3}}, {"keepdim", true}}, {1, 8, 5, 1}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.mean.dim -> q (node 0..2) as q8ta_mean: mean "
                         "is not over exactly H and W"))
        << all_lines(r);
  }
}

// avg_pool2d: every argument goes to q8ta_avg_pool2d (an absent stride stays empty: the kernel
// size; divisor_override None is 0), requantized to the q's parameters; adaptive pooling to
// another size than 1x1 becomes q8ta_adaptive_avg_pool2d (to 1x1 it stays q8ta_mean).
TEST(Fuse, AvgPoolAndAdaptiveAvgPoolFuse) {
  using I = std::vector<int64_t>;
  {
    Builder b = unary_graph("aten.avg_pool2d", {1, 4, 7, 6},
                            {{"kernel_size", I{3, 3}},
                             {"stride", I{2, 2}},
                             {"padding", I{1, 1}},
                             {"ceil_mode", true},
                             {"count_include_pad", false},
                             {"divisor_override", NoneArg{}}},
                            {1, 4, 4, 4}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_avg_pool2d"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(arg_l(n, "kernel_size"), (I{3, 3}));
    EXPECT_EQ(arg_l(n, "stride"), (I{2, 2}));
    EXPECT_EQ(arg_l(n, "padding"), (I{1, 1}));
    EXPECT_TRUE(std::get<bool>(n.args.at("ceil_mode")));
    EXPECT_FALSE(std::get<bool>(n.args.at("count_include_pad")));
    EXPECT_EQ(arg_i(n, "divisor_override"), 0);
    EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.05);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.avg_pool2d -> q (node 0..2) into q8ta_avg_pool2d "
                         "'yq'"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // defaults: no stride, padding 0, count_include_pad true; divisor_override 3
    Builder b = unary_graph("aten.avg_pool2d", {1, 4, 6, 6},
                            {{"kernel_size", I{2, 2}}, {"divisor_override", int64_t{3}}},
                            {1, 4, 3, 3}, 0.1, 2);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_avg_pool2d"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(arg_l(n, "stride"), (I{}));
    EXPECT_EQ(arg_l(n, "padding"), (I{0}));
    EXPECT_TRUE(std::get<bool>(n.args.at("count_include_pad")));
    EXPECT_EQ(arg_i(n, "divisor_override"), 3);
    expect_valid(b.g);
  }
  {
    Builder b = unary_graph("aten.adaptive_avg_pool2d", {2, 8, 7, 9}, {{"output_size", I{3, 2}}},
                            {2, 8, 3, 2}, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_adaptive_avg_pool2d"})) << all_lines(r);
    EXPECT_EQ(arg_d(b.g.nodes[0], "output_scale"), 0.05);
    EXPECT_EQ(arg_i(b.g.nodes[0], "output_zero_point"), -3);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.adaptive_avg_pool2d -> q (node 0..2) into "
                         "q8ta_adaptive_avg_pool2d 'yq'"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // the averaging kernels requantize into the full int8 range only
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 6, 6});
    b.dq("xq", "x", 0.1, 2);
    b.value("m", DType::Float32, {1, 4, 3, 3});
    b.node("aten.avg_pool2d", {"x"}, {{"kernel_size", I{2, 2}}}, {"m"});
    b.value("yq", DType::Int8, {1, 4, 3, 3});
    b.node(kQ, {"m"}, q_args(0.1, 2, -127, 127), {"yq"});
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.avg_pool2d -> q (node 0..2) as "
                         "q8ta_avg_pool2d: output range -127..127 is not the full int8 range"))
        << all_lines(r);
  }
}

// ---- int8 views and the classifier head// ---- int8 views and the classifier head
// --------------------------------------------------------

// xq [2, 8, 5, 5] -> dq -> `pool` -> q (0.05, -3) -> aq; then `head` builds the rest.
Builder pooled(const std::string& pool, Args args, std::vector<int64_t> out) {
  return unary_graph(pool, {2, 8, 5, 5}, std::move(args), std::move(out), 0.05, -3);
}

// yq -> dq -> view_copy [2, 8] -> q (`scale`, `zp`) -> vq -> dq -> linear (4 x 8) -> q -> lq.
void flatten_linear_head(Builder& b, double scale, int64_t zp) {
  b.g.outputs.clear();
  b.dq("yq", "yf", 0.05, -3);
  b.value("v", DType::Float32, {2, 8});
  b.node("aten.view_copy", {"yf"}, {{"size", std::vector<int64_t>{2, -1}}}, {"v"});
  b.q("v", "vq", scale, zp);
  b.per_channel_weight({4, 8}, {0.5f, 0.25f, 0.125f, 0.0625f}, {0, 0, 0, 0});
  b.dq("vq", "vf", scale, zp);
  b.value("l", DType::Float32, {2, 4});
  b.node("aten.linear", {"vf", "wf"}, {}, {"l"});
  b.q("l", "lq", 0.2, 1);
  b.output("lq");
}

TEST(Fuse, MeanWithoutKeepdimWritesRows) {
  Builder b = pooled("aten.mean.dim", {{"dim", std::vector<int64_t>{2, 3}}}, {2, 8});
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mean_flat"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_d(n, "output_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
  EXPECT_EQ(b.g.value("yq").shape, (std::vector<int64_t>{2, 8}));
  EXPECT_TRUE(has_line(r, "fused dq -> aten.mean.dim -> q (node 0..2) into q8ta_mean_flat 'yq'"))
      << all_lines(r);
  expect_valid(b.g);
}

// pool -> q -> dq -> flatten -> q -> dq -> linear: the flatten joins the mean (q8ta_mean_flat
// writes [2, 8] rows), the linear reads them; no view op is left.
TEST(Fuse, FlattenAfterPoolFoldsIntoTheMean) {
  for (const char* pool : {"aten.mean.dim", "aten.adaptive_avg_pool2d"}) {
    Builder b =
        std::string(pool) == "aten.mean.dim"
            ? pooled(pool, {{"dim", std::vector<int64_t>{-1, -2}}, {"keepdim", true}}, {2, 8, 1, 1})
            : pooled(pool, {{"output_size", std::vector<int64_t>{1, 1}}}, {2, 8, 1, 1});
    flatten_linear_head(b, 0.05, -3);
    const PassReport r = fuse_and_lower(b.g);
    const Graph& g = b.g;
    ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_mean_flat", "q8ta_linear"}))
        << all_lines(r);
    EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"xq"}));
    EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"vq"}));
    EXPECT_EQ(g.nodes[0].origin, std::string("node 1 (") + pool + ") fused into q8ta_mean_flat");
    EXPECT_EQ(g.nodes[1].inputs.at(0), "vq");
    EXPECT_FALSE(g.has_value("yq"));
    EXPECT_EQ(g.value("vq").shape, (std::vector<int64_t>{2, 8}));
    expect_quant(g.value("vq"), 0.05, -3, -128, 127);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.view_copy -> q (node 3..5) into q8ta_mean 'yq': "
                         "q8ta_mean_flat writes the [2, 8] rows 'vq' itself"))
        << all_lines(r);
    expect_valid(g);
  }
}

// The view_copy of the int8 output itself (no dq / q around it) folds the same way.
TEST(Fuse, Int8FlattenAfterPoolFoldsIntoTheMean) {
  Builder b = pooled("aten.adaptive_avg_pool2d", {{"output_size", std::vector<int64_t>{1, 1}}},
                     {2, 8, 1, 1});
  b.g.outputs.clear();
  b.value("v", DType::Int8, {2, 8});
  b.node("aten.view_copy", {"yq"}, {{"size", std::vector<int64_t>{2, 8}}}, {"v"});  // 3
  b.output("v");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_mean_flat"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"v"}));
  EXPECT_EQ(b.g.value("v").dtype, DType::Int8x4);
  expect_quant(b.g.value("v"), 0.05, -3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused aten.view_copy (node 3) into q8ta_mean 'yq': q8ta_mean_flat "
                       "writes the [2, 8] rows 'v' itself"))
      << all_lines(r);
  expect_valid(b.g);
}

// A flatten whose q differs from the dq (FX observes `x.flatten(1)` before a classifier on its
// own): the mean writes its own output as the graph says, the view moves it into a new int8
// value of the mean's parameters, and a q8ta_clamp with the q's range requantizes that (dq -> q
// for all 256 values). The view does not fold into the mean: the mean's output stays a tensor
// the checks see.
TEST(Fuse, ViewWithOtherQuantizationIsAViewThenAClamp) {
  Builder b = pooled("aten.mean.dim", {{"dim", std::vector<int64_t>{-1, -2}}, {"keepdim", true}},
                     {2, 8, 1, 1});
  flatten_linear_head(b, 0.1, -3);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g),
            (std::vector<std::string>{"q8ta_mean", "q8ta_view", "q8ta_clamp", "q8ta_linear"}))
      << all_lines(r);
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(g.nodes[1].outputs, (std::vector<std::string>{"v_int8"}));
  expect_quant(g.value("v_int8"), 0.05, -3, -128, 127);
  EXPECT_EQ(g.value("v_int8").shape, (std::vector<int64_t>{2, 8}));
  const Node& clamp = g.nodes[2];
  EXPECT_EQ(clamp.inputs, (std::vector<std::string>{"v_int8"}));
  EXPECT_EQ(clamp.outputs, (std::vector<std::string>{"vq"}));
  EXPECT_EQ(arg_d(clamp, "input_scale"), 0.05);
  EXPECT_EQ(arg_i(clamp, "input_zero_point"), -3);
  EXPECT_EQ(arg_d(clamp, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(clamp, "output_zero_point"), -3);
  EXPECT_EQ(arg_i(clamp, "activation_min"), -128);
  EXPECT_EQ(arg_i(clamp, "activation_max"), 127);
  expect_quant(g.value("vq"), 0.1, -3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.view_copy (node 3..4) into q8ta_view 'v_int8' (a "
                       "view of the int8 data)"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused q (node 5) into q8ta_clamp 'vq' (requantizes the view "
                       "'v_int8': scale 0.05 zero_point -3 range -128..127 -> scale 0.1 "
                       "zero_point -3 range -128..127)"))
      << all_lines(r);
  expect_valid(g);
}

// dq -> view -> q with one quantization and no mean before it: the view on the int8 data,
// identity where the packed shape is the same, else q8ta_view padding with the zero point; a
// restricted q range that would clamp -128 keeps the pair.
TEST(Fuse, DqViewQBecomesAnInt8View) {
  auto graph = [](std::vector<int64_t> out, int64_t qmin) {
    Builder b;
    b.input("xq", DType::Int8, {1, 8, 3, 3});
    b.dq("xq", "x", 0.1, 2);
    b.value("v", DType::Float32, out);
    b.node("aten.view_copy", {"x"}, {{"size", out}}, {"v"});
    b.value("vq", DType::Int8, out);
    b.node(kQ, {"v"}, q_args(0.1, 2, qmin, 127), {"vq"});
    b.output("vq");
    return b;
  };
  {
    Builder b = graph({1, 72}, -128);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_view"})) << all_lines(r);
    EXPECT_EQ(b.g.nodes[0].inputs, (std::vector<std::string>{"xq"}));
    EXPECT_EQ(arg_i(b.g.nodes[0], "zero_point"), 2);
    expect_quant(b.g.value("vq"), 0.1, 2, -128, 127);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.view_copy -> q (node 0..2) into q8ta_view 'vq' (a "
                         "view of the int8 data)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b = graph({8, 3, 3}, -128);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"identity"})) << all_lines(r);
    expect_valid(b.g);
  }
  {  // -128 clamped to -127: the view, then a q8ta_clamp to the q's range
    Builder b = graph({1, 72}, -127);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_view", "q8ta_clamp"})) << all_lines(r);
    EXPECT_EQ(arg_i(b.g.nodes[1], "activation_min"), -127);
    EXPECT_EQ(arg_i(b.g.nodes[1], "activation_max"), 127);
    expect_quant(b.g.value("vq"), 0.1, 2, -127, 127);
    expect_valid(b.g);
  }
}

// An int8 view_copy on its own is lowered to q8ta_view, with the zero point of what it views.
TEST(Fuse, Int8ViewCopyLowersToQ8taView) {
  Builder b;
  b.input("x", DType::Float32, {2, 8, 1, 1});
  b.q("x", "xq", 0.1, 5);
  b.value("v", DType::Int8, {2, 8});
  b.node("aten.view_copy", {"xq"}, {{"size", std::vector<int64_t>{2, 8}}}, {"v"});
  b.dq("v", "y", 0.1, 5);
  b.output("y");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g),
            (std::vector<std::string>{"q8ta_quantize", "q8ta_view", "q8ta_dequantize"}))
      << all_lines(r);
  EXPECT_EQ(arg_i(b.g.nodes[1], "zero_point"), 5);
  EXPECT_EQ(b.g.value("v").dtype, DType::Int8x4);
  expect_quant(b.g.value("v"), 0.1, 5, -128, 127);
  EXPECT_TRUE(has_line(r, "lowered 3 node(s): 1 q8ta_dequantize, 1 q8ta_quantize, 1 q8ta_view"))
      << all_lines(r);
  expect_valid(b.g);
}

// ---- data movement: channel shuffle, permute ---------------------------------------------------

// xq [1, 6, 4, 4] through `moves` (op, args, output shape), each followed by q -> dq with
// (0.1, 2) when `pairs` (FX's reference graphs), ending in `end` (q or none).
struct MoveStep {
  std::string op;
  Args args;
  std::vector<int64_t> shape;
};
Builder move_chain(const std::vector<MoveStep>& moves, bool pairs, bool final_q = true) {
  Builder b;
  b.input("xq", DType::Int8, {1, 6, 4, 4});
  b.dq("xq", "x", 0.1, 2);
  std::string cur = "x";
  for (size_t i = 0; i < moves.size(); ++i) {
    const std::string out = "m" + std::to_string(i);
    b.value(out, DType::Float32, moves[i].shape);
    b.node(moves[i].op, {cur}, moves[i].args, {out});
    cur = out;
    if (pairs && i + 1 < moves.size()) {
      b.q(cur, cur + "q", 0.1, 2);
      b.dq(cur + "q", cur + "d", 0.1, 2);
      cur += "d";
    }
  }
  if (final_q) {
    b.q(cur, "yq", 0.1, 2);
    b.output("yq");
  } else {
    b.output(cur);
  }
  return b;
}

// ShuffleNet's channel shuffle with groups 2: view [1, 2, 3, 4, 4], transpose(1, 2), contiguous,
// view [1, 6, 4, 4].
std::vector<MoveStep> shuffle_moves(const std::string& transpose = "aten.transpose_copy.int") {
  Args swap = transpose == "aten.permute_copy" ? Args{{"dims", std::vector<int64_t>{0, 2, 1, 3, 4}}}
                                               : Args{{"dim0", int64_t{1}}, {"dim1", int64_t{2}}};
  return {{"aten.view_copy", {{"size", std::vector<int64_t>{1, 2, 3, 4, 4}}}, {1, 2, 3, 4, 4}},
          {transpose, swap, {1, 3, 2, 4, 4}},
          {"aten.clone", {}, {1, 3, 2, 4, 4}},
          {"aten.view_copy", {{"size", std::vector<int64_t>{1, 6, 4, 4}}}, {1, 6, 4, 4}}};
}

// FX's form (a q -> dq pair after every move) and the form without pairs both become one
// q8ta_channel_shuffle on the int8 data; the 5-D values disappear with the chain.
TEST(Fuse, ChannelShuffleBetweenQuantizesFuses) {
  for (bool pairs : {true, false}) {
    for (const char* transpose : {"aten.transpose_copy.int", "aten.permute_copy"}) {
      Builder b = move_chain(shuffle_moves(transpose), pairs);
      const PassReport r = fuse_and_lower(b.g);
      ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_channel_shuffle"})) << all_lines(r);
      const Node& n = b.g.nodes[0];
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
      EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
      EXPECT_EQ(arg_i(n, "groups"), 2);
      EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
      EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
      EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
      EXPECT_EQ(arg_i(n, "output_zero_point"), 2);
      EXPECT_EQ(b.g.value_names(), (std::vector<std::string>{"xq", "yq"}));
      expect_quant(b.g.value("yq"), 0.1, 2, -128, 127);
      expect_valid(b.g);
      if (pairs && std::string(transpose) == "aten.transpose_copy.int") {
        EXPECT_EQ(r.lines.at(0),
                  "fused dq -> aten.view_copy -> q -> dq -> aten.transpose_copy.int -> q -> dq -> "
                  "aten.clone -> q -> dq -> aten.view_copy -> q (node 0..11) into "
                  "q8ta_channel_shuffle 'yq' (channel shuffle (groups 2))");
      }
    }
  }
}

// Groups 3 of 6 channels, the 5-D view read back as [1, 6, 4, 4]: the groups come from what the
// chain does to the elements.
TEST(Fuse, ChannelShuffleGroupsComeFromTheElements) {
  Builder b = move_chain(
      {{"aten.view_copy", {{"size", std::vector<int64_t>{1, 3, 2, 16}}}, {1, 3, 2, 16}},
       {"aten.transpose.int", {{"dim0", int64_t{-3}}, {"dim1", int64_t{2}}}, {1, 2, 3, 16}},
       {"aten.view_copy", {{"size", std::vector<int64_t>{1, 6, 4, 4}}}, {1, 6, 4, 4}}},
      false);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_channel_shuffle"})) << all_lines(r);
  EXPECT_EQ(arg_i(b.g.nodes[0], "groups"), 3);
  expect_valid(b.g);
}

// dq -> view -> transpose -> contiguous -> view -> conv (no quantize between the shuffle and the
// conv): sink_dequantize moves the dq below the moves, so the shuffle runs on the int8 data and
// the conv is an int8 conv; the shuffle takes the quantization of the values it moves.
TEST(Fuse, ShuffleBeforeAConvStaysInt8) {
  Builder b;
  b.input("xq", DType::Int8, {1, 6, 4, 4});
  b.dq("xq", "x", 0.1, 2);  // 0
  std::string cur = "x";
  for (const MoveStep& m : shuffle_moves()) {  // 1..4
    const std::string out = "m" + std::to_string(b.g.nodes.size());
    b.value(out, DType::Float32, m.shape);
    b.node(m.op, {cur}, m.args, {out});
    cur = out;
  }
  b.per_channel_weight({4, 6, 1, 1}, {0.5f, 0.25f, 2.0f, 1.0f}, {0, 0, 0, 0});          // 5
  b.conv(cur, "wf", "", "y", {1, 4, 4, 4}, {{"padding", std::vector<int64_t>{0, 0}}});  // 6
  b.q("y", "yq", 0.2, -1);                                                              // 7
  b.output("yq");
  const PassReport sunk = sink_dequantize(b.g);
  EXPECT_EQ(sunk.lines, (std::vector<std::string>{
                            "moved dq (node 0) below aten.view_copy -> aten.transpose_copy.int -> "
                            "aten.clone -> aten.view_copy (node 1..4): they move the int8 values "
                            "of 'xq', 'm4' is dequantized after them"}));
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_channel_shuffle", "q8ta_conv2d"}))
      << all_lines(r);
  const Node& shuffle = b.g.nodes[0];
  EXPECT_EQ(shuffle.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(b.g.nodes[1].inputs.at(0), shuffle.outputs.at(0));
  EXPECT_EQ(arg_i(shuffle, "groups"), 2);
  EXPECT_EQ(arg_d(shuffle, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(shuffle, "output_zero_point"), 2);
  EXPECT_EQ(arg_d(b.g.nodes[1], "input_scale"), 0.1);
  expect_quant(b.g.value(shuffle.outputs[0]), 0.1, 2, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused aten.view_copy -> aten.transpose_copy.int -> aten.clone -> "
                       "aten.view_copy (node 0..3) into q8ta_channel_shuffle 'm4_int8' "
                       "(channel shuffle (groups 2))"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.convolution -> q (nodes 4, 6..7) into q8ta_conv2d "
                       "'yq' (activation none)"))
      << all_lines(r);
  expect_valid(b.g);
}

// The moved result read by two convs and a graph output: every reader gets a dequantize of its
// own (the convs fuse), the graph output stays the float result.
TEST(Fuse, SinkGivesEachReaderItsOwnDequantize) {
  Builder b = move_chain(
      {{"aten.permute_copy", {{"dims", std::vector<int64_t>{0, 1, 3, 2}}}, {1, 6, 4, 4}}}, false,
      false);
  b.per_channel_weight({4, 6, 1, 1}, {0.5f, 0.25f, 2.0f, 1.0f}, {0, 0, 0, 0});
  const Args pad0 = {{"padding", std::vector<int64_t>{0, 0}}};
  b.conv("m0", "wf", "", "y1", {1, 4, 4, 4}, pad0);
  b.q("y1", "y1q", 0.2, -1);
  b.conv("m0", "wf", "", "y2", {1, 4, 4, 4}, pad0);
  b.q("y2", "y2q", 0.3, 0);
  b.output("y1q");
  b.output("y2q");
  const PassReport sunk = sink_dequantize(b.g);
  EXPECT_EQ(sunk.lines.size(), 1u);
  EXPECT_NE(sunk.lines.at(0).find("(one dequantize per reader: 3)"), std::string::npos)
      << sunk.lines.at(0);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_permute", "q8ta_dequantize", "q8ta_conv2d",
                                                   "q8ta_conv2d"}))
      << all_lines(r);
  EXPECT_EQ(b.g.nodes[1].outputs, (std::vector<std::string>{"m0"}));  // the graph output
  EXPECT_EQ(arg_l(b.g.nodes[0], "dims"), (std::vector<int64_t>{0, 1, 3, 2}));
  expect_valid(b.g);
}

// A chain that ends in a quantize is left to fusion; a dequantize with nothing to move below
// stays.
TEST(Fuse, SinkLeavesQuantizedChainsAlone) {
  Builder b = move_chain(shuffle_moves(), false);
  EXPECT_TRUE(sink_dequantize(b.g).lines.empty());
  Builder c = conv_act_graph("", {}, 0.1, 2);
  EXPECT_TRUE(sink_dequantize(c.g).lines.empty());
}

// Permutes fold: a permute and its inverse are a view (identity here), one transpose is
// q8ta_permute over the 4-D sizes (a 3-D transpose padded with a leading 1).
TEST(Fuse, PermuteChainsBecomeOneOp) {
  {
    Builder b = move_chain(
        {{"aten.permute_copy", {{"dims", std::vector<int64_t>{0, 2, 3, 1}}}, {1, 4, 4, 6}},
         {"aten.permute", {{"dims", std::vector<int64_t>{0, -1, 1, 2}}}, {1, 6, 4, 4}}},
        true);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"identity"})) << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.permute_copy -> q -> dq -> aten.permute -> q "
                         "(node 0..5) into identity 'yq' (a view)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b;
    b.input("xq", DType::Int8, {6, 4, 5});
    b.dq("xq", "x", 0.1, 2);
    b.value("t", DType::Float32, {6, 5, 4});
    b.node("aten.transpose_copy.int", {"x"}, {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}}, {"t"});
    b.q("t", "yq", 0.1, 2);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_permute"})) << all_lines(r);
    EXPECT_EQ(arg_l(b.g.nodes[0], "dims"), (std::vector<int64_t>{0, 1, 3, 2}));
    expect_valid(b.g);
  }
}

// A quantize inside a chain with other parameters requantizes: the chain ends there (the op
// requantizes, checked for all 256 values) and the next one starts at its dequantize; a view
// never requantizes.
TEST(Fuse, RequantizingQuantizeSplitsAChain) {
  Builder b;
  b.input("xq", DType::Int8, {1, 6, 4, 4});
  b.dq("xq", "x", 0.1, 2);
  b.value("p", DType::Float32, {1, 4, 4, 6});
  b.node("aten.permute_copy", {"x"}, {{"dims", std::vector<int64_t>{0, 2, 3, 1}}}, {"p"});
  b.q("p", "pq", 0.08, -3);
  b.dq("pq", "pd", 0.08, -3);
  b.value("t", DType::Float32, {1, 4, 6, 4});
  b.node("aten.transpose_copy.int", {"pd"}, {{"dim0", int64_t{2}}, {"dim1", int64_t{3}}}, {"t"});
  b.q("t", "yq", 0.08, -3);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_permute", "q8ta_permute"}))
      << all_lines(r);
  EXPECT_EQ(arg_d(b.g.nodes[0], "input_scale"), 0.1);
  EXPECT_EQ(arg_d(b.g.nodes[0], "output_scale"), 0.08);
  EXPECT_EQ(arg_i(b.g.nodes[0], "output_zero_point"), -3);
  EXPECT_EQ(arg_d(b.g.nodes[1], "input_scale"), 0.08);
  EXPECT_EQ(arg_l(b.g.nodes[1], "dims"), (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.permute_copy -> q (node 0..2) into q8ta_permute 'pq' "
                       "(permute [0, 2, 3, 1])"))
      << all_lines(r);
  expect_valid(b.g);

  Builder v;
  v.input("xq", DType::Int8, {1, 6, 4, 4});
  v.dq("xq", "x", 0.1, 2);
  v.value("u", DType::Float32, {6, 1, 4, 4});
  v.node("aten.permute_copy", {"x"}, {{"dims", std::vector<int64_t>{1, 0, 2, 3}}}, {"u"});
  v.q("u", "yq", 0.05, 2);
  v.output("yq");
  // A permute that moves only a size-1 dim is a view: it requantizes in a q8ta_clamp after it.
  const PassReport rv = fuse_and_lower(v.g);
  ASSERT_EQ(ops_of(v.g), (std::vector<std::string>{"q8ta_view", "q8ta_clamp"})) << all_lines(rv);
  EXPECT_TRUE(has_line(rv,
                       "fused q (node 2) into q8ta_clamp 'yq' (requantizes the view "
                       "'u_int8': scale 0.1 zero_point 2 range -128..127 -> scale 0.05 "
                       "zero_point 2 range -128..127)"))
      << all_lines(rv);
  expect_valid(v.g);
}

// A 5-D transpose that is no channel shuffle stays an edge op, reported once for the chain and
// once per node kept beyond the device rank.
TEST(Fuse, MovementNoOpDoesIsReported) {
  Builder b = move_chain(
      {{"aten.view_copy", {{"size", std::vector<int64_t>{1, 2, 3, 4, 4}}}, {1, 2, 3, 4, 4}},
       {"aten.transpose_copy.int", {{"dim0", int64_t{1}}, {"dim1", int64_t{3}}}, {1, 4, 3, 2, 4}},
       {"aten.view_copy", {{"size", std::vector<int64_t>{1, 6, 4, 4}}}, {1, 6, 4, 4}}},
      false);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.view_copy -> aten.transpose_copy.int -> "
                       "aten.view_copy -> q (node 0..4) as a data-movement op: it moves "
                       "elements in a way no single backend op does (neither a view, a channel "
                       "shuffle nor a 4-D permute of [1, 6, 4, 4])"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "kept node 2 (aten.transpose_copy.int) as an edge op: value 'm0' has "
                       "rank 5 ([1, 2, 3, 4, 4]); device tensors are at most 4-D"))
      << all_lines(r);
  EXPECT_EQ(count_op(b.g, "aten.transpose_copy.int"), 1) << all_lines(r);
}

// Int8 moves (what sink_dequantize leaves) fuse the same way, with the quantization of what
// they move: a transpose is q8ta_permute, a permute of a unit dim is a view.
TEST(Fuse, Int8PermuteBecomesQ8taPermuteOrAView) {
  auto graph = [](const char* op, Args args, std::vector<int64_t> shape) {
    Builder b;
    b.input("x", DType::Float32, {1, 8, 3, 5});
    b.q("x", "xq", 0.1, 5);
    b.value("t", DType::Int8, shape);
    b.node(op, {"xq"}, std::move(args), {"t"});
    b.dq("t", "y", 0.1, 5);
    b.output("y");
    return b;
  };
  Builder b =
      graph("aten.transpose.int", {{"dim0", int64_t{2}}, {"dim1", int64_t{3}}}, {1, 8, 5, 3});
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g),
            (std::vector<std::string>{"q8ta_quantize", "q8ta_permute", "q8ta_dequantize"}))
      << all_lines(r);
  const Node& n = b.g.nodes[1];
  EXPECT_EQ(arg_l(n, "dims"), (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 5);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 5);
  expect_quant(b.g.value("t"), 0.1, 5, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused aten.transpose.int (node 1) into q8ta_permute 't' (permute "
                       "[0, 1, 3, 2])"))
      << all_lines(r);
  expect_valid(b.g);

  Builder v = graph("aten.permute", {{"dims", std::vector<int64_t>{1, 0, 2, 3}}}, {8, 1, 3, 5});
  const PassReport rv = fuse_and_lower(v.g);
  ASSERT_EQ(ops_of(v.g),
            (std::vector<std::string>{"q8ta_quantize", "q8ta_view", "q8ta_dequantize"}))
      << all_lines(rv);
  EXPECT_EQ(arg_i(v.g.nodes[1], "zero_point"), 5);
  expect_valid(v.g);
}

// An int8 chain no single op moves like is lowered node by node: the 4-D permute runs on the
// GPU, the 5-D moves stay edge ops.
TEST(Fuse, Int8ChainNoOpTakesLowersNodeByNode) {
  Builder b;
  b.input("x", DType::Float32, {1, 6, 4, 4});
  b.q("x", "xq", 0.1, 5);
  b.value("p", DType::Int8, {1, 4, 4, 6});
  b.node("aten.permute_copy", {"xq"}, {{"dims", std::vector<int64_t>{0, 2, 3, 1}}}, {"p"});
  b.value("v", DType::Int8, {1, 4, 4, 2, 3});
  b.node("aten.view_copy", {"p"}, {{"size", std::vector<int64_t>{1, 4, 4, 2, 3}}}, {"v"});
  b.value("t", DType::Int8, {1, 4, 4, 3, 2});
  b.node("aten.transpose_copy.int", {"v"}, {{"dim0", int64_t{3}}, {"dim1", int64_t{4}}}, {"t"});
  b.output("t");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: aten.permute_copy -> aten.view_copy -> "
                       "aten.transpose_copy.int (node 1..3) as a data-movement op: 't' has "
                       "rank 5 (device tensors are at most 4-D)"))
      << all_lines(r);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_quantize", "q8ta_permute",
                                                   "aten.view_copy", "aten.transpose_copy.int"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "lowered 2 node(s): 1 q8ta_permute, 1 q8ta_quantize")) << all_lines(r);
}

// ---- standalone int8 activations ---------------------------------------------------------------

// conv_act_graph (no activation, output yq quantized with `dq_scale`, `dq_zp` unless
// `conv_zp` says otherwise) -> dq (`dq_scale`, `dq_zp`) -> `act` -> q (`scale`, `zp`, quant_min
// `qmin`) -> hq.
Builder standalone_act_graph(const std::string& act, Args act_args, double dq_scale, int64_t dq_zp,
                             double scale, int64_t zp, int64_t qmin = -128,
                             std::optional<int64_t> conv_zp = std::nullopt) {
  Builder b = conv_act_graph("", {}, dq_scale, conv_zp.value_or(dq_zp));
  b.g.outputs.clear();
  b.dq("yq", "yf", dq_scale, dq_zp);  // 4
  b.value("a", DType::Float32, {1, 4, 4, 4});
  b.node(act, {"yf"}, std::move(act_args), {"a"});  // 5
  b.value("hq", DType::Int8, {1, 4, 4, 4});
  b.node(kQ, {"a"}, q_args(scale, zp, qmin, 127), {"hq"});  // 6
  b.output("hq");
  return b;
}

// q -> dq -> hardtanh(0, 6) -> q with the conv's own scale and zero point: the conv writes hq,
// clamped to [q(0), q(6)] = [-128, -8]; the dq / hardtanh / q nodes disappear.
TEST(Fuse, StandaloneRelu6JoinsTheConvEpilogue) {
  Builder b = standalone_act_graph("aten.hardtanh", {{"min_val", 0.0}, {"max_val", 6.0}}, 0.05,
                                   -128, 0.05, -128);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d"})) << all_lines(r);
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"hq"}));
  EXPECT_EQ(activation_of(g.nodes[0]), (std::pair<int64_t, int64_t>{-128, -8}));
  EXPECT_FALSE(g.has_value("yq"));
  expect_quant(g.value("hq"), 0.05, -128, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.hardtanh -> q (node 4..6) into the epilogue of "
                       "q8ta_conv2d: it writes 'hq', activation range -128..127 -> -128..-8"))
      << all_lines(r);
  expect_valid(g);
}

// relu and clamp, and two activations in a row; a q whose range starts at the zero point.
TEST(Fuse, StandaloneActivationRanges) {
  using R = std::pair<int64_t, int64_t>;
  auto range = [](const std::string& act, Args args, int64_t zp, int64_t qmin = -128) {
    Builder b = standalone_act_graph(act, std::move(args), 0.1, zp, 0.1, zp, qmin);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d"})) << all_lines(r);
    expect_valid(b.g);
    return b.g.nodes.empty() ? R{} : activation_of(b.g.nodes[0]);
  };
  EXPECT_EQ(range("aten.relu", {}, 3), R(3, 127));
  EXPECT_EQ(range("aten.clamp", {{"min", -0.5}, {"max", 0.45}}, 3), R(-2, 7));  // 4.5 -> 4 (even)
  EXPECT_EQ(range("aten.relu", {}, 3, 3), R(3, 127));
  EXPECT_EQ(range("aten.hardtanh", {}, -5), R(-15, 5));  // defaults -1, 1
}

// The add writes 0.3 / 0; dq -> relu -> q with the same parameters narrows its range to [0, 127].
TEST(Fuse, StandaloneReluJoinsTheAddEpilogue) {
  Builder b = add_graph({1, 4, 3, 3}, {1, 4, 3, 3}, {1, 4, 3, 3});
  b.g.outputs.clear();
  b.dq("yq", "yf", 0.3, 0);
  b.value("rr", DType::Float32, {1, 4, 3, 3});
  b.node("aten.relu", {"yf"}, {}, {"rr"});
  b.q("rr", "rq", 0.3, 0);
  b.output("rq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_add"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"rq"}));
  EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{0, 127}));
  expect_valid(b.g);
}

// What keeps a standalone activation out of the epilogue, each with its report line.
TEST(Fuse, StandaloneActivationThatCannotJoinTheEpilogue) {
  {  // the q requantizes
    Builder b = standalone_act_graph("aten.relu", {}, 0.05, -128, 0.1, -128);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.relu -> q (node 4..6) as the epilogue of "
                         "q8ta_conv2d: the q (scale 0.1 zero_point -128 range -128..127) "
                         "requantizes (the dq is scale 0.05 zero_point -128 range -128..127)"))
        << all_lines(r);
  }
  {  // the dq reads the conv's output with other parameters
    Builder b = standalone_act_graph("aten.relu", {}, 0.1, 0, 0.1, 0, -128, -128);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.relu -> q (node 4..6) as the epilogue of "
                         "q8ta_conv2d: the dq (scale 0.1 zero_point 0 range -128..127) reads "
                         "'yq' with other parameters than it was written with (scale 0.1 "
                         "zero_point -128 range -128..127)"))
        << all_lines(r);
  }
  {  // the conv output is also a graph output
    Builder b = standalone_act_graph("aten.relu", {}, 0.05, -128, 0.05, -128);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.relu -> q (node 4..6) as the epilogue of "
                         "q8ta_conv2d: 'yq' is a graph output"))
        << all_lines(r);
  }
}

// A standalone activation that cannot join an epilogue becomes q8ta_clamp: requantizing, with
// the range for which its arithmetic equals the chain on all 256 int8 inputs.
TEST(Fuse, StandaloneActivationBecomesQ8taClamp) {
  {  // the q requantizes: after the conv's own epilogue
    Builder b = standalone_act_graph("aten.hardtanh", {{"min_val", 0.0}, {"max_val", 6.0}}, 0.05,
                                     -128, 0.1, -20);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_clamp"})) << all_lines(r);
    const Node& n = b.g.nodes[1];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"hq"}));
    EXPECT_EQ(arg_d(n, "input_scale"), 0.05);
    EXPECT_EQ(arg_i(n, "input_zero_point"), -128);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -20);
    // The conv writes 0 .. 12.75: 0 -> -20, 6 -> 40.
    EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-20, 40}));
    expect_quant(b.g.value("hq"), 0.1, -20, -128, 127);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.hardtanh -> q (node 4..6) into q8ta_clamp 'hq' "
                         "(activation range -20..40)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // nothing fused writes the dequantized value (a graph input), relu then clamp
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 2, 2});
    b.dq("xq", "x", 0.1, 0);
    b.value("rr", DType::Float32, {1, 4, 2, 2});
    b.node("aten.relu", {"x"}, {}, {"rr"});
    b.value("cc", DType::Float32, {1, 4, 2, 2});
    b.node("aten.clamp", {"rr"}, {{"max", 2.0}}, {"cc"});
    b.q("cc", "rq", 0.05, 3);
    b.output("rq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_clamp"})) << all_lines(r);
    EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{3, 43}));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.relu -> aten.clamp -> q (node 0..3) into "
                         "q8ta_clamp 'rq' (activation range 3..43)"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// ---- smooth activations by table (q8ta_lut) ----------------------------------------------------

// xq [1, 3, 5, 7] -> dq (in_s, in_zp) -> `op` (`args`) [-> relu] -> q (out_s, out_zp, range)
// -> yq.
Builder lut_graph(const std::string& op, Args args, double in_s, int64_t in_zp, double out_s,
                  int64_t out_zp, bool relu = false, int64_t qmin = -128, int64_t qmax = 127) {
  Builder b;
  const std::vector<int64_t> shape = {1, 3, 5, 7};
  b.input("xq", DType::Int8, shape);
  b.dq("xq", "x", in_s, in_zp);  // 0
  b.value("a", DType::Float32, shape);
  b.node(op, {"x"}, std::move(args), {"a"});  // 1
  std::string last = "a";
  if (relu) {
    b.value("r", DType::Float32, shape);
    b.node("aten.relu", {"a"}, {}, {"r"});  // 2
    last = "r";
  }
  b.value("yq", DType::Int8, shape);
  b.node(kQ, {last}, q_args(out_s, out_zp, qmin, qmax), {"yq"});
  b.output("yq");
  return b;
}

// The int8 table of the fused graph's constant `name`.
std::vector<int8_t> table_of(const Graph& g, const std::string& name) {
  const Value& v = g.value(name);
  EXPECT_EQ(v.dtype, DType::Int8);
  EXPECT_EQ(v.shape, (std::vector<int64_t>{256}));
  EXPECT_TRUE(v.data.has_value()) << name;
  return v.data ? std::vector<int8_t>(v.data->begin(), v.data->end()) : std::vector<int8_t>{};
}

// Every table entry the compiler wrote equals the test's own reference (LutReference.h).
void expect_table(const std::vector<int8_t>& got, const std::array<int8_t, 256>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), 256u) << what;
  for (int v = -128; v <= 127; ++v) {
    EXPECT_EQ(got[static_cast<size_t>(v + 128)], want[static_cast<size_t>(v + 128)])
        << what << ": int8 input " << v;
  }
}

struct TableOp {
  const char* op;
  Args args;
  vkd::testing::RefActivation f;
  double in_s;
  int64_t in_zp;
  double out_s;
  int64_t out_zp;
};

// Each smooth activation between int8 tensors becomes one q8ta_lut whose 256-entry table is the
// chain dq -> op -> q, entry for entry (computed independently by the test), with the
// quantization of both ends; the report names the table and the outputs' range.
TEST(Fuse, SmoothActivationsBecomeQ8taLutWithTheChainsTable) {
  using vkd::testing::RefAct;
  const TableOp cases[] = {
      {"aten.hardswish", {}, {RefAct::Hardswish, "hardswish"}, 0.03225, -4, 0.0186, -108},
      {"aten.hardsigmoid", {}, {RefAct::Hardsigmoid, "hardsigmoid"}, 0.00697, 3, 1.0 / 256, -128},
      {"aten.sigmoid", {}, {RefAct::Sigmoid, "sigmoid"}, 0.05, 0, 1.0 / 256, -128},
      {"aten.tanh", {}, {RefAct::Tanh, "tanh"}, 0.031, 5, 2.0 / 256, 0},
      {"aten.silu", {}, {RefAct::Silu, "silu"}, 0.06, -10, 0.03, -100},
      {"aten.gelu", {}, {RefAct::GeluErf, "gelu"}, 0.05, 7, 0.04, -90},
      {"aten.gelu",
       {{"approximate", std::string("tanh")}},
       {RefAct::GeluTanh, "gelu_tanh"},
       0.05,
       7,
       0.04,
       -90},
      {"aten.elu",
       {{"alpha", 0.5}, {"scale", 1.25}, {"input_scale", 0.75}},
       {RefAct::Elu, "elu", 0.5, 1.25, 0.75},
       0.04,
       20,
       0.03,
       10},
      {"aten.leaky_relu",
       {{"negative_slope", 0.2}},
       {RefAct::LeakyRelu, "leaky_relu", 0.2},
       0.05,
       -3,
       0.04,
       2},
  };
  for (const TableOp& t : cases) {
    Builder b = lut_graph(t.op, t.args, t.in_s, t.in_zp, t.out_s, t.out_zp);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_lut"})) << t.f.name << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "yq_table"})) << t.f.name;
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"})) << t.f.name;
    EXPECT_EQ(arg_d(n, "input_scale"), t.in_s);
    EXPECT_EQ(arg_i(n, "input_zero_point"), t.in_zp);
    EXPECT_EQ(arg_d(n, "output_scale"), t.out_s);
    EXPECT_EQ(arg_i(n, "output_zero_point"), t.out_zp);
    const auto want =
        vkd::testing::ref_lut_table(t.f, {static_cast<float>(t.in_s), static_cast<int>(t.in_zp)},
                                    {static_cast<float>(t.out_s), static_cast<int>(t.out_zp)});
    const std::vector<int8_t> got = table_of(b.g, "yq_table");
    expect_table(got, want, t.f.name);
    const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
    EXPECT_TRUE(has_line(r, std::string("fused dq -> ") + t.op +
                                " -> q (node 0..2) into "
                                "q8ta_lut 'yq' (table 'yq_table', outputs " +
                                std::to_string(*lo) + ".." + std::to_string(*hi) + ")"))
        << all_lines(r);
    expect_quant(b.g.value("yq"), t.out_s, t.out_zp, -128, 127);
    EXPECT_EQ(b.g.value("xq").dtype, DType::Int8x4);
    expect_valid(b.g);
  }
}

// A relu after the activation and a narrowed quantize range are part of the table: relu then
// quantize = max(quantize, the zero point), then the range's clamp.
TEST(Fuse, LutTableIncludesATrailingReluAndTheQuantizeRange) {
  Builder b = lut_graph("aten.silu", {}, 0.06, -10, 0.03, -100, true, -110, 100);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_lut"})) << all_lines(r);
  auto want = vkd::testing::ref_lut_table({vkd::testing::RefAct::Silu, "silu"}, {0.06f, -10},
                                          {0.03f, -100, -110, 100});
  for (int8_t& v : want) v = std::max<int8_t>(v, -100);
  expect_table(table_of(b.g, "yq_table"), want, "silu -> relu");
  expect_quant(b.g.value("yq"), 0.03, -100, -110, 100);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.silu -> aten.relu -> q (node 0..3) into q8ta_lut "
                       "'yq' (table 'yq_table', outputs -100.." +
                           std::to_string(*std::max_element(want.begin(), want.end())) + ")"))
      << all_lines(r);
  expect_valid(b.g);
}

// MobileNetV3's pattern: a conv's requantized output, dequantized into hardswish and quantized
// again: the conv writes yq, q8ta_lut reads it.
TEST(Fuse, HardswishAfterAConvReadsTheConvsInt8Output) {
  Builder b = standalone_act_graph("aten.hardswish", {}, 0.05, -20, 0.04, -100);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_lut"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[1].inputs, (std::vector<std::string>{"yq", "hq_table"}));
  expect_table(table_of(b.g, "hq_table"),
               vkd::testing::ref_lut_table({vkd::testing::RefAct::Hardswish, "hardswish"},
                                           {0.05f, -20}, {0.04f, -100}),
               "hardswish");
  expect_valid(b.g);
}

// Without a quantize after it the activation is a float op: no backend op, left to the host.
TEST(Fuse, FloatSmoothActivationIsNotFused) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 5, 7});
  b.dq("xq", "x", 0.05, 0);
  b.value("g", DType::Float32, {1, 3, 5, 7});
  b.node("aten.gelu", {"x"}, {{"approximate", std::string("none")}}, {"g"});
  b.output("g");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_dequantize", "aten.gelu"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.gelu (node 0..1) as q8ta_lut: 'g' is a graph "
                       "output, not quantized (q8ta_lut has int8 output only)"))
      << all_lines(r);
}

// ---- softmax ------------------------------------------------------------------------------------

// xq [2, 3, 10] -> dq (0.1, 3) -> `op` (dim `dim`) [-> q (1/256, -128) -> yq].
Builder softmax_graph(const std::string& op, int64_t dim, bool quantized) {
  Builder b;
  const std::vector<int64_t> shape = {2, 3, 10};
  b.input("xq", DType::Int8, shape);
  b.dq("xq", "x", 0.1, 3);
  b.value("s", DType::Float32, shape);
  Args args = {{"dim", dim}};
  if (op == "aten._softmax" || op == "aten._log_softmax") args["half_to_float"] = false;
  b.node(op, {"x"}, args, {"s"});
  if (quantized) {
    b.q("s", "yq", 1.0 / 256, -128);
    b.output("yq");
  } else {
    b.output("s");
  }
  return b;
}

// Followed by a quantize: q8ta_softmax writes the int8 output; alone: q8ta_softmax_dq writes the
// float one; log_softmax sets `log`; the .int forms fuse the same way.
TEST(Fuse, SoftmaxOverTheLastDimFuses) {
  {
    Builder b = softmax_graph("aten._softmax", -1, true);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_softmax"})) << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "input_zero_point"), 3);
    EXPECT_EQ(std::get<bool>(n.args.at("log")), false);
    EXPECT_EQ(arg_d(n, "output_scale"), 1.0 / 256);
    EXPECT_EQ(arg_i(n, "output_zero_point"), -128);
    expect_quant(b.g.value("yq"), 1.0 / 256, -128, -128, 127);
    EXPECT_TRUE(has_line(r, "fused dq -> aten._softmax -> q (node 0..2) into q8ta_softmax 'yq'"))
        << all_lines(r);
    expect_valid(b.g);
  }
  for (const char* op : {"aten._log_softmax", "aten.log_softmax.int", "aten.softmax.int"}) {
    Builder b = softmax_graph(op, 2, false);
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_softmax_dq"})) << op << all_lines(r);
    const Node& n = b.g.nodes[0];
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"s"}));
    EXPECT_EQ(std::get<bool>(n.args.at("log")), std::string(op).find("log") != std::string::npos);
    EXPECT_EQ(b.g.value("s").dtype, DType::Float32);
    EXPECT_TRUE(has_line(r, std::string("fused dq -> ") + op +
                                " (node 0..1) into "
                                "q8ta_softmax_dq 's'"))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// Another dim than the last stays a host op; a quantize into a narrowed range is not folded in
// (the kernel clamps to the int8 range): the float variant, then q8ta_quantize.
TEST(Fuse, SoftmaxLimits) {
  {
    Builder b = softmax_graph("aten._softmax", 1, false);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_dequantize", "aten._softmax"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten._softmax (node 0..1) as q8ta_softmax_dq: dim "
                         "1 is not the last dim of a rank-3 input (only the last dim is "
                         "supported)"))
        << all_lines(r);
  }
  {
    Builder b = softmax_graph("aten._softmax", -1, false);
    b.g.outputs.clear();
    b.value("yq", DType::Int8, {2, 3, 10});
    b.node(kQ, {"s"}, q_args(1.0 / 256, -128, -128, 100), {"yq"});
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_softmax_dq", "q8ta_quantize"}))
        << all_lines(r);
    expect_valid(b.g);
  }
}

// ---- upsampling -------------------------------------------------------------------------------

// dq -> upsample -> q with `op` and `args` on a [1, 3, 4, 5] input, output `out_shape`.
Builder upsample_graph(const std::string& op, Args args, std::vector<int64_t> out_shape,
                       double out_scale, int64_t out_zp) {
  Builder b;
  b.input("xq", DType::Int8, {1, 3, 4, 5});
  b.dq("xq", "x", 0.05, -7);
  b.value("u", DType::Float32, std::move(out_shape));
  b.node(op, {"x"}, std::move(args), {"u"});
  b.q("u", "yq", out_scale, out_zp);
  b.output("yq");
  return b;
}

TEST(Fuse, NearestUpsampleWithScaleFactorsMovesBytes) {
  Builder b =
      upsample_graph("aten.upsample_nearest2d.vec",
                     {{"output_size", NoneArg{}}, {"scale_factors", std::vector<double>{2.0, 3.0}}},
                     {1, 3, 8, 15}, 0.05, -7);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(b.g.nodes.size(), 1u) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_upsample_nearest2d");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_names(n),
            (std::vector<std::string>{"input_scale", "input_zero_point", "output_scale",
                                      "output_zero_point", "scales_h", "scales_w"}));
  EXPECT_EQ(arg_d(n, "scales_h"), 2.0);
  EXPECT_EQ(arg_d(n, "scales_w"), 3.0);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -7);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.upsample_nearest2d.vec -> q (node 0..2) into "
            "q8ta_upsample_nearest2d 'yq' (bytes moved)");
  expect_quant(b.g.value("yq"), 0.05, -7, -128, 127);
  expect_valid(b.g);
}

// The default overload with an output size: no scale reaches the kernel (0 = none).
TEST(Fuse, BilinearUpsampleWithOutputSizeRequantizes) {
  Builder b = upsample_graph("aten.upsample_bilinear2d",
                             {{"output_size", std::vector<int64_t>{7, 9}}, {"align_corners", true}},
                             {1, 3, 7, 9}, 0.04, 3);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(b.g.nodes.size(), 1u) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.op, "q8ta_upsample_bilinear2d");
  EXPECT_EQ(std::get<bool>(n.args.at("align_corners")), true);
  EXPECT_EQ(arg_d(n, "scales_h"), 0.0);
  EXPECT_EQ(arg_d(n, "scales_w"), 0.0);
  EXPECT_EQ(arg_d(n, "input_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "input_zero_point"), -7);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.04);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.upsample_bilinear2d -> q (node 0..2) into "
            "q8ta_upsample_bilinear2d 'yq' (requantized)");
  expect_valid(b.g);
}

TEST(Fuse, UpsampleLimits) {
  {  // an activation after it
    Builder b;
    b.input("xq", DType::Int8, {1, 3, 4, 5});
    b.dq("xq", "x", 0.05, -7);
    b.value("u", DType::Float32, {1, 3, 8, 10});
    b.node("aten.upsample_bilinear2d.vec", {"x"},
           {{"output_size", std::vector<int64_t>{8, 10}},
            {"align_corners", false},
            {"scale_factors", NoneArg{}}},
           {"u"});
    b.value("r", DType::Float32, {1, 3, 8, 10});
    b.node("aten.relu", {"u"}, {}, {"r"});
    b.q("r", "yq", 0.05, -128);
    b.output("yq");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.upsample_bilinear2d.vec -> aten.relu -> q "
                         "(node 0..3) as q8ta_upsample_bilinear2d: an activation follows "
                         "(q8ta_upsample_bilinear2d fuses none)"))
        << all_lines(r);
  }
  {  // a float output
    Builder b;
    b.input("xq", DType::Int8, {1, 3, 4, 5});
    b.dq("xq", "x", 0.05, -7);
    b.value("u", DType::Float32, {1, 3, 8, 10});
    b.node("aten.upsample_nearest2d", {"x"}, {{"output_size", std::vector<int64_t>{8, 10}}}, {"u"});
    b.output("u");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.upsample_nearest2d (node 0..1) as "
                         "q8ta_upsample_nearest2d: 'u' is a graph output, not quantized "
                         "(q8ta_upsample_nearest2d has no float-output variant)"))
        << all_lines(r);
  }
  {  // a quantize into a narrowed range
    Builder b =
        upsample_graph("aten.upsample_nearest2d", {{"output_size", std::vector<int64_t>{8, 10}}},
                       {1, 3, 8, 10}, 0.05, -7);
    b.g.nodes[2].args = q_args(0.05, -7, -100, 100);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.upsample_nearest2d -> q (node 0..2) as "
                         "q8ta_upsample_nearest2d: output range -100..100 is not the full "
                         "int8 range"))
        << all_lines(r);
  }
}

// ---- cat and the splits ------------------------------------------------------------------------

// dq(a), dq(b), dq(c) -> aten.cat (dim 1) -> q: the inputs with quantizations of their own.
Builder cat_graph(int64_t dim = 1) {
  Builder b;
  b.input("aq", DType::Int8, {1, 3, 4, 4});
  b.input("bq", DType::Int8, {1, 5, 4, 4});
  b.input("cq", DType::Int8, {1, 2, 4, 4});
  b.dq("aq", "a", 0.1, -3);
  b.dq("bq", "b", 0.05, 7);
  b.dq("cq", "c", 0.1, -3);
  b.value("y", DType::Float32, {1, 10, 4, 4});
  b.node("aten.cat", {"a", "b", "c"}, {{"dim", dim}}, {"y"});
  b.q("y", "yq", 0.1, -3);
  b.output("yq");
  return b;
}

TEST(Fuse, CatBecomesQ8taCat) {
  Builder b = cat_graph(-3);
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_cat"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"aq", "bq", "cq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_i(n, "dim"), 1);  // -3 of rank 4
  EXPECT_EQ(std::get<std::vector<double>>(n.args.at("input_scales")),
            (std::vector<double>{0.1, 0.05, 0.1}));
  EXPECT_EQ(arg_l(n, "input_zero_points"), (std::vector<int64_t>{-3, 7, -3}));
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -3);
  EXPECT_EQ(arg_i(n, "quant_min"), -128);
  EXPECT_EQ(arg_i(n, "quant_max"), 127);
  expect_quant(b.g.value("bq"), 0.05, 7, -128, 127);
  expect_quant(b.g.value("yq"), 0.1, -3, -128, 127);
  EXPECT_EQ(b.g.value("aq").dtype, DType::Int8x4);
  EXPECT_FALSE(b.g.has_value("y"));
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq, dq -> aten.cat -> q (node 0..4) into q8ta_cat 'yq' "
                       "(3 inputs along dim 1)"))
      << all_lines(r);
  expect_valid(b.g);
}

TEST(Fuse, CatThatCannotFuseSaysWhy) {
  {  // an input that is no dequantized activation
    Builder b = cat_graph();
    b.input("f", DType::Float32, {1, 2, 4, 4});
    b.g.nodes[3].inputs[2] = "f";
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.cat -> q (nodes 0..1, 3..4) as q8ta_cat: "
                         "'f' is not dequantized (a graph input)"))
        << all_lines(r);
  }
  {  // an activation after the cat
    Builder b = cat_graph();
    b.value("r", DType::Float32, {1, 10, 4, 4});
    b.node("aten.relu", {"y"}, {}, {"r"});
    b.g.nodes[4].inputs[0] = "r";  // the q now quantizes the relu
    std::swap(b.g.nodes[4], b.g.nodes[5]);
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq, dq -> aten.cat -> aten.relu -> q (node 0..5) as "
                         "q8ta_cat: an activation follows (it fuses none)"))
        << all_lines(r);
  }
  {  // a dequantized input also read elsewhere
    Builder b = cat_graph();
    b.output("b");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq, dq -> aten.cat -> q (node 0..4) as q8ta_cat: "
                         "'b' is a graph output"))
        << all_lines(r);
  }
}

// dq -> aten.chunk (2, dim 1) of [1, 10, 3, 3] -> q per piece, each with its own quantization;
// or a split whose middle output nobody reads.
TEST(Fuse, SplitsBecomeOneQ8taSlicePerOutput) {
  {
    Builder b;
    b.input("xq", DType::Int8, {1, 10, 3, 3});
    b.dq("xq", "x", 0.2, 4);
    b.value("p", DType::Float32, {1, 5, 3, 3});
    b.value("s", DType::Float32, {1, 5, 3, 3});
    b.node("aten.chunk", {"x"}, {{"chunks", int64_t{2}}, {"dim", int64_t{1}}}, {"p", "s"});
    b.q("p", "pq", 0.2, 4);
    b.q("s", "sq", 0.4, -1);
    b.output("pq");
    b.output("sq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice", "q8ta_slice"})) << all_lines(r);
    for (size_t k = 0; k < 2; ++k) {
      const Node& n = b.g.nodes[k];
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq"}));
      EXPECT_EQ(arg_i(n, "dim"), 1);
      EXPECT_EQ(arg_i(n, "start"), k == 0 ? 0 : 5);
      EXPECT_EQ(arg_i(n, "step"), 1);
      EXPECT_EQ(arg_d(n, "input_scale"), 0.2);
      EXPECT_EQ(arg_d(n, "output_scale"), k == 0 ? 0.2 : 0.4);
    }
    EXPECT_EQ(b.g.nodes[1].outputs, (std::vector<std::string>{"sq"}));
    expect_quant(b.g.value("sq"), 0.4, -1, -128, 127);
    EXPECT_FALSE(b.g.has_value("x"));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.chunk -> q (node 0..2) into q8ta_slice 'pq' "
                         "(output 0 of 2: dim 1, 5 from index 0)"))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.chunk -> q (node 3) into q8ta_slice 'sq' "
                         "(output 1 of 2: dim 1, 5 from index 5)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {
    Builder b;
    b.input("xq", DType::Int8, {2, 7, 5});
    b.dq("xq", "x", 0.2, 4);
    b.value("s0", DType::Float32, {2, 2, 5});
    b.value("s1", DType::Float32, {2, 3, 5});
    b.value("s2", DType::Float32, {2, 2, 5});
    b.node("aten.split_with_sizes_copy", {"x"},
           {{"split_sizes", std::vector<int64_t>{2, 3, 2}}, {"dim", int64_t{-2}}},
           {"s0", "s1", "s2"});
    b.q("s2", "s2q", 0.2, 4);
    b.output("s2q");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice"})) << all_lines(r);
    EXPECT_EQ(arg_i(b.g.nodes[0], "start"), 5);
    EXPECT_FALSE(b.g.has_value("s0"));
    EXPECT_FALSE(b.g.has_value("s1"));
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.split_with_sizes_copy -> q (node 0..2) into "
                         "q8ta_slice 's2q' (output 2 of 3: dim 1, 2 from index 5)"))
        << all_lines(r);
    expect_valid(b.g);
  }
  {  // slice_copy with a negative start and a step
    Builder b;
    b.input("xq", DType::Int8, {1, 4, 9});
    b.dq("xq", "x", 0.2, 4);
    b.value("s", DType::Float32, {1, 4, 3});
    b.node("aten.slice_copy.Tensor", {"x"},
           {{"dim", int64_t{2}}, {"start", int64_t{-7}}, {"end", NoneArg{}}, {"step", int64_t{3}}},
           {"s"});
    b.q("s", "sq", 0.2, 4);
    b.output("sq");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice"})) << all_lines(r);
    EXPECT_EQ(arg_i(b.g.nodes[0], "start"), 2);
    EXPECT_EQ(arg_i(b.g.nodes[0], "step"), 3);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.slice_copy.Tensor -> q (node 0..2) into "
                         "q8ta_slice 'sq' (output 0 of 1: dim 2, 3 from index 2, step 3)"))
        << all_lines(r);
  }
}

// x[:, :, 1:-1, 1:-1] between a dq and a q is two slice_copy nodes: one q8ta_slice per dim
// (the first into a new int8 value, copied), and slices along one dim compose into one.
TEST(Fuse, ChainsOfCutsBecomeOneQ8taSlicePerDim) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 9, 8});
  b.dq("xq", "x", 0.2, 4, -127, 127);
  auto slice = [&](const std::string& in, const std::string& out, int64_t dim, int64_t start,
                   int64_t end, int64_t step, std::vector<int64_t> shape) {
    b.value(out, DType::Float32, std::move(shape));
    b.node("aten.slice_copy.Tensor", {in},
           {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}}, {out});
  };
  slice("x", "h", 2, 1, -1, 1, {1, 4, 7, 8});
  slice("h", "w", 3, 1, -1, 1, {1, 4, 7, 6});
  slice("w", "w2", 3, 1, 6, 2, {1, 4, 7, 3});  // widths 2, 4, 6 of the input
  b.q("w2", "yq", 0.1, 0);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_slice", "q8ta_slice"})) << all_lines(r);
  const Node& rows = b.g.nodes[0];
  const Node& cols = b.g.nodes[1];
  EXPECT_EQ(rows.inputs, (std::vector<std::string>{"xq"}));
  EXPECT_EQ(cols.inputs, rows.outputs);
  EXPECT_EQ(b.g.value(rows.outputs[0]).shape, (std::vector<int64_t>{1, 4, 7, 8}));
  EXPECT_EQ((std::vector<int64_t>{arg_i(rows, "dim"), arg_i(rows, "start"), arg_i(rows, "step")}),
            (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ((std::vector<int64_t>{arg_i(cols, "dim"), arg_i(cols, "start"), arg_i(cols, "step")}),
            (std::vector<int64_t>{3, 2, 2}));
  // The copy keeps the input's scale and zero point over the full range; the last requantizes.
  expect_quant(b.g.value(rows.outputs[0]), 0.2, 4, -128, 127);
  EXPECT_EQ(arg_d(cols, "output_scale"), 0.1);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.slice_copy.Tensor -> aten.slice_copy.Tensor -> "
                       "aten.slice_copy.Tensor -> q (node 0..2) into q8ta_slice 'w2_run0' "
                       "(output 0 of 1: dim 2, 7 from index 1)"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused dq -> aten.slice_copy.Tensor -> aten.slice_copy.Tensor -> "
                       "aten.slice_copy.Tensor -> q (node 3..4) into q8ta_slice 'yq' "
                       "(output 0 of 1: dim 3, 3 from index 2, step 2)"))
      << all_lines(r);
  expect_valid(b.g);
}

TEST(Fuse, SplitWithAnOutputNoQuantizeReadsIsNotFused) {
  Builder b;
  b.input("xq", DType::Int8, {1, 6, 2, 2});
  b.dq("xq", "x", 0.2, 4);
  b.value("p", DType::Float32, {1, 3, 2, 2});
  b.value("s", DType::Float32, {1, 3, 2, 2});
  b.node("aten.split_copy.Tensor", {"x"}, {{"split_size", int64_t{3}}, {"dim", int64_t{1}}},
         {"p", "s"});
  b.q("p", "pq", 0.2, 4);
  b.value("r", DType::Float32, {1, 3, 2, 2});
  b.node("aten.relu", {"s"}, {}, {"r"});
  b.output("pq");
  b.output("r");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(count_op(b.g, "q8ta_slice"), 0) << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.split_copy.Tensor -> ... (node 0..2) as "
                       "q8ta_slice: output 1: 's' feeds aten.relu (node 3), not "
                       "quantize_per_tensor"))
      << all_lines(r);
}

// ---- transposed convolution ------------------------------------------------------------------

// dq -> convolution(transposed, k3 s2 p1 op1, groups 2) over [1, 4, 3, 3] -> [1, 6, 6, 6] with a
// weight [4, 3, 3, 3] dequantized per tensor (scale 0.02) or per channel along `axis`, then
// `act` (may be "") and q.
Builder deconv_graph(bool per_channel, int64_t axis, const std::string& act) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 3, 3});
  b.dq("xq", "x", 0.1, 2);
  b.constant("w", DType::Int8, {4, 3, 3, 3}, ramp_i8(108));
  b.value("wf", DType::Float32, {4, 3, 3, 3});
  if (per_channel) {
    const std::vector<float> all = {0.5f, 0.25f, 2.0f, 1.0f};
    const int64_t n = axis == 1 ? 3 : 4;  // C_out / groups along 1, C_in along 0
    b.constant("ws", DType::Float32, {n},
               f32_bytes(std::vector<float>(all.begin(), all.begin() + n)));
    b.node(kDqChannel, {"w", "ws"},
           {{"axis", axis},
            {"quant_min", int64_t{-127}},
            {"quant_max", int64_t{127}},
            {"dtype", std::string("int8")}},
           {"wf"});
  } else {
    b.node(kDq, {"w"}, q_args(0.02, 0, -127, 127), {"wf"});
  }
  b.constant("b", DType::Float32, {6}, f32_bytes({0.5f, -1, 2, 0, 1, -2}));
  b.conv("x", "wf", "b", "y", {1, 6, 6, 6},
         {{"stride", std::vector<int64_t>{2, 2}},
          {"padding", std::vector<int64_t>{1, 1}},
          {"transposed", true},
          {"output_padding", std::vector<int64_t>{1, 1}},
          {"groups", int64_t{2}}});
  std::string last = "y";
  if (!act.empty()) {
    b.value("r", DType::Float32, {1, 6, 6, 6});
    b.node(act, {"y"}, {}, {"r"});
    last = "r";
  }
  b.q(last, "yq", 0.2, -3);
  b.output("yq");
  return b;
}

// The weight becomes q8ta_conv2d's [C_out, C_in / groups, KH, KW] (a new constant: the
// original goes), one scale per output channel, the relu the activation range.
TEST(Fuse, TransposedConvSwapsItsWeight) {
  Builder b = deconv_graph(false, 0, "aten.relu");
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv_transpose2d"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w_oihw", "w_scales", "b"}));
  EXPECT_EQ(arg_l(n, "stride"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(arg_l(n, "padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "output_padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_i(n, "groups"), 2);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-3, 127}));
  EXPECT_FALSE(g.has_value("w"));
  const Value& w = g.value("w_oihw");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{6, 2, 3, 3}));
  // out[co][i][t] = in[g * 2 + i][co - 3 g][t], in[c][o][t] = ramp(c * 27 + o * 9 + t).
  const std::vector<uint8_t> ramp = ramp_i8(108);
  for (int64_t co = 0; co < 6; ++co) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t t = 0; t < 9; ++t) {
        const int64_t grp = co / 3;
        EXPECT_EQ((*w.data)[static_cast<size_t>((co * 2 + i) * 9 + t)],
                  ramp[static_cast<size_t>(((grp * 2 + i) * 3 + co - 3 * grp) * 9 + t)])
            << co << " " << i << " " << t;
      }
    }
  }
  EXPECT_EQ(floats_of(g.value("w_scales")), std::vector<float>(6, 0.02f));
  EXPECT_EQ(r.lines.at(0),
            "fused dq -> aten.convolution -> aten.relu -> q (nodes 0, 2..4) into "
            "q8ta_conv_transpose2d 'yq' (activation relu)");
  expect_valid(g);
}

// Per-channel weights along axis 1 (C_out / groups scales) give each group's channels the same
// scales; along axis 0 (input channels) they cannot be folded into the output's.
TEST(Fuse, TransposedConvPerChannelScales) {
  {
    Builder b = deconv_graph(true, 1, "");
    const PassReport r = fuse_and_lower(b.g);
    ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv_transpose2d"})) << all_lines(r);
    EXPECT_EQ(floats_of(b.g.value("w_scales")),
              (std::vector<float>{0.5f, 0.25f, 2.0f, 0.5f, 0.25f, 2.0f}));
    expect_valid(b.g);
  }
  {
    Builder b = deconv_graph(true, 0, "");
    const PassReport r = fuse_and_lower(b.g);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.convolution -> q (nodes 0, 2..3) as "
                         "q8ta_conv_transpose2d: weight 'w' is quantized along axis 0, not 1 "
                         "(output channels)"))
        << all_lines(r);
  }
}

TEST(Fuse, TransposedConvWithoutAQuantizedOutputIsNotFused) {
  Builder b = deconv_graph(false, 0, "");
  b.g.nodes.pop_back();  // the q
  b.g.outputs = {"y"};
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.convolution (nodes 0, 2) as "
                       "q8ta_conv_transpose2d: 'y' is a graph output, not quantized "
                       "(q8ta_conv_transpose2d has no float-output variant)"))
      << all_lines(r);
}

// PyTorch 1.13's FX keeps ConvTranspose2d and its ReLU apart (q -> dq -> relu -> q): the relu
// joins the epilogue as it does a conv's.
TEST(Fuse, StandaloneReluJoinsTheTransposedConvEpilogue) {
  Builder b = deconv_graph(false, 0, "");
  b.g.outputs.clear();
  b.dq("yq", "yf", 0.2, -3);
  b.value("a", DType::Float32, {1, 6, 6, 6});
  b.node("aten.relu", {"yf"}, {}, {"a"});
  b.q("a", "hq", 0.2, -3);
  b.output("hq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv_transpose2d"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"hq"}));
  EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{-3, 127}));
  expect_valid(b.g);
}

}  // namespace

namespace {

// ---- a pixel shuffle in the convolution's epilogue ---------------------------------------------

// 0 weight dq, 1 dq, 2 conv 3x3 (4 -> c_out channels, `groups`) on [1, 4, 6, 5], 3 q (0.1, -5)
// 'cq', 4 dq (dq_scale, -5), 5 pixel_shuffle(2), 6 q (ps_scale, -5) 'yq'.
Builder conv_shuffle_graph(int64_t c_out, int64_t groups = 1, double dq_scale = 0.1,
                           double ps_scale = 0.1) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 6, 5});
  b.per_channel_weight({c_out, 4 / groups, 3, 3}, std::vector<float>(size_t(c_out), 0.25f),
                       std::vector<int32_t>(size_t(c_out), 0));
  b.constant("b", DType::Float32, {c_out}, f32_bytes(std::vector<float>(size_t(c_out), 0.5f)));
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "wf", "b", "y", {1, c_out, 6, 5}, {{"groups", groups}});
  b.q("y", "cq", 0.1, -5);
  b.dq("cq", "c", dq_scale, -5);
  b.value("p", DType::Float32, {1, c_out / 4, 12, 10});
  b.node("aten.pixel_shuffle", {"c"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.q("p", "yq", ps_scale, -5);
  b.output("yq");
  return b;
}

// A shuffle that moves the bytes of the conv's output becomes the conv's store.
TEST(Fuse, BytePixelShuffleAfterAConvJoinsItsEpilogue) {
  Builder b = conv_shuffle_graph(16);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_ps"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_i(n, "upscale_factor"), 2);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "output_zero_point"), -5);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
  EXPECT_EQ(n.origin, "node 2 (aten.convolution) fused into q8ta_conv2d_ps");
  EXPECT_FALSE(g.has_value("cq"));
  expect_quant(g.value("yq"), 0.1, -5, -128, 127);
  EXPECT_EQ(r.lines.at(1),
            "fused dq -> aten.pixel_shuffle -> q (node 4..6) into the epilogue of "
            "q8ta_conv2d 'cq': q8ta_conv2d_ps writes 'yq' pixel-shuffled "
            "(upscale 2)");
  expect_valid(g);
}

// Where the conv's store cannot do the shuffle, the report says why and the shuffle is its own
// op (q8ta_pixel_shuffle, requantizing where the qparams differ).
TEST(Fuse, PixelShuffleTheConvEpilogueCannotTakeIsItsOwnOp) {
  struct Case {
    Builder b;
    std::string why;
    bool epilogues = true;
  };
  Case cases[] = {
      {conv_shuffle_graph(8),
       "2 channels after the shuffle, not a multiple of 4: a packed word "
       "would hold channels of two sub-pixel phases"},
      {conv_shuffle_graph(16, 2),
       "groups 2: the shuffled store computes the channels in "
       "phase-major order, across groups"},
      {conv_shuffle_graph(16, 1, 0.1, 0.2),
       "only a shuffle that moves the bytes joins: input (scale 0.1 zero_point -5 range "
       "-128..127) and output (scale 0.2 zero_point -5 range -128..127) quantization differ"},
      {conv_shuffle_graph(16, 1, 0.2, 0.2),
       "the dq (scale 0.2 zero_point -5 range -128..127) reads 'cq' with other parameters than "
       "it was written with (scale 0.1 zero_point -5 range -128..127)"},
      {conv_shuffle_graph(16), "'cq' is a graph output"},
      {conv_shuffle_graph(16), "epilogue fusion is off (--no-fuse-epilogue)", false},
  };
  cases[4].b.output("cq");
  for (Case& c : cases) {
    FuseOptions options;
    options.fuse_epilogues = c.epilogues;
    const PassReport r = fuse_and_lower(c.b.g, options);
    EXPECT_EQ(ops_of(c.b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_pixel_shuffle"}))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq -> aten.pixel_shuffle -> q (node 4..6) into the "
                         "epilogue of q8ta_conv2d 'cq': " +
                             c.why))
        << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "fused dq -> aten.pixel_shuffle -> q (node 4..6) into "
                         "q8ta_pixel_shuffle 'yq'"))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// A linear's output rows are [..., M, N]: a shuffle of that tensor moves N along the width.
TEST(Fuse, PixelShuffleAfterALinearIsItsOwnOp) {
  Builder b;
  b.input("xq", DType::Int8, {1, 8, 2, 6});
  b.per_channel_weight({4, 6}, {0.5f, 0.25f, 0.125f, 0.0625f}, {0, 0, 0, 0});
  b.dq("xq", "x", 0.1, 2);
  b.value("y", DType::Float32, {1, 8, 2, 4});
  b.node("aten.linear", {"x", "wf"}, {}, {"y"});
  b.q("y", "lq", 0.2, 0);
  b.dq("lq", "l", 0.2, 0);
  b.value("p", DType::Float32, {1, 2, 4, 8});
  b.node("aten.pixel_shuffle", {"l"}, {{"upscale_factor", int64_t{2}}}, {"p"});
  b.q("p", "yq", 0.2, 0);
  b.output("yq");
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_linear", "q8ta_pixel_shuffle"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.pixel_shuffle -> q (node 4..6) into the "
                       "epilogue of q8ta_linear 'lq': q8ta_linear writes [..., M, N] rows: "
                       "its N is the shuffle's width, not its channels"))
      << all_lines(r);
}

}  // namespace

namespace {

// ---- a residual add in the convolution's / linear's epilogue ----------------------------------

// 0 weight dq, 1 dq, 2 conv 3x3 (4 -> 4 channels, `groups`) on xq [1, 4, 6, 5], 3 q (0.1, -5)
// 'cq', 4 dq 'c' (dq_scale, -5), 5 dq 'r' of `other` (0.2, 3; xq unless given), 6 add (c + r, or
// r + c with `conv_second`), 7 q (0.3, 1) 'yq'.
Builder conv_add_graph(int64_t groups = 1, double dq_scale = 0.1, bool conv_second = false,
                       std::vector<int64_t> other_shape = {}) {
  Builder b;
  b.input("xq", DType::Int8, {1, 4, 6, 5});
  std::string other = "xq";
  if (!other_shape.empty()) {
    b.input("oq", DType::Int8, other_shape);
    other = "oq";
  }
  b.per_channel_weight({4, 4 / groups, 3, 3}, {0.5f, 0.25f, 0.125f, 0.5f}, {0, 0, 0, 0});
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "wf", "", "y", {1, 4, 6, 5}, {{"groups", groups}});
  b.q("y", "cq", 0.1, -5);
  b.dq("cq", "c", dq_scale, -5);
  b.dq(other, "r", 0.2, 3);
  b.value("s", DType::Float32, {1, 4, 6, 5});
  b.node("aten.add.Tensor",
         conv_second ? std::vector<std::string>{"r", "c"} : std::vector<std::string>{"c", "r"}, {},
         {"s"});
  b.q("s", "yq", 0.3, 1);
  b.output("yq");
  return b;
}

// The conv's own output parameters move to conv_*, the add's become the op's output_* and
// activation range, and the other operand is read as the last input; either operand order.
TEST(Fuse, ResidualAddJoinsTheConvEpilogue) {
  for (bool conv_second : {false, true}) {
    Builder b = conv_add_graph(1, 0.1, conv_second);
    const PassReport r = fuse_and_lower(b.g);
    const Graph& g = b.g;
    ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_add"})) << all_lines(r);
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "cq_bias", "xq"}));
    EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
    EXPECT_EQ(arg_i(n, "upscale_factor"), 1);
    EXPECT_EQ(arg_d(n, "conv_scale"), 0.1);
    EXPECT_EQ(arg_i(n, "conv_zero_point"), -5);
    EXPECT_EQ(arg_i(n, "conv_activation_min"), -128);
    EXPECT_EQ(arg_i(n, "conv_activation_max"), 127);
    EXPECT_EQ(arg_d(n, "other_scale"), 0.2);
    EXPECT_EQ(arg_i(n, "other_zero_point"), 3);
    EXPECT_EQ(arg_d(n, "output_scale"), 0.3);
    EXPECT_EQ(arg_i(n, "output_zero_point"), 1);
    EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
    EXPECT_EQ(n.origin, "node 2 (aten.convolution) fused into q8ta_conv2d_add");
    EXPECT_FALSE(g.has_value("cq"));
    expect_quant(g.value("yq"), 0.3, 1, -128, 127);
    expect_quant(g.value("xq"), 0.1, 2, -128, 127);  // its first reader's (the conv's dq)
    const std::string nodes = conv_second ? "node 4..7" : "node 4..7";
    EXPECT_TRUE(has_line(r, std::string("fused dq, dq -> aten.add.Tensor -> q (") + nodes +
                                ") into the epilogue of q8ta_conv2d 'cq': q8ta_conv2d_add adds "
                                "'xq' and writes 'yq' (activation none)"))
        << all_lines(r);
    expect_valid(g);
  }
}

// A pixel shuffle, then the add: one q8ta_conv2d_add with upscale_factor 2 (refinenet_lite's
// upsampling stages).
TEST(Fuse, ShuffleThenAddJoinTheConvEpilogue) {
  Builder b = conv_shuffle_graph(16);
  b.g.outputs.clear();
  b.input("sq", DType::Int8, {1, 4, 12, 10});
  b.dq("yq", "yf", 0.1, -5);
  b.dq("sq", "sf", 0.05, 0);
  b.value("t", DType::Float32, {1, 4, 12, 10});
  b.node("aten.add.Tensor", {"yf", "sf"}, {}, {"t"});
  b.value("tr", DType::Float32, {1, 4, 12, 10});
  b.node("aten.relu", {"t"}, {}, {"tr"});
  b.q("tr", "tq", 0.2, -128);
  b.output("tq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_add"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b", "sq"}));
  EXPECT_EQ(arg_i(n, "upscale_factor"), 2);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));  // q(0) = -128
  EXPECT_EQ(n.origin, "node 2 (aten.convolution) fused into q8ta_conv2d_add");
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq -> aten.add.Tensor -> aten.relu -> q (node 7..11) into "
                       "the epilogue of q8ta_conv2d_ps 'yq': q8ta_conv2d_add adds 'sq' and "
                       "writes 'tq' (activation relu)"))
      << all_lines(r);
  expect_valid(b.g);
}

// A linear's output plus a tensor of its sizes: q8ta_linear_add.
TEST(Fuse, ResidualAddJoinsTheLinearEpilogue) {
  Builder b = linear_graph();
  b.g.outputs.clear();
  b.input("rq", DType::Int8, {2, 4});
  b.dq("yq", "yf", 0.2, -3);
  b.dq("rq", "rf", 0.4, 0);
  b.value("s", DType::Float32, {2, 4});
  b.node("aten.add.Tensor", {"rf", "yf"}, {}, {"s"});
  b.q("s", "sq", 0.5, 2);
  b.output("sq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_linear_add"})) << all_lines(r);
  const Node& n = b.g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "w", "w_scales", "b", "rq"}));
  EXPECT_EQ(arg_d(n, "linear_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "linear_zero_point"), -3);
  EXPECT_EQ(arg_d(n, "other_scale"), 0.4);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.5);
  EXPECT_EQ(n.origin, "node 2 (aten.linear) fused into q8ta_linear_add");
  EXPECT_TRUE(has_line(r,
                       "fused dq, dq -> aten.add.Tensor -> q (node 4..7) into the epilogue of "
                       "q8ta_linear 'yq': q8ta_linear_add adds 'rq' and writes 'sq' "
                       "(activation none)"))
      << all_lines(r);
  expect_valid(b.g);
}

// Where the conv's store cannot take the add, the report says why and the add is its own op.
TEST(Fuse, ResidualAddTheConvEpilogueCannotTakeIsItsOwnOp) {
  struct Case {
    Builder b;
    std::string why;
    bool epilogues = true;
  };
  Case cases[] = {
      {conv_add_graph(4), "a depthwise convolution (groups 4): its kernel's store adds nothing"},
      {conv_add_graph(1, 0.2),
       "the dq (scale 0.2 zero_point -5 range -128..127) reads 'cq' with other parameters than "
       "it was written with (scale 0.1 zero_point -5 range -128..127)"},
      {conv_add_graph(1, 0.1, false, {1, 4, 1, 1}),
       "'oq' [1, 4, 1, 1] is broadcast; the epilogue adds a tensor of the output's sizes "
       "[1, 4, 6, 5]"},
      {conv_add_graph(), "'cq' is a graph output"},
      {conv_add_graph(), "epilogue fusion is off (--no-fuse-epilogue)", false},
  };
  cases[3].b.output("cq");
  for (Case& c : cases) {
    FuseOptions options;
    options.fuse_epilogues = c.epilogues;
    const PassReport r = fuse_and_lower(c.b.g, options);
    EXPECT_EQ(ops_of(c.b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_add"})) << all_lines(r);
    EXPECT_TRUE(has_line(r,
                         "not fused: dq, dq -> aten.add.Tensor -> q (node 4..7) into the "
                         "epilogue of q8ta_conv2d 'cq': " +
                             c.why))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// x + x through one dequantize: the conv's output is both operands, so nothing is left to read.
TEST(Fuse, AddOfAConvOutputToItselfIsItsOwnOp) {
  Builder b = conv_add_graph();
  b.g.nodes[5] = b.g.nodes[4];  // a second dq of cq ...
  b.g.nodes[5].outputs = {"r"};
  b.g.nodes[6].inputs = {"c", "c"};  // ... unread: the add reads 'c' twice
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.add.Tensor -> q (nodes 4, 6..7) into the "
                       "epilogue of q8ta_conv2d 'cq': both operands are its output"))
      << all_lines(r);
  EXPECT_EQ(count_op(b.g, "q8ta_add"), 1) << all_lines(r);
}

// relu after the fused add (FX keeps it apart): it narrows the sum's activation range.
TEST(Fuse, StandaloneReluJoinsTheFusedAdd) {
  Builder b = conv_add_graph();
  b.g.outputs.clear();
  b.dq("yq", "yf", 0.3, 1);
  b.value("a", DType::Float32, {1, 4, 6, 5});
  b.node("aten.relu", {"yf"}, {}, {"a"});
  b.q("a", "hq", 0.3, 1);
  b.output("hq");
  const PassReport r = fuse_and_lower(b.g);
  ASSERT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_add"})) << all_lines(r);
  EXPECT_EQ(b.g.nodes[0].outputs, (std::vector<std::string>{"hq"}));
  EXPECT_EQ(activation_of(b.g.nodes[0]), (std::pair<int64_t, int64_t>{1, 127}));
  EXPECT_EQ(arg_i(b.g.nodes[0], "conv_activation_min"), -128);
  expect_valid(b.g);
}

// The graph's first quantize before a conv: 0 q 'xq' (0.1, 2) of the float input 'x'
// [1, c_in, 6, 5], 1 weight dq, 2 dq (dq_scale, 2), 3 conv k x k (c_in -> 4, `groups`, padding
// k / 2), 4 q (0.2, -5) 'yq'.
Builder quantized_input_conv_graph(double dq_scale = 0.1, int64_t c_in = 4, int64_t k = 3,
                                   int64_t groups = 1) {
  Builder b;
  b.input("x", DType::Float32, {1, c_in, 6, 5});
  b.q("x", "xq", 0.1, 2);
  b.per_channel_weight({4, c_in / groups, k, k}, {0.5f, 0.25f, 0.125f, 0.5f}, {0, 0, 0, 0});
  b.dq("xq", "xf", dq_scale, 2);
  b.conv("xf", "wf", "", "y", {1, 4, 6, 5},
         {{"padding", std::vector<int64_t>{k / 2, k / 2}}, {"groups", groups}});
  b.q("y", "yq", 0.2, -5);
  b.output("yq");
  return b;
}

// The quantize joins the conv's load: q8ta_conv2d_fq reads the float input, with the q's
// parameters and range as input_*.
TEST(Fuse, FirstQuantizeJoinsTheConvLoad) {
  Builder b = quantized_input_conv_graph();
  b.g.nodes[0].args["quant_min"] = int64_t{-100};
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_fq"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w", "w_scales", "yq_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_i(n, "input_quant_min"), -100);
  EXPECT_EQ(arg_i(n, "input_quant_max"), 127);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(n.origin, "node 3 (aten.convolution) fused into q8ta_conv2d_fq");
  EXPECT_FALSE(g.has_value("xq"));
  EXPECT_EQ(g.value("x").dtype, DType::Float32);
  EXPECT_TRUE(has_line(r,
                       "fused q (node 0) into the load of q8ta_conv2d 'yq': q8ta_conv2d_fq "
                       "reads 'x' (float32) and quantizes it on load"))
      << all_lines(r);
  expect_valid(g);
}

// Where the conv's load cannot take the quantize, the report says why and it is its own op.
TEST(Fuse, FirstQuantizeTheConvLoadCannotTakeIsItsOwnOp) {
  struct Case {
    Builder b;
    std::string into, why;
    bool epilogues = true;
  };
  const std::string into_conv = "into the load of q8ta_conv2d 'yq': ";
  Case cases[] = {
      {quantized_input_conv_graph(0.2), into_conv,
       "the dq (scale 0.2 zero_point 2 range -128..127) reads 'xq' with other parameters than "
       "it was written with (scale 0.1 zero_point 2 range -128..127)"},
      {quantized_input_conv_graph(), into_conv, "'xq' is a graph output"},
      {quantized_input_conv_graph(), into_conv,
       "'x' has 2 consumers (nodes 0, 5): the float input is read by other nodes too"},
      {quantized_input_conv_graph(), into_conv, "epilogue fusion is off (--no-fuse-epilogue)",
       false},
      // The last dequantize joined the conv's store first.
      {quantized_input_conv_graph(), "into the load of q8ta_conv2d_q_dq 'yf': ",
       "q8ta_conv2d_q_dq has no quantizing load (only q8ta_conv2d, a plain int8 output, has)"},
      // Convolutions whose int8 input takes a faster route than the direct kernel.
      {quantized_input_conv_graph(0.1, 8, 3), into_conv,
       "72 products per output (>= 64) run im2col + GEMM on int8, faster than the direct "
       "kernel"},
      {quantized_input_conv_graph(0.1, 4, 1), into_conv,
       "a 1x1 convolution runs the linear kernels on int8"},
      {quantized_input_conv_graph(0.1, 4, 3, 2), into_conv,
       "groups 2: the grouped / depthwise routes read int8 (only the direct kernel quantizes on "
       "load)"},
  };
  cases[1].b.output("xq");
  cases[2].b.value("r", DType::Float32, {1, 4, 6, 5});
  cases[2].b.node("aten.relu", {"x"}, {}, {"r"});
  cases[2].b.output("r");
  cases[4].b.g.outputs.clear();
  cases[4].b.dq("yq", "yf", 0.2, -5);
  cases[4].b.output("yf");
  for (Case& c : cases) {
    FuseOptions options;
    options.fuse_epilogues = c.epilogues;
    const PassReport r = fuse_and_lower(c.b.g, options);
    EXPECT_EQ(count_op(c.b.g, "q8ta_quantize"), 1) << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_fq"), 0) << all_lines(r);
    EXPECT_TRUE(has_line(r, "not fused: q (node 0) " + c.into + c.why)) << all_lines(r);
    expect_valid(c.b.g);
  }
}

// ---- a depthwise convolution and the 1x1 reading it, as one op ----------------------------------

// Options of depthwise_pointwise_graph.
struct DwPw {
  int64_t channels = 8;   // C of the depthwise
  int64_t pw_out = 4;     // C_out of the second convolution
  int64_t pw_kernel = 1;  // the second convolution's kernel (padding pw_kernel / 2)
  int64_t pw_stride = 1;
  double mid_dq_scale = 0.05;  // how the second convolution's dq reads 'mq' (written at 0.05)
  bool residual_add = false;   // 9 dq 'yq', 10 dq 'rq' (0.4, 0), 11 add, 12 q (0.5, 1) 'sq'
};

// depthwise_pointwise_graph's nodes after b's, reading int8 'xq' [1, C, 6, 5] (b's).
void add_depthwise_pointwise(Builder& b, const DwPw& o) {
  const int64_t c = o.channels, n = o.pw_out, k = o.pw_kernel;
  const int64_t hw = (3 + 2 * (k / 2) - k) / o.pw_stride + 1;
  b.per_channel_weight({c, 1, 3, 3}, std::vector<float>(size_t(c), 0.25f),
                       std::vector<int32_t>(size_t(c), 0), "dw");
  std::vector<float> pw_scales = {0.5f, 0.25f, 0.125f, 0.5f};
  pw_scales.resize(size_t(n), 0.375f);
  b.per_channel_weight({n, c, k, k}, pw_scales, std::vector<int32_t>(size_t(n), 0), "pw");
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "dwf", "", "m", {1, c, 3, 3},
         {{"groups", c}, {"stride", std::vector<int64_t>{2, 2}}});
  b.value("mr", DType::Float32, {1, c, 3, 3});
  b.node("aten.relu", {"m"}, {}, {"mr"});
  b.q("mr", "mq", 0.05, -10);
  b.dq("mq", "mf", o.mid_dq_scale, -10);
  b.conv("mf", "pwf", "", "y", {1, n, hw, hw},
         {{"padding", std::vector<int64_t>{k / 2, k / 2}},
          {"stride", std::vector<int64_t>{o.pw_stride, o.pw_stride}}});
  b.q("y", "yq", 0.2, 3);
  if (!o.residual_add) {
    b.output("yq");
    return;
  }
  b.residual_add("yq", "yf", 0.2, 3, "sq", 0.5, 1);
  b.output("sq");
}

// 0 weight dq 'dwf' [C, 1, 3, 3], 1 weight dq 'pwf' [N, C, k, k], 2 dq 'x' of xq [1, C, 6, 5]
// (0.1, 2), 3 depthwise conv 3x3 (groups C, stride 2, padding 1) [1, C, 3, 3], 4 relu, 5 q 'mq'
// (0.05, -10), 6 dq 'mf' (mid_dq_scale, -10), 7 conv k x k (C -> N, `pw_stride`), 8 q 'yq'
// (0.2, 3) [+ the residual add].
Builder depthwise_pointwise_graph(const DwPw& o = {}) {
  Builder b;
  b.input("xq", DType::Int8, {1, o.channels, 6, 5});
  add_depthwise_pointwise(b, o);
  return b;
}

// The depthwise's input (qparams `input_scale`, `input_zero_point`: the fused op's input), its
// weights and geometry, its output's parameters as mid_*, then the 1x1's weights and output:
// one node, 'mq' gone.
void expect_depthwise_pointwise_head(const Node& n, double input_scale = 0.1,
                                     int64_t input_zero_point = 2) {
  EXPECT_EQ(arg_d(n, "input_scale"), input_scale);
  EXPECT_EQ(arg_i(n, "input_zero_point"), input_zero_point);
  EXPECT_EQ(arg_l(n, "stride"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(arg_l(n, "padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_l(n, "dilation"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(arg_d(n, "mid_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "mid_zero_point"), -10);
  EXPECT_EQ(arg_i(n, "mid_activation_min"), -10);  // the relu: q(0) = -10
  EXPECT_EQ(arg_i(n, "mid_activation_max"), 127);
  EXPECT_EQ(n.args.count("groups"), 0u);
  EXPECT_EQ(n.args.count("upscale_factor"), 0u);
}

TEST(Fuse, DepthwiseThenPointwiseBecomeOneOp) {
  Builder b = depthwise_pointwise_graph();
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_dw_pw"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "dw", "dw_scales", "mq_bias", "pw",
                                                "pw_scales", "yq_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  expect_depthwise_pointwise_head(n);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
  EXPECT_EQ(n.origin, "node 7 (aten.convolution) fused into q8ta_conv2d_dw_pw");
  EXPECT_EQ(g.value("dw").shape, (std::vector<int64_t>{8, 1, 3, 3}));
  EXPECT_EQ(floats_of(g.value("dw_scales")), std::vector<float>(8, 0.25f));
  EXPECT_EQ(floats_of(g.value("mq_bias")), std::vector<float>(8, 0.0f));
  EXPECT_EQ(floats_of(g.value("pw_scales")), (std::vector<float>{0.5f, 0.25f, 0.125f, 0.5f}));
  for (const char* gone : {"mq", "m", "mr", "mf", "x", "dwf", "pwf"}) {
    EXPECT_FALSE(g.has_value(gone)) << gone;
  }
  expect_quant(g.value("xq"), 0.1, 2, -128, 127);
  expect_quant(g.value("yq"), 0.2, 3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused depthwise q8ta_conv2d 'mq' (node 2..5) into q8ta_conv2d 'yq' "
                       "(node 6..8): q8ta_conv2d_dw_pw reads 'xq' and writes 'yq'; 'mq' "
                       "(8 channels) is not written"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "folded 2 weight dequantize node(s) (node 0..1)")) << all_lines(r);
  expect_valid(g);
}

// The 1x1 took its residual add first (q8ta_conv2d_add, upscale_factor 1): its own output's
// parameters stay conv_*, the add's output_*.
TEST(Fuse, DepthwiseThenPointwiseWithItsResidualAddBecomeOneOp) {
  DwPw o;
  o.residual_add = true;
  Builder b = depthwise_pointwise_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_dw_pw_add"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "dw", "dw_scales", "mq_bias", "pw",
                                                "pw_scales", "yq_bias", "rq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"sq"}));
  expect_depthwise_pointwise_head(n);
  EXPECT_EQ(arg_d(n, "conv_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "conv_zero_point"), 3);
  EXPECT_EQ(arg_i(n, "conv_activation_min"), -128);
  EXPECT_EQ(arg_i(n, "conv_activation_max"), 127);
  EXPECT_EQ(arg_d(n, "other_scale"), 0.4);
  EXPECT_EQ(arg_i(n, "other_zero_point"), 0);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.5);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 1);
  EXPECT_EQ(n.origin, "node 7 (aten.convolution) fused into q8ta_conv2d_dw_pw_add");
  EXPECT_FALSE(g.has_value("mq"));
  EXPECT_FALSE(g.has_value("yq"));
  EXPECT_TRUE(has_line(r,
                       "fused depthwise q8ta_conv2d 'mq' (node 2..5) into q8ta_conv2d_add "
                       "'sq' (node 6..12): q8ta_conv2d_dw_pw_add reads 'xq' and writes 'sq'; "
                       "'mq' (8 channels) is not written"))
      << all_lines(r);
  expect_valid(g);
}

// Where the two cannot be one op, the report says why and both stay (the 1x1 as what it became).
TEST(Fuse, DepthwiseThenPointwiseThatCannotBeOneOp) {
  struct Case {
    Builder b;
    std::string pointwise, why;  // the 1x1's op and output, and the reason
    bool epilogues = true;
  };
  DwPw three_by_three, strided, requantized, wide, shuffled;
  three_by_three.pw_kernel = 3;
  strided.pw_stride = 2;
  requantized.mid_dq_scale = 0.1;
  wide.channels = 1028;
  shuffled.pw_out = 16;
  const std::string geometry =
      ": the second convolution must be a 1x1 of stride 1, padding 0, dilation 1 and groups 1";
  Case cases[] = {
      {depthwise_pointwise_graph(), "q8ta_conv2d 'yq' (node 6..8)", "'mq' is a graph output"},
      {depthwise_pointwise_graph(), "q8ta_conv2d 'yq' (node 6..8)",
       "'mq' has 2 consumers (nodes 6, 9)"},
      {depthwise_pointwise_graph(three_by_three), "q8ta_conv2d 'yq' (node 6..8)",
       "a 3x3 kernel" + geometry},
      {depthwise_pointwise_graph(strided), "q8ta_conv2d 'yq' (node 6..8)",
       "stride [2, 2]" + geometry},
      {depthwise_pointwise_graph(requantized), "q8ta_conv2d 'yq' (node 6..8)",
       "the dq (scale 0.1 zero_point -10 range -128..127) reads 'mq' with other parameters than "
       "it was written with (scale 0.05 zero_point -10 range -128..127)"},
      {depthwise_pointwise_graph(wide), "q8ta_conv2d 'yq' (node 6..8)",
       "1028 channels: the fused kernel keeps the depthwise output's tile in shared memory, at "
       "most 1024 channels"},
      {depthwise_pointwise_graph(), "q8ta_conv2d 'yq' (node 6..8)",
       "epilogue fusion is off (--no-fuse-epilogue)", false},
      // The 1x1 writes its output pixel-shuffled (its store moved the shuffle's bytes).
      {depthwise_pointwise_graph(shuffled), "q8ta_conv2d_ps 'p' (node 6..11)",
       "q8ta_conv2d_ps writes its output pixel-shuffled: the fused op's store writes int8, or "
       "adds a residual tensor (q8ta_conv2d_add with upscale_factor 1)"},
      // The 1x1 dequantizes its output in its store (the graph's last dequantize).
      {depthwise_pointwise_graph(), "q8ta_conv2d_q_dq 'yf' (node 6..9)",
       "q8ta_conv2d_q_dq writes no plain int8 output: the fused op's store writes int8, or adds a "
       "residual tensor (q8ta_conv2d_add with upscale_factor 1)"},
  };
  cases[0].b.output("mq");
  cases[1].b.dq("mq", "m2", 0.05, -10);
  cases[1].b.output("m2");
  {  // 1x1 on 8 -> 16 channels, then a pixel shuffle by 2 moving its bytes: [1, 4, 6, 6]
    Builder& b = cases[7].b;
    b.g.outputs.clear();
    b.dq("yq", "yf", 0.2, 3);
    b.value("ps", DType::Float32, {1, 4, 6, 6});
    b.node("aten.pixel_shuffle", {"yf"}, {{"upscale_factor", int64_t{2}}}, {"ps"});
    b.q("ps", "p", 0.2, 3);
    b.output("p");
  }
  cases[8].b.g.outputs.clear();
  cases[8].b.dq("yq", "yf", 0.2, 3);
  cases[8].b.output("yf");
  for (Case& c : cases) {
    FuseOptions options;
    options.fuse_epilogues = c.epilogues;
    const PassReport r = fuse_and_lower(c.b.g, options);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d"), c.pointwise.rfind("q8ta_conv2d ", 0) == 0 ? 2 : 1)
        << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_dw_pw"), 0) << all_lines(r);
    EXPECT_TRUE(has_line(
        r, "not fused: depthwise q8ta_conv2d 'mq' (node 2..5) into " + c.pointwise + ": " + c.why))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// A one-channel depthwise convolution of the graph's first quantize took it into its load
// (q8ta_conv2d_fq, tried before this join): the fused op reads int8, so the two stay apart.
TEST(Fuse, DepthwiseThatQuantizesOnLoadStaysApart) {
  DwPw o;
  o.channels = 1;
  Builder b = depthwise_pointwise_graph(o);
  b.g.inputs = {"xf"};
  b.value("xf", DType::Float32, {1, 1, 6, 5});
  b.g.nodes.insert(b.g.nodes.begin(), Node{kQ, {"xf"}, q_args(0.1, 2), {"xq"}, "node 0 (q)"});
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_fq", "q8ta_conv2d"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: depthwise q8ta_conv2d_fq 'mq' (nodes 0, 3..6) into "
                       "q8ta_conv2d 'yq' (node 7..9): the depthwise is q8ta_conv2d_fq: only a "
                       "plain q8ta_conv2d (int8 output) fuses"))
      << all_lines(r);
  expect_valid(b.g);
}

// A 1x1 after a convolution that is not depthwise is simply not this pattern: no line.
TEST(Fuse, PointwiseAfterADenseConvIsNotReportedAsDepthwise) {
  Builder b = depthwise_pointwise_graph();
  b.g.nodes[3].args["groups"] = int64_t{2};
  b.g.value("dw").shape = {8, 4, 3, 3};
  b.g.value("dw").data = ramp_i8(8 * 4 * 9);
  b.g.value("dwf").shape = {8, 4, 3, 3};
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_conv2d"})) << all_lines(r);
  for (const auto& line : r.lines) EXPECT_EQ(line.find("depthwise"), std::string::npos) << line;
  expect_valid(b.g);
}

// ---- then the 1x1 expansion before them (an inverted-residual block) ---------------------------

// Options of expansion_graph.
struct Expand {
  DwPw dw_pw;
  int64_t kernel = 1;  // the expansion's kernel (padding kernel / 2)
  int64_t stride = 1;  // (its input [1, 4, 6 stride, 5 stride])
  int64_t groups = 1;
  double write_scale = 0.1;  // the expansion's q of 'xq' (the depthwise's dq reads (0.1, 2))
  bool float_input = false;  // 'iq' the quantize (0.3, 1) of float input 'if', node 0 (the
                             // other nodes one later)
};

// 0 weight dq 'ef' [C, 4 / groups, k, k], 1 dq 'i' of iq [1, 4, 6 s, 5 s] (0.3, 1), 2 conv
// k x k (4 -> C), 3 hardtanh(0, 6), 4 q 'xq' (write_scale, 2) [1, C, 6, 5], then
// depthwise_pointwise_graph's nodes as 5.. (5 weight dq 'dwf', 6 weight dq 'pwf', 7 dq 'x', 8
// depthwise, 9 relu, 10 q 'mq', 11 dq 'mf', 12 1x1, 13 q 'yq' [+ 14.. the residual add]).
Builder expansion_graph(const Expand& o = {}) {
  Builder b;
  const int64_t c = o.dw_pw.channels, k = o.kernel, s = o.stride;
  if (o.float_input) {
    b.input("if", DType::Float32, {1, 4, 6 * s, 5 * s});
    b.q("if", "iq", 0.3, 1);
  } else {
    b.input("iq", DType::Int8, {1, 4, 6 * s, 5 * s});
  }
  b.per_channel_weight({c, 4 / o.groups, k, k}, std::vector<float>(size_t(c), 0.125f),
                       std::vector<int32_t>(size_t(c), 0), "e");
  b.dq("iq", "i", 0.3, 1);
  b.conv("i", "ef", "", "ec", {1, c, 6, 5},
         {{"padding", std::vector<int64_t>{k / 2, k / 2}},
          {"stride", std::vector<int64_t>{s, s}},
          {"groups", o.groups}});
  b.value("er", DType::Float32, {1, c, 6, 5});
  b.node("aten.hardtanh", {"ec"}, {{"min_val", 0.0}, {"max_val", 6.0}}, {"er"});
  b.q("er", "xq", o.write_scale, 2);
  add_depthwise_pointwise(b, o.dw_pw);
  return b;
}

// The expansion's input, qparams and weights, its output's parameters as expand_*, then the
// merged depthwise -> 1x1's arguments after its input qparams: one node, 'xq' and 'mq' gone.
void expect_expansion_head(const Graph& g, const Node& n) {
  expect_depthwise_pointwise_head(n, 0.3, 1);
  EXPECT_EQ(arg_d(n, "expand_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "expand_zero_point"), 2);
  // hardtanh(0, 6) quantized at (0.1, 2): 0 / 0.1 + 2 and 6 / 0.1 + 2.
  EXPECT_EQ(arg_i(n, "expand_activation_min"), 2);
  EXPECT_EQ(arg_i(n, "expand_activation_max"), 62);
  EXPECT_EQ(g.value("e").shape, (std::vector<int64_t>{8, 4, 1, 1}));
  EXPECT_EQ(floats_of(g.value("e_scales")), std::vector<float>(8, 0.125f));
  EXPECT_EQ(floats_of(g.value("xq_bias")), std::vector<float>(8, 0.0f));
  for (const char* gone : {"xq", "i", "ec", "er", "ef", "mq", "x", "m", "mr", "mf"}) {
    EXPECT_FALSE(g.has_value(gone)) << gone;
  }
  expect_quant(g.value("iq"), 0.3, 1, -128, 127);
}

TEST(Fuse, ExpansionDepthwiseAndPointwiseBecomeOneOp) {
  Builder b = expansion_graph();
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_pw_dw_pw"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"iq", "e", "e_scales", "xq_bias", "dw", "dw_scales",
                                                "mq_bias", "pw", "pw_scales", "yq_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yq"}));
  expect_expansion_head(g, n);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
  EXPECT_EQ(n.origin, "node 12 (aten.convolution) fused into q8ta_conv2d_pw_dw_pw");
  expect_quant(g.value("yq"), 0.2, 3, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused depthwise q8ta_conv2d 'mq' (node 7..10) into q8ta_conv2d 'yq' "
                       "(node 11..13): q8ta_conv2d_dw_pw reads 'xq' and writes 'yq'; 'mq' "
                       "(8 channels) is not written"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "fused 1x1 expansion q8ta_conv2d 'xq' (node 1..4) into "
                       "q8ta_conv2d_dw_pw 'yq' (node 7..13): q8ta_conv2d_pw_dw_pw reads 'iq' "
                       "and writes 'yq'; 'xq' (8 channels) is not written"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "folded 3 weight dequantize node(s) (nodes 0, 5..6)")) << all_lines(r);
  expect_valid(g);
}

// The 1x1 took its residual add: q8ta_conv2d_pw_dw_pw_add, conv_* its own output's parameters.
TEST(Fuse, ExpansionDepthwiseAndPointwiseWithItsResidualAddBecomeOneOp) {
  Expand o;
  o.dw_pw.residual_add = true;
  Builder b = expansion_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_pw_dw_pw_add"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"iq", "e", "e_scales", "xq_bias", "dw", "dw_scales",
                                                "mq_bias", "pw", "pw_scales", "yq_bias", "rq"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"sq"}));
  expect_expansion_head(g, n);
  EXPECT_EQ(arg_d(n, "conv_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "conv_zero_point"), 3);
  EXPECT_EQ(arg_d(n, "other_scale"), 0.4);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.5);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 1);
  EXPECT_EQ(n.origin, "node 12 (aten.convolution) fused into q8ta_conv2d_pw_dw_pw_add");
  EXPECT_FALSE(g.has_value("yq"));
  EXPECT_TRUE(has_line(r,
                       "fused 1x1 expansion q8ta_conv2d 'xq' (node 1..4) into "
                       "q8ta_conv2d_dw_pw_add 'sq' (node 7..17): q8ta_conv2d_pw_dw_pw_add "
                       "reads 'iq' and writes 'sq'; 'xq' (8 channels) is not written"))
      << all_lines(r);
  expect_valid(g);
}

// Where the expansion cannot join, the report says why and it stays its own q8ta_conv2d before
// the merged depthwise -> 1x1.
TEST(Fuse, ExpansionThatCannotJoinStaysApart) {
  struct Case {
    Builder b;
    std::string expansion, why;  // the expansion's op, output and nodes, and the reason
  };
  Expand three_by_three, strided, grouped, requantized, quantizing;
  three_by_three.kernel = 3;
  strided.stride = 2;
  grouped.groups = 2;
  requantized.write_scale = 0.2;
  quantizing.kernel = 3;
  quantizing.float_input = true;
  const std::string plain = "q8ta_conv2d 'xq' (node 1..4)";
  const std::string geometry =
      ": the expansion must be a 1x1 of stride 1, padding 0, dilation 1 and groups 1";
  Case cases[] = {
      {expansion_graph(), plain, "'xq' is a graph output"},
      {expansion_graph(), plain, "'xq' has 2 consumers (nodes 7, 14)"},
      {expansion_graph(three_by_three), plain, "a 3x3 kernel" + geometry},
      {expansion_graph(strided), plain, "stride [2, 2]" + geometry},
      {expansion_graph(grouped), plain, "groups 2" + geometry},
      {expansion_graph(requantized), plain,
       "the dq (scale 0.1 zero_point 2 range -128..127) reads 'xq' with other parameters than "
       "it was written with (scale 0.2 zero_point 2 range -128..127)"},
      // The graph's first quantize joined the (3x3) expansion's load first.
      {expansion_graph(quantizing), "q8ta_conv2d_fq 'xq' (nodes 0, 2..5)",
       "the expansion is q8ta_conv2d_fq: only a plain q8ta_conv2d (int8 output) fuses"},
  };
  cases[0].b.output("xq");
  cases[1].b.dq("xq", "x2", 0.1, 2);
  cases[1].b.output("x2");
  for (Case& c : cases) {
    const PassReport r = fuse_and_lower(c.b.g);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_dw_pw"), 1) << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_pw_dw_pw"), 0) << all_lines(r);
    const std::string into = c.expansion.find("_fq") == std::string::npos
                                 ? "q8ta_conv2d_dw_pw 'yq' (node 7..13)"
                                 : "q8ta_conv2d_dw_pw 'yq' (node 8..14)";
    EXPECT_TRUE(
        has_line(r, "not fused: 1x1 expansion " + c.expansion + " into " + into + ": " + c.why))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// --no-fuse-epilogue: the depthwise and the 1x1 stay apart (reported), so the expansion has no
// merged op to join: three q8ta_conv2d, no expansion line.
TEST(Fuse, ExpansionStaysApartWithoutEpilogueFusion) {
  Builder b = expansion_graph();
  FuseOptions options;
  options.fuse_epilogues = false;
  const PassReport r = fuse_and_lower(b.g, options);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_conv2d", "q8ta_conv2d"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: depthwise q8ta_conv2d 'mq' (node 7..10) into q8ta_conv2d "
                       "'yq' (node 11..13): epilogue fusion is off (--no-fuse-epilogue)"))
      << all_lines(r);
  for (const auto& line : r.lines) EXPECT_EQ(line.find("expansion"), std::string::npos) << line;
  expect_valid(b.g);
}

// A depthwise -> 1x1 reading a graph input, or the output of an op that is not a convolution,
// has no expansion: no line.
TEST(Fuse, DepthwisePointwiseAfterNoConvIsNotReportedAsExpanded) {
  Builder from_input = depthwise_pointwise_graph();
  Builder after_relu;
  after_relu.input("iq", DType::Int8, {1, 8, 6, 5});
  after_relu.dq("iq", "i", 0.1, 2);
  after_relu.value("ir", DType::Float32, {1, 8, 6, 5});
  after_relu.node("aten.relu", {"i"}, {}, {"ir"});
  after_relu.q("ir", "xq", 0.1, 2);
  add_depthwise_pointwise(after_relu, {});
  for (Builder* b : {&from_input, &after_relu}) {
    const PassReport r = fuse_and_lower(b->g);
    EXPECT_EQ(count_op(b->g, "q8ta_conv2d_dw_pw"), 1) << all_lines(r);
    for (const auto& line : r.lines) EXPECT_EQ(line.find("expansion"), std::string::npos) << line;
    expect_valid(b->g);
  }
}

// ---- a pixel-shuffled 1x1 and the dequantizing 1x1 head reading it ----------------------------

// Options of shuffled_head_graph.
struct PsHead {
  int64_t in_channels = 4;     // C_in of the shuffled convolution
  int64_t channels = 4;        // C after the shuffle (the shuffled convolution writes C r^2)
  int64_t factor = 2;          // the shuffle's upscale_factor r
  int64_t head_out = 4;        // N_out of the head
  int64_t ps_kernel = 1;       // the shuffled convolution's kernel (padding ps_kernel / 2)
  int64_t head_kernel = 1;     // the head's kernel (padding head_kernel / 2)
  double mid_dq_scale = 0.05;  // how the head's dq reads its input (written at 0.05)
  bool residual_add = false;   // 9 dq 'mf', 10 dq 'rq' (0.4, 0), 11 add, 12 q 'sq' (0.05, -10)
  bool dequantized = true;     // the head's output dequantized (the graph's last dq), else 'yq'
};

// 0 weight dq 'psf' [C r^2, C_in, k, k], 1 weight dq 'hwf' [N, C, hk, hk], 2 dq 'x' of xq
// [1, C_in, 3, 2] (0.1, 2), 3 conv k x k (C_in -> C r^2), 4 relu, 5 q 'cq' (0.05, -10), 6 dq, 7
// pixel_shuffle(r), 8 q 'mq' (0.05, -10) [1, C, 3 r, 2 r] [+ the residual add, its output
// 'sq' then the head's input], 9 dq 'hf' (mid_dq_scale, -10), 10 head conv hk x hk (C -> N),
// 11 q 'yq' (0.2, 3), 12 dq 'yf' (0.2, 3), the graph's output.
Builder shuffled_head_graph(const PsHead& o = {}) {
  Builder b;
  const int64_t c = o.channels, r = o.factor, n = o.head_out, k = o.ps_kernel;
  const int64_t hk = o.head_kernel, shuffled = c * r * r;
  const std::vector<int64_t> mid_shape = {1, c, 3 * r, 2 * r};
  b.input("xq", DType::Int8, {1, o.in_channels, 3, 2});
  b.per_channel_weight({shuffled, o.in_channels, k, k}, std::vector<float>(size_t(shuffled), 0.25f),
                       std::vector<int32_t>(size_t(shuffled), 0), "ps");
  std::vector<float> head_scales = {0.5f, 0.25f, 0.125f, 0.5f};
  head_scales.resize(size_t(n), 0.375f);
  b.per_channel_weight({n, c, hk, hk}, head_scales, std::vector<int32_t>(size_t(n), 0), "hw");
  b.dq("xq", "x", 0.1, 2);
  b.conv("x", "psf", "", "c", {1, shuffled, 3, 2},
         {{"padding", std::vector<int64_t>{k / 2, k / 2}}});
  b.value("cr", DType::Float32, {1, shuffled, 3, 2});
  b.node("aten.relu", {"c"}, {}, {"cr"});
  b.q("cr", "cq", 0.05, -10);
  b.dq("cq", "cf", 0.05, -10);
  b.value("p", DType::Float32, mid_shape);
  b.node("aten.pixel_shuffle", {"cf"}, {{"upscale_factor", r}}, {"p"});
  b.q("p", "mq", 0.05, -10);
  std::string mid = "mq";
  if (o.residual_add) {
    b.residual_add("mq", "mf", 0.05, -10, "sq", 0.05, -10);
    mid = "sq";
  }
  b.dq(mid, "hf", o.mid_dq_scale, -10);
  b.conv("hf", "hwf", "", "y", {1, n, 3 * r, 2 * r},
         {{"padding", std::vector<int64_t>{hk / 2, hk / 2}}});
  b.q("y", "yq", 0.2, 3);
  if (!o.dequantized) {
    b.output("yq");
    return b;
  }
  b.dq("yq", "yf", 0.2, 3);
  b.output("yf");
  return b;
}

// The shuffled convolution's input, qparams and weights, its output's parameters as mid_*, its
// upscale_factor, then the head's weights and float output: one node, 'mq' gone.
TEST(Fuse, ShuffledPointwiseThenDequantizingHeadBecomeOneOp) {
  Builder b = shuffled_head_graph();
  const PassReport r = fuse_and_lower(b.g);
  const Graph& g = b.g;
  ASSERT_EQ(ops_of(g), (std::vector<std::string>{"q8ta_conv2d_ps_pw_q_dq"})) << all_lines(r);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"xq", "ps", "ps_scales", "cq_bias", "hw",
                                                "hw_scales", "yq_bias"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"yf"}));
  EXPECT_EQ(arg_d(n, "input_scale"), 0.1);
  EXPECT_EQ(arg_i(n, "input_zero_point"), 2);
  EXPECT_EQ(arg_i(n, "upscale_factor"), 2);
  EXPECT_EQ(arg_d(n, "mid_scale"), 0.05);
  EXPECT_EQ(arg_i(n, "mid_zero_point"), -10);
  EXPECT_EQ(arg_i(n, "mid_activation_min"), -10);  // the relu: q(0) = -10
  EXPECT_EQ(arg_i(n, "mid_activation_max"), 127);
  EXPECT_EQ(arg_d(n, "output_scale"), 0.2);
  EXPECT_EQ(arg_i(n, "output_zero_point"), 3);
  EXPECT_EQ(activation_of(n), (std::pair<int64_t, int64_t>{-128, 127}));
  for (const char* gone : {"stride", "padding", "dilation", "groups"}) {
    EXPECT_EQ(n.args.count(gone), 0u) << gone;
  }
  EXPECT_EQ(n.origin, "node 10 (aten.convolution) fused into q8ta_conv2d_ps_pw_q_dq");
  EXPECT_EQ(g.value("ps").shape, (std::vector<int64_t>{16, 4, 1, 1}));
  EXPECT_EQ(floats_of(g.value("ps_scales")), std::vector<float>(16, 0.25f));
  EXPECT_EQ(floats_of(g.value("cq_bias")), std::vector<float>(16, 0.0f));
  EXPECT_EQ(g.value("hw").shape, (std::vector<int64_t>{4, 4, 1, 1}));
  EXPECT_EQ(floats_of(g.value("hw_scales")), (std::vector<float>{0.5f, 0.25f, 0.125f, 0.5f}));
  for (const char* gone : {"mq", "cq", "c", "cr", "cf", "p", "hf", "y", "yq", "x", "psf", "hwf"}) {
    EXPECT_FALSE(g.has_value(gone)) << gone;
  }
  EXPECT_EQ(g.value("yf").dtype, DType::Float32);
  expect_quant(g.value("xq"), 0.1, 2, -128, 127);
  EXPECT_TRUE(has_line(r,
                       "fused pixel-shuffled q8ta_conv2d_ps 'mq' (node 2..8) into "
                       "q8ta_conv2d_q_dq 'yf' (node 9..12): q8ta_conv2d_ps_pw_q_dq reads 'xq' "
                       "and writes 'yf'; 'mq' (4 channels) is not written"))
      << all_lines(r);
  EXPECT_TRUE(has_line(r, "folded 2 weight dequantize node(s) (node 0..1)")) << all_lines(r);
  expect_valid(g);
}

// Where the two cannot be one op, the report says why and both stay what they became.
TEST(Fuse, ShuffledPointwiseAndHeadThatCannotBeOneOp) {
  struct Case {
    Builder b;
    std::string shuffled, head, why;  // each convolution's op, output and nodes; the reason
  };
  PsHead three_by_three, head_three_by_three, residual, int8_head, requantized, wide_input, wide,
      unshuffled, too_far;
  three_by_three.ps_kernel = 3;
  head_three_by_three.head_kernel = 3;
  residual.residual_add = true;
  int8_head.dequantized = false;
  requantized.mid_dq_scale = 0.1;
  wide_input.in_channels = 260;
  wide.channels = 260;
  unshuffled.factor = 1;
  too_far.factor = 17;
  const std::string ps = "q8ta_conv2d_ps 'mq' (node 2..8)";
  const std::string head = "q8ta_conv2d_q_dq 'yf' (node 9..12)";
  const std::string geometry = " must be a 1x1 of stride 1, padding 0, dilation 1 and groups 1";
  Case cases[] = {
      {shuffled_head_graph(), ps, head, "'mq' is a graph output"},
      {shuffled_head_graph(), ps, head, "'mq' has 2 consumers (nodes 9, 13)"},
      {shuffled_head_graph(three_by_three), ps, head,
       "a 3x3 kernel: the pixel-shuffled convolution" + geometry},
      {shuffled_head_graph(head_three_by_three), ps, head, "a 3x3 kernel: the head" + geometry},
      // The shuffled convolution took a residual add into its store.
      {shuffled_head_graph(residual), "q8ta_conv2d_add 'sq' (node 2..12)",
       "q8ta_conv2d_q_dq 'yf' (node 13..16)",
       "the pixel-shuffled convolution is q8ta_conv2d_add: only q8ta_conv2d_ps (its shuffled "
       "int8 output, no residual add) fuses"},
      {shuffled_head_graph(int8_head), ps, "q8ta_conv2d 'yq' (node 9..11)",
       "the head is q8ta_conv2d: only q8ta_conv2d_q_dq (requantized, then dequantized to "
       "float32) fuses"},
      {shuffled_head_graph(requantized), ps, head,
       "the dq (scale 0.1 zero_point -10 range -128..127) reads 'mq' with other parameters than "
       "it was written with (scale 0.05 zero_point -10 range -128..127)"},
      {shuffled_head_graph(wide_input), ps, head,
       "260 input channels: the fused kernel keeps a pixel's words of them in registers, at "
       "most 256"},
      {shuffled_head_graph(wide), ps, head,
       "260 channels after the shuffle: the fused kernel keeps a pixel's words of them in "
       "registers, at most 256"},
      // A shuffle by 1 moved the bytes in place into the convolution's store.
      {shuffled_head_graph(unshuffled), ps, head,
       "upscale_factor 1: nothing is shuffled (two plain 1x1 convolutions are no "
       "q8ta_conv2d_ps_pw_q_dq)"},
      {shuffled_head_graph(too_far), ps, head,
       "upscale_factor 17: the fused op shuffles by at most 16"},
  };
  cases[0].b.output("mq");
  cases[1].b.dq("mq", "m2", 0.05, -10);
  cases[1].b.output("m2");
  for (Case& c : cases) {
    const PassReport r = fuse_and_lower(c.b.g);
    EXPECT_EQ(count_op(c.b.g, "q8ta_conv2d_ps_pw_q_dq"), 0) << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, c.shuffled.substr(0, c.shuffled.find(' '))), 1) << all_lines(r);
    EXPECT_EQ(count_op(c.b.g, c.head.substr(0, c.head.find(' '))), 1) << all_lines(r);
    EXPECT_TRUE(
        has_line(r, "not fused: pixel-shuffled " + c.shuffled + " into " + c.head + ": " + c.why))
        << all_lines(r);
    expect_valid(c.b.g);
  }
}

// The head's output channels have no limit (the kernel loops over them): 68 classes fuse.
TEST(Fuse, ShuffledHeadOfManyClassesBecomesOneOp) {
  PsHead o;
  o.head_out = 68;
  Builder b = shuffled_head_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d_ps_pw_q_dq"})) << all_lines(r);
  EXPECT_EQ(b.g.value("yf").shape, (std::vector<int64_t>{1, 68, 6, 4}));
  expect_valid(b.g);
}

// 2 channels after the shuffle: the convolution's store does not take the shuffle (a packed
// word would hold two sub-pixel phases), so the head reads a q8ta_pixel_shuffle, no
// pixel-shuffled convolution: the three stay apart and this join has no line.
TEST(Fuse, ShuffledHeadOfChannelsNotAMultipleOf4StaysApart) {
  PsHead o;
  o.channels = 2;
  Builder b = shuffled_head_graph(o);
  const PassReport r = fuse_and_lower(b.g);
  EXPECT_EQ(ops_of(b.g),
            (std::vector<std::string>{"q8ta_conv2d", "q8ta_pixel_shuffle", "q8ta_conv2d_q_dq"}))
      << all_lines(r);
  EXPECT_TRUE(has_line(r,
                       "not fused: dq -> aten.pixel_shuffle -> q (node 6..8) into the "
                       "epilogue of q8ta_conv2d 'cq': 2 channels after the shuffle, not a "
                       "multiple of 4: a packed word would hold channels of two sub-pixel "
                       "phases"))
      << all_lines(r);
  for (const auto& line : r.lines) {
    EXPECT_EQ(line.find("pixel-shuffled"), std::string::npos) << line;
  }
  expect_valid(b.g);
}

// --no-fuse-epilogue: no q8ta_conv2d_ps nor q8ta_conv2d_q_dq to join, so the convolutions, the
// shuffle and the dequantize stay four ops, and this join has no line.
TEST(Fuse, ShuffledHeadStaysApartWithoutEpilogueFusion) {
  Builder b = shuffled_head_graph();
  FuseOptions options;
  options.fuse_epilogues = false;
  const PassReport r = fuse_and_lower(b.g, options);
  EXPECT_EQ(ops_of(b.g), (std::vector<std::string>{"q8ta_conv2d", "q8ta_pixel_shuffle",
                                                   "q8ta_conv2d", "q8ta_dequantize"}))
      << all_lines(r);
  for (const auto& line : r.lines) {
    EXPECT_EQ(line.find("pixel-shuffled"), std::string::npos) << line;
  }
  expect_valid(b.g);
}

}  // namespace
