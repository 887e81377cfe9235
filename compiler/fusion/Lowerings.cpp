// Direct lowerings: edge ops left after fusion that have a backend op of their own. Each reads
// its node, and either rewrites it in place (returning the backend op) or leaves it as it is
// (returning "") for the host.
#include <cstddef>
#include <utility>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/LowerAffine.h"
#include "compiler/fusion/Patterns.h"
#include "core/Error.h"

namespace vkd::compiler::fusion {
namespace {

// The input of a node with one (leading) input and one output, or nullptr: no unary lowering
// handles other nodes.
const Value* unary_input(const Graph& g, const Node& n) {
  const bool unary = n.inputs.size() >= 1 && !n.inputs[0].empty() && n.outputs.size() == 1;
  return unary ? &g.value(n.inputs[0]) : nullptr;
}

bool is_float32(const Value* in) { return in && in->dtype == DType::Float32; }

std::string origin_of(const Node& n, int where) {
  return "node " + std::to_string(where) + " (" + n.op + ")";
}

// Rewrites `n` (node `where`) into unary backend op `backend` with `args`, unless the options
// rule that op out; returns `backend`, or "" with `n` unchanged.
std::string rewrite_unary(FuseState& state, Node& n, int where, const std::string& backend,
                          Args args) {
  if (!state.may_target(backend)) return "";
  if (n.origin.empty()) n.origin = origin_of(n, where);
  n.op = backend;
  n.inputs.resize(1);
  n.args = std::move(args);
  return backend;
}

Args qparam_args(const QuantInfo& q) {
  return {{"scale", q.scale},
          {"zero_point", q.zero_point},
          {"quant_min", q.quant_min},
          {"quant_max", q.quant_max}};
}

}  // namespace

std::string lower_quantize(FuseState& state, Node& node, int where) {
  QuantInfo q;
  if (!unary_input(state.graph, node) || !check_q(state.graph, node, where, q).empty()) return "";
  // Its output's quantization is known even when the node stays on the host.
  state.produced[node.outputs[0]] = q;
  return rewrite_unary(state, node, where, "q8ta_quantize", qparam_args(q));
}

std::string lower_dequantize(FuseState& state, Node& node, int where) {
  QuantInfo q;
  if (!unary_input(state.graph, node)) return "";
  if (!check_activation_dq(state.graph, node, where, q).empty()) return "";
  state.consume_quant(node.inputs[0], where, q);
  return rewrite_unary(state, node, where, "q8ta_dequantize", qparam_args(q));
}

// clone / _clone_dim_order / alias_copy, and view_copy that only adds or drops leading 1s.
std::string lower_identity(FuseState& state, Node& node, int where) {
  const Value* in = unary_input(state.graph, node);
  if (!in) return "";
  const Value& out = state.graph.value(node.outputs[0]);
  const bool dtype_ok = !in->is_constant() && in->dtype == out.dtype &&
                        (in->dtype == DType::Float32 || in->dtype == DType::Float16 ||
                         in->dtype == DType::Int8 || in->dtype == DType::Int8x4);
  if (!dtype_ok) return "";
  if (node.op == kViewCopy && !same_packed_shape(in->shape, out.shape)) return "";
  return rewrite_unary(state, node, where, "identity", {});
}

// view_copy: identity where the packed shape is the same (free); otherwise, on int8
// activations, q8ta_view (one kernel; assign_int8x4 fills in its zero point once the
// quantization of the value is known). A float view that changes the packed shape stays for the
// host.
std::string lower_view(FuseState& state, Node& node, int where) {
  const std::string identity = lower_identity(state, node, where);
  if (!identity.empty()) return identity;
  const Value* in = unary_input(state.graph, node);
  if (!in || in->is_constant()) return "";
  const Value& out = state.graph.value(node.outputs[0]);
  const bool int8 = in->dtype == DType::Int8 || in->dtype == DType::Int8x4;
  if (!int8 || out.dtype != in->dtype) return "";
  return rewrite_unary(state, node, where, "q8ta_view", {});
}

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

// Float32 or float16 (pure data movement takes half precision too).
std::string lower_pixel_shuffle(FuseState& state, Node& node, int where) {
  const Value* in = unary_input(state.graph, node);
  if (!is_float32(in) && !(in && in->dtype == DType::Float16)) return "";
  const auto factor = opt_int(node, "upscale_factor");
  if (!factor || *factor < 1) return "";
  return rewrite_unary(state, node, where, "pixel_shuffle", {{"upscale_factor", *factor}});
}

// What the backend ops cannot express is an error naming the node, except under runnable_only,
// where the node stays an edge op for the host.
std::string lower_affine(FuseState& state, Node& node, int where) {
  const std::string at = origin_of(node, where);
  const std::string backend = affine_backend_op(node.op);
  const std::string why =
      state.may_target(backend) ? lower_affine_node(state.graph, node) : "it has no kernel yet";
  if (!why.empty()) {
    VKD_CHECK(state.options.runnable_only, ErrorCode::Unsupported, at, ": cannot lower to ",
              backend, ": ", why);
    state.note("not lowered: " + at + " as " + backend + ": " + why);
    return "";
  }
  if (node.origin.empty()) node.origin = at;
  for (const auto* list : {&node.inputs, &node.outputs}) {
    for (const auto& v : *list) {
      if (state.graph.value(v).dtype == DType::Int8) state.affine_int8.insert(v);
    }
  }
  return backend;
}

}  // namespace vkd::compiler::fusion
