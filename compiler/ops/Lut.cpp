// The smooth activations: aten.hardswish, aten.hardsigmoid, aten.sigmoid, aten.tanh, aten.silu,
// aten.gelu, aten.elu, aten.leaky_relu. Between int8 tensors (dq -> op -> q) each becomes
// q8ta_lut: the 256 outputs are computed here, by the reference, and looked up on the GPU. A
// float aten.gelu that no int8 pattern took (a dynamically quantized FFN's, between q8da_linear)
// becomes float_gelu; the other float ones have no backend op and stay on the host.
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/Lowering.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"
#include "core/Error.h"

// CPU reference of the smooth activations (the ops an int8 graph computes by a 256-entry table,
// q8ta_lut): hardswish, hardsigmoid, leaky_relu, sigmoid, tanh, silu, gelu, elu. Each maps every
// float32 element x of 'self' to a float32, NaN propagating. Built with -ffp-contract=off
// (compiler/CMakeLists.txt), so every float32 operation below is rounded on its own.
//
// The piecewise-linear ones are the float32 operations of PyTorch's CPU kernels, in their order,
// so they agree with PyTorch bit for bit:
//   hardsigmoid(x) = min(max(x + 3, 0), 6) / 6
//   hardswish(x)   = (x * min(max(x + 3, 0), 6)) / 6
//   leaky_relu(x)  = x > 0 ? x : x * float32(negative_slope)
// The transcendental ones are evaluated in double from the float32 input and rounded once to
// float32 (PyTorch's vectorized kernels approximate the same functions to 1-2 ulp; the torch
// oracle checks them within 1e-5):
//   sigmoid(x)          = 1 / (1 + exp(-x))
//   tanh(x)             = tanh(x)
//   silu(x)             = x / (1 + exp(-x))
//   gelu(x, 'none')     = 0.5 * x * (1 + erf(x / sqrt(2)))
//   gelu(x, 'tanh')     = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//   elu(x)              = x > 0 ? x * scale : negcoef * expm1(x * input_scale)
// with elu's scale and input_scale as float32 and negcoef = float32(alpha) * float32(scale)
// rounded to float32, as PyTorch's kernel takes its coefficients.
//
// Between int8 tensors these functions are tables (q8ta_lut, fuse_lut below): entry
// v + 128 is the interpreter's dq -> f [-> clamp] -> q of int8 v, i.e.
//   x = float32(v - zp_in) * float32(s_in);  y = f(x) as above;
//   q = clamp(roundEven(float32(y * float32(1 / s_out))) + zp_out, quant_min, quant_max)
// (the project's quantize rounding, compiler/ops/QuantizeDequantize.cpp), so a fused graph equals
// the interpreter bit for bit.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// min(max(x + 3, 0), 6) in float32, NaN propagating (PyTorch's clamp of hardsigmoid and
// hardswish).
float relu6_of_x_plus_3(float x) {
  const float t = x + 3.0f;
  if (std::isnan(t)) return t;
  return t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t);
}

// `f` evaluated in double on every element, rounded once to float32.
std::vector<HostTensor> unary_double(const ReferenceContext& c, double (*f)(double)) {
  return unary_float(c, [f](float x) { return static_cast<float>(f(static_cast<double>(x))); });
}

double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double tanh_d(double x) { return std::tanh(x); }
double silu_d(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_erf_d(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_d(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

}  // namespace

std::vector<HostTensor> reference_hardsigmoid(const ReferenceContext& c) {
  return unary_float(c, [](float x) { return relu6_of_x_plus_3(x) / 6.0f; });
}

std::vector<HostTensor> reference_hardswish(const ReferenceContext& c) {
  return unary_float(c, [](float x) {
    const float t = x * relu6_of_x_plus_3(x);
    return t / 6.0f;
  });
}

std::vector<HostTensor> reference_leaky_relu(const ReferenceContext& c) {
  const float slope =
      static_cast<float>(c.present("negative_slope") ? c.float_arg("negative_slope") : 0.01);
  return unary_float(c, [slope](float x) { return x > 0.0f ? x : x * slope; });
}

std::vector<HostTensor> reference_sigmoid(const ReferenceContext& c) {
  return unary_double(c, sigmoid_d);
}

std::vector<HostTensor> reference_tanh(const ReferenceContext& c) {
  return unary_double(c, tanh_d);
}

std::vector<HostTensor> reference_silu(const ReferenceContext& c) {
  return unary_double(c, silu_d);
}

std::vector<HostTensor> reference_gelu(const ReferenceContext& c) {
  const std::string approximate = c.present("approximate") ? c.string_arg("approximate") : "none";
  c.require(approximate == "none" || approximate == "tanh",
            "approximate must be 'none' or 'tanh', got '" + approximate + "'");
  return unary_double(c, approximate == "tanh" ? gelu_tanh_d : gelu_erf_d);
}

std::vector<HostTensor> reference_elu(const ReferenceContext& c) {
  auto coefficient = [&](const char* name) {
    return static_cast<float>(c.present(name) ? c.float_arg(name) : 1.0);
  };
  const float alpha = coefficient("alpha"), scale = coefficient("scale");
  const float input_scale = coefficient("input_scale");
  const float negcoef = alpha * scale;
  return unary_float(c, [=](float x) {
    if (std::isnan(x) || x > 0.0f) return x * scale;
    const double e = std::expm1(static_cast<double>(x) * static_cast<double>(input_scale));
    return static_cast<float>(static_cast<double>(negcoef) * e);
  });
}

}  // namespace vkd::compiler

// dq -> <activation> [-> relu | hardtanh | clamp] -> q => q8ta_lut, for the smooth activations
// (below). An element-wise function between two fixed int8 quantizations
// maps each of the 256 int8 inputs to one int8 output, so the chain is computed here, ahead of
// time, and the kernel only looks it up: the table is what the reference interpreter itself
// computes for the chain's nodes on a tensor holding the 256 int8 values (dequantize, the
// activation evaluated as its reference defines it, any clamp, then the quantize's rounding). It
// is stored in the blob as a 256-entry int8 constant (entry v + 128 for input v), so the fused
// graph agrees with the interpreter bit for bit by construction.
namespace vkd::compiler::fusion {
namespace {

const char kLut[] = "q8ta_lut";

// The interpreter's output of chain `nodes` (the dq, the anchor, the tail: each reading the
// previous one's output through its only tensor input) for the int8 inputs -128 .. 127; "" in
// `why`, or why the interpreter (`interpret`, FuseState's) could not compute it.
std::vector<int8_t> chain_table(InterpretFn interpret, const Graph& g,
                                const std::vector<int>& nodes, std::string& why) {
  Graph t;
  Value in;
  in.name = "int8_values";
  in.dtype = DType::Int8;
  in.shape = {256};
  t.add_value(in);
  t.inputs = {in.name};
  std::string prev = in.name;
  for (int k : nodes) {
    Node n = g.nodes[k];
    const auto given = std::count_if(n.inputs.begin(), n.inputs.end(),
                                     [](const std::string& s) { return !s.empty(); });
    if (given != 1) {
      why = label(n) + " reads more than one tensor";
      return {};
    }
    n.inputs[0] = prev;
    prev = "chain_" + std::to_string(t.nodes.size());
    n.outputs = {prev};
    t.nodes.push_back(std::move(n));
  }
  t.outputs = {prev};
  std::vector<int8_t> values(256);
  for (int v = -128; v <= 127; ++v) values[static_cast<size_t>(v + 128)] = static_cast<int8_t>(v);
  try {
    return interpret(t, {{in.name, HostTensor::from_int8({256}, values)}}).at(prev).to_int8();
  } catch (const Error& e) {
    why = std::string("the reference cannot compute the table: ") + e.what();
    return {};
  }
}

// "" when the anchor's float output goes, through the tail, into a quantize.
std::string check_lut_tail(const Graph& g, const Node& anchor, const Tail& tail) {
  if (tail.kind == Tail::None) {
    return describe_consumers(g, anchor.outputs[0]) + " (" + kLut + " has int8 output only)";
  }
  return tail.kind == Tail::Half ? tail.why : "";
}

// The table as an int8 constant [256] of the graph, named after the chain's output.
std::string table_constant(Graph& g, const std::string& output, const std::vector<int8_t>& table) {
  Value v;
  v.name = g.unique_name(output + "_table");
  v.dtype = DType::Int8;
  v.shape = {256};
  v.data = std::vector<uint8_t>(table.begin(), table.end());
  g.add_value(v);
  return v.name;
}

// Whether `v` is float32 of rank 1 to 4 with int-indexable elements (float_gelu's tensors).
bool float_gelu_tensor(const Value& v) {
  return v.dtype == DType::Float32 && !v.shape.empty() && v.shape.size() <= 4 &&
         element_count(v.shape) <= std::numeric_limits<int32_t>::max();
}

}  // namespace

// A float32 aten.gelu left after fusion (neither q8ta_lut nor a linear's GELU epilogue took
// it): float_gelu, approximate 0 = 'none' (erf), 1 = 'tanh'. Its values are within 1e-6 |x| of
// the reference's, not its bits (shaders/float_elementwise.glsl).
std::string lower_float_gelu(FuseState& state, Node& node, int where) {
  const Value* in = unary_input(state.graph, node);
  if (in == nullptr || !float_gelu_tensor(*in)) return "";
  if (!float_gelu_tensor(state.graph.value(node.outputs[0]))) return "";
  const std::string approximate = opt_string(node, "approximate").value_or("none");
  if (approximate != "none" && approximate != "tanh") return "";
  return rewrite_unary(state, node, where, "float_gelu",
                       {{"approximate", int64_t{approximate == "tanh" ? 1 : 0}}});
}

void fuse_lut(FuseState& state, int i) {
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, kLut);
  if (!m) return;
  const Graph& g = state.graph;
  const Tail& tail = m->tail;
  QuantInfo in_q;
  std::string why = check_activation_dq(g, g.nodes[m->dq], m->dq, in_q);
  if (why.empty()) why = single_use(g, m->x);
  if (why.empty()) why = check_lut_tail(g, g.nodes[i], tail);
  if (why.empty() && state.any_claimed(m->nodes)) why = "overlaps another fused pattern";
  std::vector<int8_t> table;
  if (why.empty()) table = chain_table(state.interpret, g, m->nodes, why);
  if (!why.empty()) return state.not_fused(m->chain, m->nodes, kLut, why);

  Fusion f;
  f.nodes = m->nodes;
  f.dead = {m->x};
  f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
  Node& n = f.node;
  const std::string x_q = g.nodes[m->dq].inputs[0];
  const std::string output = g.nodes[tail.q].outputs[0];
  const std::string name = table_constant(state.graph, output, table);
  n.op = kLut;
  n.inputs = {x_q, name};
  n.outputs = {output};
  n.args["input_scale"] = in_q.scale;
  n.args["input_zero_point"] = in_q.zero_point;
  n.args["output_scale"] = tail.out_q.scale;
  n.args["output_zero_point"] = tail.out_q.zero_point;
  n.origin = state.fused_origin(i, n.op);
  state.produced[output] = tail.out_q;
  state.consume_quant(x_q, m->dq, in_q);
  const auto [lo, hi] = std::minmax_element(table.begin(), table.end());
  state.commit(std::move(f), m->chain,
               " (table " + quoted(name) + ", outputs " + std::to_string(*lo) + ".." +
                   std::to_string(*hi) + ")");
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

std::vector<TypedShape> gelu(const ShapeContext& c) {
  c.str_in("approximate", {"none", "tanh"}, true);
  return unary_float_shape(c);
}

// Number arguments `names` (absent: their default) are finite.
void finite_args(const ShapeContext& c, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const double v = c.opt_f64(name).value_or(1.0);
    if (!std::isfinite(v)) {
      c.fail(ShapeContext::arg_field(name), "expected a finite value, got ", v);
    }
  }
}

std::vector<TypedShape> elu(const ShapeContext& c) {
  finite_args(c, {"alpha", "scale", "input_scale"});
  return unary_float_shape(c);
}

std::vector<TypedShape> leaky_relu(const ShapeContext& c) {
  finite_args(c, {"negative_slope"});
  return unary_float_shape(c);
}

// An activation of one float32 'self' with `args`, computed by `reference` and fused into
// q8ta_lut.
EdgeOp table_op(const char* name, std::vector<EdgeArg> args, ShapeRule rule,
                ReferenceFn reference) {
  return EdgeOp{name, {"self"}, 1, std::move(args), 1, rule}.computed_by(reference).fused_by(
      fusion::fuse_lut, {"q8ta_lut"});
}

EdgeArg number(const char* name, double def) {
  return optional_arg(name, Lit::Number, ArgValue(def), false);
}

}  // namespace

std::vector<EdgeOp> lut_edge_ops() {
  return {
      table_op("aten.hardswish", {}, unary_float_shape, reference_hardswish),
      table_op("aten.hardsigmoid", {}, unary_float_shape, reference_hardsigmoid),
      table_op("aten.sigmoid", {}, unary_float_shape, reference_sigmoid),
      table_op("aten.tanh", {}, unary_float_shape, reference_tanh),
      table_op("aten.silu", {}, unary_float_shape, reference_silu),
      table_op("aten.gelu",
               {optional_arg("approximate", Lit::String, ArgValue(std::string("none")), false)},
               gelu, reference_gelu)
          .lowered_by(fusion::lower_float_gelu, {"float_gelu"}),
      table_op("aten.elu", {number("alpha", 1.0), number("scale", 1.0), number("input_scale", 1.0)},
               elu, reference_elu),
      table_op("aten.leaky_relu", {number("negative_slope", 0.01)}, leaky_relu,
               reference_leaky_relu),
  };
}

}  // namespace vkd::compiler
