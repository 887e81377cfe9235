// What the fuse_and_lower tests (test_fuse_<unit>.cpp, one per compiler/fusion unit) share: a
// builder of edge-dialect graphs with every value's dtype and shape set, the graphs more than one
// unit's tests start from, and the checks: every backend node against its OpSchema entry, the
// report's lines, quantization of int8 activations.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/Fuse.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler::fuse_test {

using namespace vkd::schema;
using vkd::DType;

inline const char* const kQ = "quantized_decomposed.quantize_per_tensor";
inline const char* const kDq = "quantized_decomposed.dequantize_per_tensor";
inline const char* const kDqChannel = "quantized_decomposed.dequantize_per_channel";

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

inline std::vector<float> floats_of(const Value& v) {
  EXPECT_TRUE(v.data.has_value()) << v.name;
  if (!v.data) return {};
  std::vector<float> out(v.data->size() / 4);
  std::memcpy(out.data(), v.data->data(), out.size() * 4);
  return out;
}

inline std::vector<uint8_t> i32_bytes(const std::vector<int32_t>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

inline std::vector<uint8_t> ramp_i8(int64_t n) {
  std::vector<uint8_t> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7 - 60);
  return out;
}

inline Args q_args(double scale, int64_t zp, int64_t qmin = -128, int64_t qmax = 127) {
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

inline int count_op(const Graph& g, const std::string& op) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op == op; }));
}

inline const Node& only_node(const Graph& g, const std::string& op) {
  EXPECT_EQ(count_op(g, op), 1) << op;
  for (const auto& n : g.nodes) {
    if (n.op == op) return n;
  }
  static const Node none;
  return none;
}

inline std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n.op);
  return out;
}

inline bool has_line(const PassReport& r, const std::string& line) {
  return std::find(r.lines.begin(), r.lines.end(), line) != r.lines.end();
}

inline std::string all_lines(const PassReport& r) {
  std::string s;
  for (const auto& l : r.lines) s += "  " + l + "\n";
  return s;
}

inline int64_t arg_i(const Node& n, const std::string& name) {
  return std::get<int64_t>(n.args.at(name));
}
inline double arg_d(const Node& n, const std::string& name) {
  return std::get<double>(n.args.at(name));
}
inline std::vector<int64_t> arg_l(const Node& n, const std::string& name) {
  return std::get<std::vector<int64_t>>(n.args.at(name));
}

inline std::pair<int64_t, int64_t> activation_of(const Node& n) {
  return {arg_i(n, "activation_min"), arg_i(n, "activation_max")};
}

inline std::vector<std::string> arg_names(const Node& n) {
  std::vector<std::string> out;
  for (const auto& kv : n.args) out.push_back(kv.first);
  return out;
}

inline void expect_quant(const Value& v, double scale, int64_t zp, int64_t qmin, int64_t qmax) {
  ASSERT_TRUE(v.quant.has_value()) << v.name;
  EXPECT_EQ(v.quant->scale, scale) << v.name;
  EXPECT_EQ(v.quant->zero_point, zp) << v.name;
  EXPECT_EQ(v.quant->quant_min, qmin) << v.name;
  EXPECT_EQ(v.quant->quant_max, qmax) << v.name;
}

// The graph is well formed and every backend node matches its OpSchema entry: tensor inputs in
// schema order (count), scalar args by name and kind, tensor dtypes, constants where required.
inline void expect_valid(const Graph& g) {
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
    size_t tin = 0, tout = 0, scalars = 0, fixed_after = 0;
    for (const auto& a : s->args) {
      if (a.kind == ArgKind::TensorList) {  // every input the tensor args after it leave
        fixed_after = 0;
        for (const auto* b = &a + 1; b != s->args.data() + s->args.size(); ++b) {
          fixed_after += b->kind == ArgKind::Tensor && !b->output;
        }
        for (; tin + fixed_after < n.inputs.size(); ++tin) {
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

// 0 weight dq, 1 dq, 2 linear, 3 q.
inline Builder linear_graph(const std::vector<int32_t>& wzp = {0, 0, 0, 0}, bool bias = true,
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

// 0 weight dq, 1 dq, 2 conv, 3 activation (unless act is empty), then q with (scale, zp).
inline Builder conv_act_graph(const std::string& act, Args act_args, double scale, int64_t zp) {
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

// dq(aq) (0.1, 0) + dq(bq) (0.2, 1) -> aten.add.Tensor (or `op`) -> s (`out` shape) -> q (0.3, 0)
// -> yq.
inline Builder add_graph(std::vector<int64_t> a_shape, std::vector<int64_t> b_shape,
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
inline Builder unary_graph(const std::string& op, std::vector<int64_t> in, Args args,
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

// xq [2, 8, 5, 5] -> dq -> `pool` -> q (0.05, -3) -> aq; then `head` builds the rest.
inline Builder pooled(const std::string& pool, Args args, std::vector<int64_t> out) {
  return unary_graph(pool, {2, 8, 5, 5}, std::move(args), std::move(out), 0.05, -3);
}

// conv_act_graph (no activation, output yq quantized with `dq_scale`, `dq_zp` unless
// `conv_zp` says otherwise) -> dq (`dq_scale`, `dq_zp`) -> `act` -> q (`scale`, `zp`, quant_min
// `qmin`) -> hq.
inline Builder standalone_act_graph(const std::string& act, Args act_args, double dq_scale,
                                    int64_t dq_zp, double scale, int64_t zp, int64_t qmin = -128,
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

}  // namespace vkd::compiler::fuse_test
