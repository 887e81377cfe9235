// aten.layer_norm (nn.LayerNorm, F.layer_norm). Over the last dim of a dequantized int8 tensor
// it becomes q8ta_layer_norm (followed by a quantize: int8 output) or q8ta_layer_norm_dq (float32
// output); over a float32 tensor whose output a quantize reads layer_norm_q (int8 output) or
// layer_norm_dual (float32 and int8 outputs), else the float op layer_norm. Weight and bias must
// be float32 constants (ones / zeros are written for a LayerNorm without them).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of aten.layer_norm. It computes in double from the float32 inputs and rounds
// each output once to float32; PyTorch computes in float32, so the two agree to a few float32
// ulps (the torch oracle checks 1e-5), not bit for bit.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

// aten.layer_norm(input, normalized_shape, weight, bias, eps): each row of the last
// prod(normalized_shape) elements is normalized by its own mean and biased variance:
//   y = (x - mean) / sqrt(var + eps) * weight + bias     (weight 1, bias 0 when absent)
// mean and var = mean((x - mean)^2) in double (two passes), as nn.LayerNorm defines them.
std::vector<HostTensor> reference_layer_norm(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  const HostTensor* weight = c.optional_input(1, "weight");
  const HostTensor* bias = c.optional_input(2, "bias");
  const int64_t row = element_count(c.ints_arg("normalized_shape"));
  c.require(row > 0 && x.numel() % row == 0,
            "normalized_shape does not divide the input into rows");
  for (const HostTensor* t : {weight, bias}) {
    if (t != nullptr) {
      c.expect_dtype(*t, DType::Float32, "weight / bias");
      c.require(t->numel() == row, "weight / bias must have normalized_shape's elements");
    }
  }
  const double eps = c.float_arg("eps");
  HostTensor y = make_tensor(DType::Float32, x.shape);
  for (int64_t first = 0; first < x.numel(); first += row) {
    double mean = 0.0;
    for (int64_t i = 0; i < row; ++i) mean += get_f32(x, first + i);
    mean /= static_cast<double>(row);
    double var = 0.0;
    for (int64_t i = 0; i < row; ++i) {
      const double d = get_f32(x, first + i) - mean;
      var += d * d;
    }
    var /= static_cast<double>(row);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < row; ++i) {
      double v = (get_f32(x, first + i) - mean) * rstd;
      if (weight != nullptr) v *= get_f32(*weight, i);
      if (bias != nullptr) v += get_f32(*bias, i);
      set_f32(y, first + i, static_cast<float>(v));
    }
  }
  return {y};
}

}  // namespace vkd::compiler

// dq -> aten.layer_norm over the last dim [-> q] => q8ta_layer_norm (the quantize folded in:
// int8 output in the input's layout) or, when no quantize alone follows, q8ta_layer_norm_dq (the
// float32 output; whatever reads it is lowered on its own). The kernel's arithmetic
// (shaders/q8ta_layer_norm.glsl), with L the row's length and x = s (q - zp):
//   S1 = sum q, S2 = sum q^2, D = L S2 - S1^2      exact integers (the zero point drops out)
//   y  = float32(L q - S1) * inversesqrt(float32(D) + float32(eps L^2 / s^2)) * weight + bias
//   q_out = clamp(roundEven(y * float32(1 / s_out)) + zp_out, -128, 127)
// which is (x - mean) / sqrt(var + eps) * weight + bias with the mean and the variance exact,
// the rest in float32 (each operation rounded on its own, the device's inversesqrt): against
// PyTorch's dq -> float32 layer_norm -> q, an int8 result differs by 1 at a rounding tie only.
// aten.layer_norm over a float32 tensor [-> clones] whose output a quantize (full int8 range)
// reads => layer_norm_q (the int8 output alone) or, when something else reads the float output too
// (a transformer's residual add) or it is a graph output, layer_norm_dual (both outputs in one
// dispatch). The float32 y is layer_norm's bit for bit and the int8 output is q8ta_quantize's
// bytes of that y (shaders/q8ta_layer_norm.glsl): the fusion changes no value. A leftover
// aten.layer_norm on a float32 tensor is lowered to layer_norm (float32 statistics).
// All take a row of at most 65536 elements and weight / bias given as float32 constants.
namespace vkd::compiler::fusion {
namespace {

// The longest row the kernel normalizes (runtime/ops/LayerNorm.cpp: |L q - S1| < 2^24).
constexpr int64_t kMaxRow = 65536;

// "" when layer norm `n` of a rank-`shape` input normalizes the last dim alone, in a row the
// kernel takes.
std::string check_last_dim(const Node& n, const std::vector<int64_t>& shape) {
  const std::optional<std::vector<int64_t>> normalized = opt_ints(n, "normalized_shape");
  if (!normalized) return "normalized_shape is not a list of integers";
  if (normalized->size() != 1) {
    return "normalized_shape " + shape_str(*normalized) +
           " spans more than the last dim (only the last dim is supported)";
  }
  if (shape.empty() || shape.size() > 4) {
    return "input shape " + shape_str(shape) + ": ranks 1 to 4 are supported";
  }
  if (shape.back() > kMaxRow) {
    return "rows of " + std::to_string(shape.back()) + " elements: at most " +
           std::to_string(kMaxRow) + " are supported";
  }
  return "";
}

// Input `k` (weight 1, bias 2) as a float32 constant of `row` elements: its name; for an absent
// one a new constant of `fill` (when `add` is set, else ""); `why` set when it is no constant.
std::string affine_constant(FuseState& state, const Node& n, size_t k, int64_t row, float fill,
                            bool add, std::string& why) {
  if (!why.empty()) return "";
  const char* what = k == 1 ? "weight" : "bias";
  if (k < n.inputs.size() && !n.inputs[k].empty()) {
    const Value& v = state.graph.value(n.inputs[k]);
    if (!v.is_constant() || v.dtype != DType::Float32 || element_count(v.shape) != row) {
      why = std::string(what) + " " + quoted(v.name) + " is not a float32 constant of " +
            std::to_string(row) + " elements";
    }
    return v.name;
  }
  if (!add) return "";
  Value v;
  v.name = state.graph.unique_name(n.outputs[0] + "_" + what);
  v.dtype = DType::Float32;
  v.shape = {row};
  std::vector<float> values(static_cast<size_t>(row), fill);
  v.data = std::vector<uint8_t>(values.size() * sizeof(float));
  std::memcpy(v.data->data(), values.data(), v.data->size());
  return state.graph.add_value(v).name;
}

// Whether the int8 variant takes `tail`: a quantize alone, into the full int8 range.
bool quantized_tail(const Tail& tail) {
  return tail.kind == Tail::Ok && tail.act < 0 && tail.out_q.quant_min == -128 &&
         tail.out_q.quant_max == 127;
}

// "" when eps fits the int8 kernel: finite, >= 0, and eps L^2 / s^2 finite in float32.
std::string check_eps(double eps, int64_t row, const QuantInfo& in_q) {
  const double s = static_cast<float>(in_q.scale);
  if (!(std::isfinite(eps) && eps >= 0)) return "eps " + fmt(eps) + " is not finite and >= 0";
  const double eps_q = eps * static_cast<double>(row) * static_cast<double>(row) / (s * s);
  if (!(eps_q <= 3.0e38)) return "eps " + fmt(eps) + " over the input's squared scale overflows";
  return "";
}

// Layer norm `i` over a float32 input: layer_norm_q / layer_norm_dual when a quantize reads its
// output (through clones); else nothing (lower_layer_norm makes it the float op).
void fuse_float_layer_norm(FuseState& state, int i) {
  Graph& g = state.graph;
  const Node& n = g.nodes[i];
  const Value& in = g.value(n.inputs[0]);
  if (in.dtype != DType::Float32) return;
  // The float output `y`: the layer norm's, or that of the clones (eval dropout) it alone feeds.
  std::vector<int> tail;
  std::vector<std::string> dead;
  std::string y = n.outputs[0];
  while (!g.is_graph_output(y)) {
    const std::vector<int> readers = g.consumers(y);
    if (readers.size() != 1 || !is_clone(g.nodes[readers[0]].op) ||
        g.nodes[readers[0]].outputs.size() != 1) {
      break;
    }
    dead.push_back(y);
    tail.push_back(readers[0]);
    y = g.nodes[readers[0]].outputs[0];
  }
  int q = -1;
  std::vector<int> others;
  for (int c : g.consumers(y)) {
    if (q < 0 && g.nodes[c].op == kQ) {
      q = c;
    } else {
      others.push_back(c);
    }
  }
  if (q < 0) return;  // nothing quantizes it: the float op layer_norm
  tail.push_back(q);
  const bool dual = !others.empty() || g.is_graph_output(y);
  const std::string backend = dual ? "layer_norm_dual" : "layer_norm_q";
  if (!state.allowed(i, backend)) return;
  std::vector<int> nodes = {i};
  nodes.insert(nodes.end(), tail.begin(), tail.end());
  const std::string chain = state.chain_of({}, i, tail);
  const int64_t row = in.shape.empty() ? 0 : in.shape.back();
  QuantInfo out_q;
  std::string why = check_q(g, g.nodes[q], q, out_q);
  if (why.empty() && (out_q.quant_min != -128 || out_q.quant_max != 127)) {
    why = "the quantize's range " + std::to_string(out_q.quant_min) + ".." +
          std::to_string(out_q.quant_max) + " is not the full int8 range";
  }
  if (why.empty()) why = check_last_dim(n, in.shape);
  const double eps = opt_float(n, "eps").value_or(1e-5);
  if (why.empty() && !(std::isfinite(eps) && eps >= 0)) why = "eps is not finite and >= 0";
  affine_constant(state, n, 1, row, 1.0f, false, why);
  affine_constant(state, n, 2, row, 0.0f, false, why);
  // The fused node takes the quantize's place: the float output's readers must come after it.
  for (int r : others) {
    if (why.empty() && r < q) {
      why = "node " + std::to_string(r) + " reads the float output before the quantize (node " +
            std::to_string(q) + ")";
    }
  }
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(chain, nodes, backend, why);

  Fusion f;
  f.nodes = nodes;
  f.dead = dead;
  if (!dual) f.dead.push_back(y);
  Node& out = f.node;
  out.op = backend;
  out.inputs = {n.inputs[0], affine_constant(state, n, 1, row, 1.0f, true, why),
                affine_constant(state, n, 2, row, 0.0f, true, why)};
  out.args["eps"] = eps;
  out.args["output_scale"] = out_q.scale;
  out.args["output_zero_point"] = out_q.zero_point;
  const std::string yq = g.nodes[q].outputs[0];
  out.outputs = dual ? std::vector<std::string>{y, yq} : std::vector<std::string>{yq};
  state.produced[yq] = out_q;
  out.origin = state.fused_origin(i, backend);
  std::string detail = " (rows of " + std::to_string(row) + ", eps " + fmt(eps);
  if (dual) {
    detail += "; int8 " + quoted(yq) + ", float32 also read by " +
              (others.empty() ? std::string("the graph's outputs") : node_list(others));
  }
  state.commit(std::move(f), chain, detail + ")");
}

}  // namespace

void fuse_layer_norm(FuseState& state, int i) {
  Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0].empty()) return;
  if (!node_is(g, g.producer(n.inputs[0]), kDq)) return fuse_float_layer_norm(state, i);
  const bool int8_out = quantized_tail(match_tail(g, n.outputs[0]));
  const std::string backend = int8_out ? "q8ta_layer_norm" : "q8ta_layer_norm_dq";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  // The float variant ends at the layer norm: the tail's nodes stay for lowering on their own.
  const std::vector<int> nodes = int8_out ? m->nodes : std::vector<int>{m->dq, i};
  const std::string chain = int8_out ? m->chain : state.chain_of({m->dq}, i, {});
  const std::vector<int64_t> shape = g.value(m->x).shape;
  const int64_t row = shape.empty() ? 0 : shape.back();
  QuantInfo in_q;
  std::string why = check_activation_dq(g, g.nodes[m->dq], m->dq, in_q);
  if (why.empty()) why = single_use(g, m->x);
  if (why.empty()) why = check_last_dim(n, shape);
  const double eps = opt_float(n, "eps").value_or(1e-5);
  if (why.empty()) why = check_eps(eps, row, in_q);
  affine_constant(state, n, 1, row, 1.0f, false, why);
  affine_constant(state, n, 2, row, 0.0f, false, why);
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(chain, nodes, backend, why);

  Fusion f = state.dq_anchor_fusion(i, *m, nodes, backend, in_q, int8_out);
  // The absent weight / bias are added only now that the match is taken.
  f.node.inputs.push_back(affine_constant(state, n, 1, row, 1.0f, true, why));
  f.node.inputs.push_back(affine_constant(state, n, 2, row, 0.0f, true, why));
  f.node.args["eps"] = eps;
  state.commit(std::move(f), chain, " (rows of " + std::to_string(row) + ", eps " + fmt(eps) + ")");
}

// A float32 layer norm over the last dim, weight / bias float32 constants (or absent): the float
// op layer_norm; else "" (the host runs it).
std::string lower_layer_norm(FuseState& state, Node& node, int where) {
  const Value* in = node.inputs.empty() ? nullptr : &state.graph.value(node.inputs[0]);
  if (!is_float32(in) || node.outputs.size() != 1 || !state.may_target("layer_norm")) return "";
  const int64_t row = in->shape.empty() ? 0 : in->shape.back();
  std::string why = check_last_dim(node, in->shape);
  const double eps = opt_float(node, "eps").value_or(1e-5);
  if (why.empty() && !(std::isfinite(eps) && eps >= 0)) why = "eps is not finite and >= 0";
  affine_constant(state, node, 1, row, 1.0f, false, why);
  affine_constant(state, node, 2, row, 0.0f, false, why);
  if (!why.empty()) {
    state.note("not lowered: node " + std::to_string(where) +
               " (aten.layer_norm) as layer_norm: " + why);
    return "";
  }
  const std::string weight = affine_constant(state, node, 1, row, 1.0f, true, why);
  const std::string bias = affine_constant(state, node, 2, row, 0.0f, true, why);
  if (node.origin.empty()) node.origin = origin_of(node, where);
  node.op = "layer_norm";
  node.inputs = {node.inputs[0], weight, bias};
  node.args = {{"eps", eps}};
  return "layer_norm";
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// float32 'input' whose last dims are normalized_shape (non-empty, each >= 1); 'weight' and
// 'bias', when given, float32 of normalized_shape. float32 of the input's shape.
std::vector<TypedShape> layer_norm(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.dtype(x, "input", DType::Float32);
  const std::vector<int64_t> normalized = c.ints("normalized_shape");
  const bool fits = !normalized.empty() && normalized.size() <= x.shape.size() &&
                    std::equal(normalized.begin(), normalized.end(),
                               x.shape.end() - static_cast<std::ptrdiff_t>(normalized.size()));
  if (!fits) {
    c.fail(ShapeContext::arg_field("normalized_shape"), shape_str(normalized),
           " must be the last dims of the input ", shape_str(x.shape));
  }
  for (const char* name : {"weight", "bias"}) {
    if (const Value* v = c.opt_in(name)) {
      c.dtype(*v, name, DType::Float32);
      c.shape(*v, name, normalized, "(normalized_shape)");
    }
  }
  (void)c.opt_f64("eps");  // a number (the parser checks the literal kind)
  return {{DType::Float32, x.shape}};
}

}  // namespace

std::vector<EdgeOp> layer_norm_edge_ops() {
  return {EdgeOp{"aten.layer_norm",
                 {"input", "weight", "bias"},
                 1,
                 {required_arg("normalized_shape", Lit::Ints),
                  optional_arg("eps", Lit::Number, ArgValue(1e-5), false),
                  optional_arg("cudnn_enable", Lit::Bool, ArgValue(true), false)},
                 1,
                 layer_norm}
              .computed_by(reference_layer_norm)
              .fused_by(fusion::fuse_layer_norm, {"q8ta_layer_norm", "q8ta_layer_norm_dq",
                                                  "layer_norm_q", "layer_norm_dual"})
              .lowered_by(fusion::lower_layer_norm, {"layer_norm"})};
}

}  // namespace vkd::compiler
