// aten.add.Tensor, aten.mul.Tensor, aten.div.Tensor, aten.mul.Scalar, aten.rsub.Scalar and the
// activations aten.relu, aten.hardtanh, aten.clamp, aten.clamp_min: int8 fusions, and the float
// forms lowered to runtime/ops/FloatElementwise's float_* ops (float relu and hardtanh: no
// kernel yet).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/ops/ShapeFormulas.h"
#include "compiler/reference/QuantChain.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of the element-wise ops: add, mul, div, relu, hardtanh, clamp (semantics above each
// function). Built with -ffp-contract=off (compiler/CMakeLists.txt), so add's alpha product
// and sum are rounded on their own.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// Strides of `in_shape` (C order) seen through `out_shape` (numpy broadcasting, right-aligned).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> strides(out_shape.size(), 0);
  int64_t s = 1;
  for (size_t k = 0; k < in_shape.size(); ++k) {
    const size_t din = in_shape.size() - 1 - k, dout = out_shape.size() - 1 - k;
    strides[dout] = in_shape[din] == 1 ? 0 : s;
    s *= in_shape[din];
  }
  return strides;
}

// The broadcast shape of `a` and `b` (numpy rules), or a failure naming both.
std::vector<int64_t> broadcast_shape(const ReferenceContext& c, const HostTensor& a,
                                     const HostTensor& b) {
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> shape(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < a.shape.size() ? a.shape[a.shape.size() - 1 - k] : 1;
    const int64_t db = k < b.shape.size() ? b.shape[b.shape.size() - 1 - k] : 1;
    c.require(da == db || da == 1 || db == 1,
              detail::concat("shapes ", shape_str(a.shape), " and ", shape_str(b.shape),
                             " do not broadcast"));
    shape[rank - 1 - k] = da == 1 ? db : da;
  }
  return shape;
}

// Element-wise `f32` (float32 tensors) or `i32` (int32 tensors) of self and other, broadcast.
std::vector<HostTensor> binary(const ReferenceContext& c, const char* what,
                               const std::function<float(float, float)>& f32,
                               const std::function<int32_t(int32_t, int32_t)>& i32) {
  const HostTensor& a = c.input(0, "self");
  const HostTensor& b = c.input(1, "other");
  c.require(a.dtype == b.dtype,
            detail::concat("self is ", to_string(a.dtype), ", other is ", to_string(b.dtype)));
  if (a.dtype != DType::Float32 && a.dtype != DType::Int32) {
    c.fail(ErrorCode::Unsupported, detail::concat(what, " of ", to_string(a.dtype)));
  }
  const std::vector<int64_t> shape = broadcast_shape(c, a, b);
  HostTensor out = make_tensor(a.dtype, shape);
  const std::vector<std::vector<int64_t>> strides = {broadcast_strides(a.shape, shape),
                                                     broadcast_strides(b.shape, shape)};
  const bool is_float = a.dtype == DType::Float32;
  strided_loop(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
    if (is_float) {
      set_f32(out, i, f32(get_f32(a, off[0]), get_f32(b, off[1])));
    } else {
      set_i32(out, i, i32(get_i32(a, off[0]), get_i32(b, off[1])));
    }
  });
  return {out};
}

// int32 results of uint32 arithmetic: wrapping like PyTorch's int32 ops (no signed overflow).
int32_t wrapped(uint32_t v) { return static_cast<int32_t>(v); }

}  // namespace

// aten.add.Tensor: numpy broadcasting; out = a + b when alpha == 1, else a + float(alpha) * b
//   (PyTorch's vectorized CPU kernel fuses the alpha multiply-add, its scalar tail does not, so
//   alpha != 1 can differ from PyTorch in the last bit). int32 tensors: a + alpha * b, wrapping.
std::vector<HostTensor> reference_add(const ReferenceContext& c) {
  if (c.input(0, "self").dtype == DType::Int32) {
    const auto alpha = static_cast<uint32_t>(c.int_arg("alpha", 1));
    return binary(c, "add", nullptr, [alpha](int32_t a, int32_t b) {
      return wrapped(static_cast<uint32_t>(a) + alpha * static_cast<uint32_t>(b));
    });
  }
  const double alpha_d = c.present("alpha") ? c.float_arg("alpha") : 1.0;
  const float alpha = static_cast<float>(alpha_d);
  if (alpha_d == 1.0) return binary(c, "add", [](float a, float b) { return a + b; }, nullptr);
  return binary(
      c, "add",
      [alpha](float a, float b) {
        const float scaled = alpha * b;
        return a + scaled;
      },
      nullptr);
}

// aten.mul.Tensor: numpy broadcasting; out = a * b (float32: one rounding; int32: wrapping).
std::vector<HostTensor> reference_mul(const ReferenceContext& c) {
  return binary(
      c, "mul", [](float a, float b) { return a * b; },
      [](int32_t a, int32_t b) {
        return wrapped(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
      });
}

// aten.div.Tensor: numpy broadcasting; out = a / b, float32 only, one rounding (IEEE: x / 0 is
//   +-inf, 0 / 0 NaN, as in PyTorch). PyTorch's int32 true division gives float; not taken here.
std::vector<HostTensor> reference_div(const ReferenceContext& c) {
  c.expect_dtype(c.input(0, "self"), DType::Float32, "self");
  return binary(c, "div", [](float a, float b) { return a / b; }, nullptr);
}

// aten.mul.Scalar: out = x * float32(other) for float32 x, one rounding (PyTorch's CPU kernel
//   converts the scalar to the tensor's float type, then multiplies).
std::vector<HostTensor> reference_mul_scalar(const ReferenceContext& c) {
  const float m = static_cast<float>(c.float_arg("other"));
  return unary_float(c, [m](float x) { return x * m; });
}

// aten.rsub.Scalar(self, other, alpha=1): out = float32(other) - float32(alpha) * x for float32
//   x, as PyTorch's CPU kernel computes it (alpha 1: one rounding). Host only: an attention
//   mask made from a 0/1 token mask, (1 - mask) * -10000.
std::vector<HostTensor> reference_rsub_scalar(const ReferenceContext& c) {
  const float other = static_cast<float>(c.float_arg("other"));
  const float alpha = static_cast<float>(c.present("alpha") ? c.float_arg("alpha") : 1.0);
  return unary_float(c, [other, alpha](float x) { return other - alpha * x; });
}

// aten.relu: x < 0 ? 0 : x.   aten.hardtanh / aten.clamp: min(max(x, lo), hi) with the bounds
//   as float32 (an absent clamp bound is not applied; lo > hi gives hi, as in PyTorch); NaN
//   propagates through all three.
std::vector<HostTensor> reference_relu(const ReferenceContext& c) {
  return unary_float(c, [](float x) { return x < 0.0f ? 0.0f : x; });
}

std::vector<HostTensor> reference_hardtanh(const ReferenceContext& c) {
  const float lo = static_cast<float>(c.present("min_val") ? c.float_arg("min_val") : -1.0);
  const float hi = static_cast<float>(c.present("max_val") ? c.float_arg("max_val") : 1.0);
  return unary_float(c, [lo, hi](float x) { return clamp_float(x, lo, hi); });
}

// aten.clamp_min(self, min): max(x, float32(min)), NaN propagating (aten.clamp with only min).
std::vector<HostTensor> reference_clamp_min(const ReferenceContext& c) {
  const float lo = static_cast<float>(c.float_arg("min"));
  return unary_float(c, [lo](float x) { return clamp_float(x, lo, std::nullopt); });
}

std::vector<HostTensor> reference_clamp(const ReferenceContext& c) {
  std::optional<float> lo, hi;
  if (c.present("min")) lo = static_cast<float>(c.float_arg("min"));
  if (c.present("max")) hi = static_cast<float>(c.float_arg("max"));
  c.require(lo || hi, "clamp needs at least one of min and max");
  return unary_float(c, [lo, hi](float x) { return clamp_float(x, lo, hi); });
}

}  // namespace vkd::compiler

// Standalone int8 activations: dq -> aten.relu | aten.hardtanh | aten.clamp [-> act] -> q, where
// PyTorch left the activation apart from the op before it (FX keeps a ReLU6 after an add, or
// after an op it did not fuse with).
// - When the dequantized int8 value is the output of a fused int8 op with an activation range
//   (q8ta_conv2d[_ps / _add], q8ta_linear[_add], q8ta_add, q8ta_mul, q8ta_batch_norm; the range
//   of an op with a fused add is the sum's) that nothing else reads, and the q quantizes with
//   the scale and zero point that op wrote, the chain joins the op's epilogue: the op writes the
//   q's output itself, its activation range narrowed to the chain's clamp.
// - Otherwise the chain becomes q8ta_clamp (one requantizing kernel).
// A multiplication by a scalar constant, dq -> aten.mul (by a number or a one-element constant)
// [-> act] -> q, is the same requantizing kernel with the scalar as a factor: q8ta_mul_scalar.
// Neither range comes from an argument about rounding: the chain is computed as the reference
// interpreter computes it for every int8 value it can read, and it fuses only when the backend
// arithmetic (a clamp of the op's output; q8ta_clamp's requantization) gives the same values, so
// the two graphs agree bit for bit.
namespace vkd::compiler::fusion {
namespace {

// The int8 ops whose requantizing epilogue clamps to [activation_min, activation_max].
bool has_activation_range(const std::string& op) {
  return op == "q8ta_conv2d" || op == "q8ta_conv2d_ps" || op == "q8ta_conv2d_add" ||
         op == "q8ta_conv_transpose2d" || op == "q8ta_linear" || op == "q8ta_linear_add" ||
         op == "q8ta_add" || op == "q8ta_mul" || op == "q8ta_batch_norm";
}

// A matched dq -> act [-> act] -> q chain reading the int8 value `x_q`, or dq -> mul by a scalar
// [-> act] -> q (backend q8ta_mul_scalar).
struct ActChain {
  std::vector<int> nodes;  // dq, the anchor, the tail's nodes
  std::string chain;       // "dq -> aten.hardtanh -> q"
  std::string x_q, output;
  QuantInfo in_q, out_q;
  std::vector<FloatClamp> clamps;
  std::string backend = "q8ta_clamp";
  float multiplier = 1.0f;  // the scalar of q8ta_mul_scalar
};

// "" when `c` can join the epilogue of match `f` (which writes c.x_q).
std::string check_epilogue(FuseState& state, const Fusion& f, const ActChain& c) {
  if (!has_activation_range(f.node.op)) return f.node.op + " has no activation range";
  const std::string why = state.read_as_written(c.x_q, c.in_q);
  if (!why.empty()) return why;
  if (!same_scale_and_zero_point(c.in_q, c.out_q)) {
    return "the q (" + describe_quant(c.out_q) + ") requantizes (the dq is " +
           describe_quant(c.in_q) + ")";
  }
  return "";
}

// The range [lo, hi] such that the chain maps every int8 value v the op writes (its range
// [min, max]) to clamp(v, lo, hi); "" or the first value where the chain is not such a clamp.
std::string narrowed_range(const ActChain& c, int64_t min, int64_t max, Activation& range) {
  range.min = reference_dq_clamp_q(min, c.in_q, c.clamps, c.out_q);
  range.max = reference_dq_clamp_q(max, c.in_q, c.clamps, c.out_q);
  for (int64_t v = min; v <= max; ++v) {
    const int64_t got = reference_dq_clamp_q(v, c.in_q, c.clamps, c.out_q);
    if (range.min > range.max || got != std::min(std::max(v, range.min), range.max)) {
      return "the chain maps int8 value " + std::to_string(v) + " to " + std::to_string(got) +
             ", not a clamp of the op's output";
    }
  }
  return "";
}

// Folds chain `c` into match `f`: it now writes c.output, clamped to `range`.
void join_epilogue(FuseState& state, Fusion& f, const ActChain& c, const Activation& range,
                   const std::vector<std::string>& dead) {
  const int64_t old_min = std::get<int64_t>(f.node.args.at("activation_min"));
  const int64_t old_max = std::get<int64_t>(f.node.args.at("activation_max"));
  state.absorb(f, c.nodes, dead, c.output, c.out_q);
  f.node.args["activation_min"] = range.min;
  f.node.args["activation_max"] = range.max;
  state.note("fused " + c.chain + " (" + node_list(c.nodes) + ") into the epilogue of " +
             f.node.op + ": it writes " + quoted(c.output) + ", activation range " +
             std::to_string(old_min) + ".." + std::to_string(old_max) + " -> " +
             std::to_string(range.min) + ".." + std::to_string(range.max));
}

// The range [lo, hi] for which q8ta_clamp computes the chain for all 256 int8 inputs; "" or the
// first input where no range does.
std::string clamp_kernel_range(const ActChain& c, Activation& range) {
  range.min = 127;
  range.max = -128;
  for (int64_t v = -128; v <= 127; ++v) {
    const int64_t want = reference_dq_clamp_q(v, c.in_q, c.clamps, c.out_q, c.multiplier);
    range.min = std::min(range.min, want);
    range.max = std::max(range.max, want);
  }
  for (int64_t v = -128; v <= 127; ++v) {
    const int64_t want = reference_dq_clamp_q(v, c.in_q, c.clamps, c.out_q, c.multiplier);
    const int64_t got = requantize_clamp(v, c.in_q, c.out_q, range.min, range.max, c.multiplier);
    if (got != want) {
      return "int8 value " + std::to_string(v) + " requantizes to " + std::to_string(got) +
             ", the chain gives " + std::to_string(want);
    }
  }
  return "";
}

// Replaces chain `c` (anchor `i`, dq node `p`) by a q8ta_clamp (q8ta_mul_scalar) node, or
// reports why not. `folded`: a scalar's weight dequantize the node no longer reads.
void fuse_clamp_kernel(FuseState& state, int i, int p, const ActChain& c,
                       const std::vector<std::string>& dead,
                       const std::vector<std::string>& folded = {}) {
  Activation range;
  std::string why = state.may_target(c.backend) ? clamp_kernel_range(c, range)
                                                : "it has no kernel yet (left to the host)";
  if (!why.empty()) return state.not_fused(c.chain, c.nodes, c.backend, why);
  Fusion f;
  f.nodes = c.nodes;
  f.dead = dead;
  f.folded = folded;
  Node& n = f.node;
  n.op = c.backend;
  if (c.backend == "q8ta_mul_scalar") n.args["scalar"] = static_cast<double>(c.multiplier);
  n.inputs = {c.x_q};
  n.outputs = {c.output};
  n.args["input_scale"] = c.in_q.scale;
  n.args["input_zero_point"] = c.in_q.zero_point;
  n.args["output_scale"] = c.out_q.scale;
  n.args["output_zero_point"] = c.out_q.zero_point;
  n.args["activation_min"] = range.min;
  n.args["activation_max"] = range.max;
  n.origin = state.fused_origin(i, n.op);
  state.produced[c.output] = c.out_q;
  state.consume_quant(c.x_q, p, c.in_q);
  const std::string scalar =
      c.backend == "q8ta_mul_scalar" ? "scalar " + fmt(c.multiplier) + ", " : "";
  state.commit(std::move(f), c.chain,
               " (" + scalar + "activation range " + std::to_string(range.min) + ".." +
                   std::to_string(range.max) + ")");
}

// "" when chain `c` (anchor `i` reading dq node `p`'s output `x`, `tail` after the anchor;
// `anchor_clamps`: the anchor is an activation) is a quantized chain the routes can take; fills
// its parameters.
std::string read_chain(const Graph& g, int i, int p, const std::string& x, const Tail& tail,
                       bool anchor_clamps, ActChain& c) {
  std::string why = check_activation_dq(g, g.nodes[p], p, c.in_q);
  if (why.empty()) why = single_use(g, x);
  if (why.empty() && tail.kind == Tail::Half) why = tail.why;
  if (!why.empty()) return why;
  c.out_q = tail.out_q;
  c.output = g.nodes[tail.q].outputs[0];
  std::vector<int> acts;
  if (anchor_clamps) acts.push_back(i);
  if (tail.act >= 0) acts.push_back(tail.act);
  return activation_clamps(g, acts, c.clamps);
}

}  // namespace

void fuse_activation(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return;
  const int p = g.producer(n.inputs[0]);
  if (!node_is(g, p, kDq)) return;  // not a quantized pattern
  const Tail tail = match_tail(g, n.outputs[0]);
  // No quantize after it: a float activation, lowered on its own.
  if (tail.kind == Tail::None || tail.q < 0) return;
  ActChain c;
  c.nodes = {p, i};
  c.nodes.insert(c.nodes.end(), tail.nodes.begin(), tail.nodes.end());
  c.chain = state.chain_of({p}, i, tail.nodes);
  c.x_q = g.nodes[p].inputs[0];
  std::string why = read_chain(g, i, p, n.inputs[0], tail, true, c);
  if (why.empty() && state.any_claimed(c.nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(c.chain, c.nodes, "q8ta_clamp", why);
  std::vector<std::string> dead = {n.inputs[0]};
  dead.insert(dead.end(), tail.values.begin(), tail.values.end());
  if (Fusion* f = state.fusion_writing(c.x_q)) {
    Activation range;
    why = check_epilogue(state, *f, c);
    if (why.empty()) {
      why = narrowed_range(c, std::get<int64_t>(f->node.args.at("activation_min")),
                           std::get<int64_t>(f->node.args.at("activation_max")), range);
    }
    if (why.empty()) return join_epilogue(state, *f, c, range, dead);
    state.not_fused(c.chain, c.nodes, "the epilogue of " + f->node.op, why);
  }
  fuse_clamp_kernel(state, i, p, c, dead);
}

// The multiplication by a scalar, shared by aten.mul.Scalar's pattern and aten.mul.Tensor's
// (fuse_mul) when one operand is a one-element constant: dq -> mul (node `i`, whose input
// `x_input` is the dequantized value) [-> act] -> q => q8ta_mul_scalar with `scalar` as float32.
// `scalar_dq`: the weight dequantize the scalar came through ("" for none), folded away when
// nothing else reads it.
void fuse_scaled_chain(FuseState& state, int i, int x_input, float scalar,
                       const std::string& scalar_dq) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  const std::string& x = n.inputs[static_cast<size_t>(x_input)];
  const int p = g.producer(x);
  if (!node_is(g, p, kDq)) return;  // not a quantized pattern
  const Tail tail = match_tail(g, n.outputs[0]);
  // No quantize after it: a float multiplication, left to the host.
  if (tail.kind == Tail::None || tail.q < 0) return;
  if (!state.allowed(i, "q8ta_mul_scalar")) return;
  ActChain c;
  c.backend = "q8ta_mul_scalar";
  c.multiplier = scalar;
  c.nodes = {p, i};
  c.nodes.insert(c.nodes.end(), tail.nodes.begin(), tail.nodes.end());
  c.chain = state.chain_of({p}, i, tail.nodes);
  c.x_q = g.nodes[p].inputs[0];
  std::string why = read_chain(g, i, p, x, tail, false, c);
  if (why.empty() && g.value(n.outputs[0]).shape != g.value(x).shape) {
    why = "the scalar " + quoted(n.inputs[static_cast<size_t>(1 - x_input)]) + " broadcasts " +
          shape_str(g.value(x).shape) + " to " + shape_str(g.value(n.outputs[0]).shape);
  }
  if (why.empty() && state.any_claimed(c.nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(c.chain, c.nodes, c.backend, why);
  std::vector<std::string> dead = {x};
  dead.insert(dead.end(), tail.values.begin(), tail.values.end());
  fuse_clamp_kernel(
      state, i, p, c, dead,
      scalar_dq.empty() ? std::vector<std::string>{} : std::vector<std::string>{scalar_dq});
}

void fuse_mul_scalar(FuseState& state, int i) {
  const Node& n = state.graph.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return;
  const std::optional<double> m = opt_float(n, "other");
  if (!m) return;  // shape inference refuses it before
  fuse_scaled_chain(state, i, 0, static_cast<float>(*m), "");
}

// The binary element-wise patterns (neither has a float-output variant):
//   dq(a), dq(b) -> aten.add.Tensor [-> act] -> q => q8ta_add, or the epilogue of the conv /
//   linear writing a or b (compiler/fusion/Epilogue.cpp: q8ta_conv2d_add, q8ta_linear_add)
//   dq(a), dq(b) -> aten.mul.Tensor [-> act] -> q => q8ta_mul
// and aten.mul.Tensor with one operand a one-element constant (float32, or an int8 constant
// behind a dequantize) => q8ta_mul_scalar (fuse_scaled_chain above).
namespace {

// The backend op of a binary pattern and how the reports write its edge op.
struct BinaryKind {
  const char* backend;  // "q8ta_add"
  const char* name;     // "add"
  const char* symbol;   // "+"
};
constexpr BinaryKind kAddKind{"q8ta_add", "add", "+"};
constexpr BinaryKind kMulKind{"q8ta_mul", "mul", "*"};

// Operand shapes q8ta_add / q8ta_mul take (runtime/ops/Elementwise.h): equal, or one of them 4-D
// [N or 1, C, 1, 1] (N, C of the other, itself 4-D) or [1, 1, 1, 1].
bool binary_broadcast_supported(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a == b) return true;
  auto small_of = [](const std::vector<int64_t>& full, const std::vector<int64_t>& s) {
    if (full.size() != 4 || s.size() != 4 || s[2] != 1 || s[3] != 1) return false;
    return (s[0] == 1 && s[1] == 1) || ((s[0] == 1 || s[0] == full[0]) && s[1] == full[1]);
  };
  return small_of(a, b) || small_of(b, a);
}

// Why operand `other` (produced by node `producer`, or -1) keeps the add from matching.
std::string not_dequantized(const Graph& g, const std::string& other, int producer) {
  const Value& ov = g.value(other);
  const std::string from = producer >= 0      ? "produced by " + g.nodes[producer].op
                           : ov.is_constant() ? "a constant"
                                              : "a graph input";
  return quoted(other) + " is not dequantized (" + from + ")";
}

// "" when add / mul `n` (operands dequantized by nodes `pa`, `pb`) and its `tail` fit the
// backend op, filling the operands' qparams; checked in the order the reasons are reported.
// One operand may be an int8 constant of the other's shape (constant_operand).
std::string check_binary(const Graph& g, const Node& n, const BinaryKind& kind, int pa, int pb,
                         const Tail& tail, QuantInfo& qa, QuantInfo& qb) {
  const std::string &a = n.inputs[0], &b = n.inputs[1];
  if (!node_is(g, pa, kDq)) return not_dequantized(g, a, pa);
  if (!node_is(g, pb, kDq)) return not_dequantized(g, b, pb);
  const bool ca = !constant_operand(g, pa).empty(), cb = !constant_operand(g, pb).empty();
  if ((ca || cb) && (ca == cb || g.value(a).shape != g.value(b).shape)) {
    return std::string("a constant operand needs an activation of its shape (") +
           shape_str(g.value(a).shape) + " " + kind.symbol + " " + shape_str(g.value(b).shape) +
           ")";
  }
  std::string why = check_operand_dq(g, pa, ca, qa);
  if (why.empty()) why = check_operand_dq(g, pb, cb, qb);
  if (why.empty()) why = single_use(g, a);
  if (why.empty() && b != a) why = single_use(g, b);
  if (!why.empty()) return why;
  if (arg_present(n, "alpha")) {
    const auto alpha = opt_float(n, "alpha");
    if (!alpha || *alpha != 1.0) return "alpha is not 1";
  }
  const std::string backend = kind.backend;
  if (!binary_broadcast_supported(g.value(a).shape, g.value(b).shape)) {
    return std::string("broadcasting ") + kind.name + " (" + shape_str(g.value(a).shape) + " " +
           kind.symbol + " " + shape_str(g.value(b).shape) + "; " + backend +
           " broadcasts only a 4-D [N or 1, C, 1, 1] or [1, 1, 1, 1] operand)";
  }
  if (tail.kind == Tail::None) {
    return describe_consumers(g, n.outputs[0]) + " (" + backend + " has no float-output variant)";
  }
  return tail.kind == Tail::Half ? tail.why : "";
}

Node build_binary(FuseState& state, const std::string& backend, int i, int pa, int pb,
                  const Tail& tail, const QuantInfo& qa, const QuantInfo& qb) {
  Graph& g = state.graph;
  Node out;
  out.op = backend;
  const std::string ca = constant_operand(g, pa), cb = constant_operand(g, pb);
  const std::string a_q = ca.empty() ? g.nodes[pa].inputs[0] : int8x4_constant(g, ca);
  const std::string b_q = cb.empty() ? g.nodes[pb].inputs[0] : int8x4_constant(g, cb);
  out.inputs = {a_q, b_q};
  out.args["a_scale"] = qa.scale;
  out.args["a_zero_point"] = qa.zero_point;
  out.args["b_scale"] = qb.scale;
  out.args["b_zero_point"] = qb.zero_point;
  out.args["output_scale"] = tail.out_q.scale;
  out.args["output_zero_point"] = tail.out_q.zero_point;
  out.args["activation_min"] = tail.activation.min;
  out.args["activation_max"] = tail.activation.max;
  const std::string output = g.nodes[tail.q].outputs[0];
  out.outputs = {output};
  out.origin = state.fused_origin(i, out.op);
  state.produced[output] = tail.out_q;
  if (ca.empty()) state.consume_quant(a_q, pa, qa);
  if (cb.empty()) state.consume_quant(b_q, pb, qb);
  return out;
}

// dq(a), dq(b) -> `kind` [-> act] -> q anchored at node `i`.
void fuse_binary(FuseState& state, int i, const BinaryKind& kind) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return;
  const std::string a = n.inputs[0], b = n.inputs[1];
  const int pa = g.producer(a), pb = g.producer(b);
  const bool da = node_is(g, pa, kDq), db = node_is(g, pb, kDq);
  if (!da && !db) return;  // not a quantized pattern
  if (!state.allowed(i, kind.backend)) return;
  std::vector<int> head;
  if (da) head.push_back(pa);
  if (db && pb != pa) head.push_back(pb);
  const Tail tail = match_tail(g, n.outputs[0]);
  std::vector<int> all = head;
  all.push_back(i);
  all.insert(all.end(), tail.nodes.begin(), tail.nodes.end());
  const std::string chain = state.chain_of(head, i, tail.nodes);
  auto fail = [&](const std::string& why) { state.not_fused(chain, all, kind.backend, why); };

  QuantInfo qa, qb;
  const std::string why = check_binary(g, n, kind, pa, pb, tail, qa, qb);
  if (!why.empty()) return fail(why);
  if (state.any_claimed(all)) return fail("overlaps another fused pattern");
  std::vector<std::string> dead = {a};
  if (b != a) dead.push_back(b);
  dead.insert(dead.end(), tail.values.begin(), tail.values.end());
  const bool constant = !constant_operand(g, pa).empty() || !constant_operand(g, pb).empty();
  if (std::string(kind.backend) == kAddKind.backend && !constant) {
    const AddCandidate epilogue{{g.nodes[pa].inputs[0], g.nodes[pb].inputs[0]},
                                {pa, pb},
                                {qa, qb},
                                all,
                                dead,
                                g.nodes[tail.q].outputs[0],
                                tail.out_q,
                                tail.activation,
                                chain};
    if (join_add_epilogue(state, epilogue)) return;
  }
  Fusion f;
  f.nodes = all;
  f.dead = dead;
  f.node = build_binary(state, kind.backend, i, pa, pb, tail, qa, qb);
  state.commit(std::move(f), chain, " (activation " + tail.activation.label + ")");
}

// A one-element operand of a mul and where it comes from.
struct ScalarOperand {
  float value = 0.0f;
  std::string dq;  // the weight dequantize it comes through, "" for a float32 constant
};

// `v` as a scalar operand: a float32 constant of one element, or the dequantize (per tensor) of
// an int8 constant of one element, valued as the reference's dequantize computes it:
// float32(q - zero_point) * float32(scale). nullopt for anything else.
std::optional<ScalarOperand> scalar_operand(const Graph& g, const std::string& v) {
  const Value& val = g.value(v);
  if (element_count(val.shape) != 1) return std::nullopt;
  if (val.is_constant()) {
    if (val.dtype != DType::Float32) return std::nullopt;
    return ScalarOperand{reference::bits_to_float(reference::load_u32(val.data->data())), ""};
  }
  const int p = g.producer(v);
  if (!node_is(g, p, kDq)) return std::nullopt;
  const Node& dq = g.nodes[p];
  const Value& q = g.value(dq.inputs[0]);
  QuantInfo info;
  if (!q.is_constant() || q.dtype != DType::Int8 || !read_qparams(dq, info).empty()) {
    return std::nullopt;
  }
  const auto code = static_cast<int8_t>((*q.data)[0]);
  return ScalarOperand{static_cast<float>(code - info.zero_point) * static_cast<float>(info.scale),
                       v};
}

}  // namespace

void fuse_add(FuseState& state, int i) { fuse_binary(state, i, kAddKind); }

void fuse_mul(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.size() < 2 || n.outputs.size() != 1) return;
  for (int x = 0; x < 2; ++x) {  // one operand dequantized, the other a scalar
    const std::optional<ScalarOperand> s = scalar_operand(g, n.inputs[static_cast<size_t>(1 - x)]);
    if (s && node_is(g, g.producer(n.inputs[static_cast<size_t>(x)]), kDq)) {
      return fuse_scaled_chain(state, i, x, s->value, s->dq);
    }
  }
  fuse_binary(state, i, kMulKind);
}

// The direct lowerings of what fusion leaves (Patterns.h's DirectLowering).

std::string lower_relu(FuseState& state, Node& node, int where) {
  if (!is_float32(unary_input(state.graph, node))) return "";
  return rewrite_unary(state, node, where, "relu", {});
}

// aten.hardtanh and aten.clamp, with their float bounds (±inf where absent).
std::string lower_clamp(FuseState& state, Node& node, int where) {
  if (!is_float32(unary_input(state.graph, node))) return "";
  double lo = 0, hi = 0;
  if (!activation_bounds(node, lo, hi).empty()) return "";
  return rewrite_unary(state, node, where, "clamp", {{"min", lo}, {"max", hi}});
}

// The float32 forms (runtime/ops/FloatElementwise.h), on tensors of rank 1 to 4: what a
// quantizer leaves float (a transformer's residual stream, its attention mask, the pooling).

namespace {

// Whether every tensor node `n` reads and writes is float32 of rank 1 to 4, its elements
// indexable with int (the kernel's limit).
bool float_ranks_1_to_4(const Graph& g, const Node& n) {
  std::vector<std::string> values = n.inputs;
  values.insert(values.end(), n.outputs.begin(), n.outputs.end());
  for (const std::string& v : values) {
    if (v.empty()) return false;
    const Value& val = g.value(v);
    if (val.dtype != DType::Float32 || val.shape.empty() || val.shape.size() > 4) return false;
    if (element_count(val.shape) > std::numeric_limits<int32_t>::max()) return false;
  }
  return !values.empty();
}

// Rewrites `n` (node `where`) into float backend op `backend` with `args`; "" when the options
// rule it out or a tensor is not float32 of rank 1 to 4 (the host runs it).
std::string rewrite_float(FuseState& state, Node& n, int where, size_t inputs,
                          const std::string& backend, Args args) {
  if (n.inputs.size() != inputs || n.outputs.size() != 1 || !state.may_target(backend)) return "";
  if (!float_ranks_1_to_4(state.graph, n)) return "";
  if (n.origin.empty()) n.origin = origin_of(n, where);
  n.op = backend;
  n.args = std::move(args);
  return backend;
}

// Number argument `name` (shape inference checked its kind), `absent` when absent or None. The
// runtime rounds it to float32 once, as the references do.
double arg_or(const Node& n, const char* name, double absent) {
  return opt_float(n, name).value_or(absent);
}

}  // namespace

// aten.add.Tensor (alpha too), aten.mul.Tensor, aten.div.Tensor: float_add / _mul / _div, the
// operands broadcast by the kernel (either may be a float32 constant).
std::string lower_float_add(FuseState& state, Node& node, int where) {
  return rewrite_float(state, node, where, 2, "float_add", {{"alpha", arg_or(node, "alpha", 1.0)}});
}

std::string lower_float_mul(FuseState& state, Node& node, int where) {
  return rewrite_float(state, node, where, 2, "float_mul", {});
}

std::string lower_float_div(FuseState& state, Node& node, int where) {
  return rewrite_float(state, node, where, 2, "float_div", {});
}

// aten.mul.Scalar: x * other + (-0.0), which adds nothing to any product (-0.0 included).
std::string lower_float_mul_scalar(FuseState& state, Node& node, int where) {
  const std::optional<double> m = opt_float(node, "other");
  if (!m) return "";
  return rewrite_float(state, node, where, 1, "float_affine_scalar",
                       {{"multiplier", *m}, {"addend", -0.0}});
}

// aten.rsub.Scalar(x, other, alpha): other - alpha * x = x * (-alpha) + other, the same two
// roundings (negation is exact).
std::string lower_float_rsub_scalar(FuseState& state, Node& node, int where) {
  const std::optional<double> other = opt_float(node, "other");
  if (!other) return "";
  return rewrite_float(state, node, where, 1, "float_affine_scalar",
                       {{"multiplier", -arg_or(node, "alpha", 1.0)}, {"addend", *other}});
}

// aten.clamp and aten.clamp_min: float_clamp, an absent bound -inf / +inf (never applied).
std::string lower_float_clamp(FuseState& state, Node& node, int where) {
  const double inf = std::numeric_limits<double>::infinity();
  return rewrite_float(state, node, where, 1, "float_clamp",
                       {{"min", arg_or(node, "min", -inf)}, {"max", arg_or(node, "max", inf)}});
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// Two float32 tensors that broadcast.
std::vector<TypedShape> binary_float(const ShapeContext& c) {
  const Value& a = c.in("self");
  const Value& b = c.in("other");
  c.dtype(a, "self", DType::Float32);
  c.dtype(b, "other", DType::Float32);
  std::vector<int64_t> out;
  if (!broadcast_shapes(a.shape, b.shape, &out)) {
    c.fail(c.input_field("other"), "shape ", shape_str(b.shape),
           " does not broadcast with self shape ", shape_str(a.shape));
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> add(const ShapeContext& c) {
  if (c.node().args.count("alpha") != 0) (void)c.f64("alpha");
  return binary_float(c);
}

std::vector<TypedShape> clamp_min(const ShapeContext& c) {
  (void)c.f64("min");
  return unary_float_shape(c);
}

std::vector<TypedShape> mul_scalar(const ShapeContext& c) {
  (void)c.f64("other");
  return unary_float_shape(c);
}

std::vector<TypedShape> hardtanh(const ShapeContext& c) {
  std::vector<TypedShape> out = unary_float_shape(c);
  const double lo = c.opt_f64("min_val").value_or(-1.0);
  const double hi = c.opt_f64("max_val").value_or(1.0);
  if (!(lo <= hi)) {
    c.fail(c.arg_field("min_val"), "min_val ", lo, " is greater than max_val ", hi);
  }
  return out;
}

std::vector<TypedShape> clamp(const ShapeContext& c) {
  std::vector<TypedShape> out = unary_float_shape(c);
  const std::optional<double> lo = c.opt_f64("min");
  const std::optional<double> hi = c.opt_f64("max");
  if (!lo && !hi) c.fail("arguments 'min'/'max'", "at least one of min and max must not be None");
  return out;
}

// What a standalone activation becomes: the requantizing epilogue of the int8 op before it, or
// its own requantizing kernel.
const std::vector<std::string> kStandaloneActOps = {
    "q8ta_conv2d", "q8ta_conv2d_ps", "q8ta_conv2d_add", "q8ta_linear", "q8ta_linear_add",
    "q8ta_add",    "q8ta_mul",       "q8ta_batch_norm", "q8ta_clamp"};

}  // namespace

std::vector<EdgeOp> elementwise_edge_ops() {
  return {
      EdgeOp{"aten.add.Tensor",
             {"self", "other"},
             2,
             {optional_arg("alpha", Lit::Number, ArgValue(int64_t{1}), false)},
             1,
             add}
          .computed_by(reference_add)
          .fused_by(fusion::fuse_add, {"q8ta_add", "q8ta_conv2d_add", "q8ta_linear_add"})
          .lowered_by(fusion::lower_float_add, {"float_add"}),
      EdgeOp{"aten.mul.Tensor", {"self", "other"}, 2, {}, 1, binary_float}
          .computed_by(reference_mul)
          .fused_by(fusion::fuse_mul, {"q8ta_mul", "q8ta_mul_scalar"})
          .lowered_by(fusion::lower_float_mul, {"float_mul"}),
      EdgeOp{"aten.div.Tensor", {"self", "other"}, 2, {}, 1, binary_float}
          .computed_by(reference_div)
          .lowered_by(fusion::lower_float_div, {"float_div"}),
      EdgeOp{"aten.mul.Scalar", {"self"}, 1, {required_arg("other", Lit::Number)}, 1, mul_scalar}
          .computed_by(reference_mul_scalar)
          .fused_by(fusion::fuse_mul_scalar, {"q8ta_mul_scalar"})
          .lowered_by(fusion::lower_float_mul_scalar, {"float_affine_scalar"}),
      EdgeOp{"aten.rsub.Scalar",
             {"self"},
             1,
             {required_arg("other", Lit::Number),
              optional_arg("alpha", Lit::Number, ArgValue(int64_t{1}), false)},
             1,
             unary_float_shape}
          .computed_by(reference_rsub_scalar)
          .lowered_by(fusion::lower_float_rsub_scalar, {"float_affine_scalar"}),
      EdgeOp{"aten.relu", {"self"}, 1, {}, 1, unary_float_shape}
          .computed_by(reference_relu)
          .fused_by(fusion::fuse_activation, kStandaloneActOps)
          .lowered_by(fusion::lower_relu, {"relu"}),
      EdgeOp{"aten.hardtanh",
             {"self"},
             1,
             {optional_arg("min_val", Lit::Number, ArgValue(-1.0), false),
              optional_arg("max_val", Lit::Number, ArgValue(1.0), false)},
             1,
             hardtanh}
          .computed_by(reference_hardtanh)
          .fused_by(fusion::fuse_activation, kStandaloneActOps)
          .lowered_by(fusion::lower_clamp, {"clamp"}),
      EdgeOp{"aten.clamp",
             {"self"},
             1,
             {optional_arg("min", Lit::Number), optional_arg("max", Lit::Number)},
             1,
             clamp}
          .computed_by(reference_clamp)
          .fused_by(fusion::fuse_activation, kStandaloneActOps)
          .lowered_by(fusion::lower_float_clamp, {"float_clamp"}),
      EdgeOp{"aten.clamp_min", {"self"}, 1, {required_arg("min", Lit::Number)}, 1, clamp_min}
          .computed_by(reference_clamp_min)
          .lowered_by(fusion::lower_float_clamp, {"float_clamp"}),
  };
}

}  // namespace vkd::compiler
