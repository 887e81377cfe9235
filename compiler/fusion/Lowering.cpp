// The helpers of the direct lowerings (Lowering.h).
#include "compiler/fusion/Lowering.h"

#include <utility>

namespace vkd::compiler::fusion {

const Value* unary_input(const Graph& g, const Node& n) {
  const bool unary = n.inputs.size() >= 1 && !n.inputs[0].empty() && n.outputs.size() == 1;
  return unary ? &g.value(n.inputs[0]) : nullptr;
}

bool is_float32(const Value* in) { return in && in->dtype == DType::Float32; }

std::string origin_of(const Node& n, int where) {
  return "node " + std::to_string(where) + " (" + n.op + ")";
}

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

std::string int8x4_constant(Graph& g, const std::string& name) {
  Value v = g.value(name);
  v.name = g.unique_name(name + "_int8x4");
  v.dtype = DType::Int8x4;
  v.weights_name.clear();
  const std::string copy = v.name;
  g.add_value(std::move(v));
  return copy;
}

}  // namespace vkd::compiler::fusion
