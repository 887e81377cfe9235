// dq -> softmax | log_softmax (compiler/ops/Softmax.cpp) over the last dim [-> q] =>
// q8ta_softmax (the quantize folded in: int8 output in the input's layout) or, when no quantize
// alone follows, q8ta_softmax_dq (the float32 output the op wrote; whatever reads it is lowered
// on its own). The kernel computes in float32 with the device's exp and log: it agrees with the
// reference within float32 rounding, not bit for bit (runtime/ops/Softmax.h).
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

// "" when softmax `n` reads its rank-`rank` input along the last dim.
std::string check_last_dim(const Node& n, int64_t rank) {
  const std::optional<int64_t> dim = opt_int(n, "dim");
  if (!dim) return "dim is not an integer";
  if (*dim != rank - 1 && *dim != -1) {
    return "dim " + std::to_string(*dim) + " is not the last dim of a rank-" +
           std::to_string(rank) + " input (only the last dim is supported)";
  }
  return "";
}

// Whether the int8 variant takes `tail`: a quantize alone, into the full int8 range.
bool quantized_tail(const Tail& tail) {
  return tail.kind == Tail::Ok && tail.act < 0 && tail.out_q.quant_min == -128 &&
         tail.out_q.quant_max == 127;
}

}  // namespace

void fuse_softmax(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.outputs.size() != 1) return;
  const bool int8_out = quantized_tail(match_tail(g, n.outputs[0]));
  const std::string backend = int8_out ? "q8ta_softmax" : "q8ta_softmax_dq";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  // The float variant ends at the softmax: the tail's nodes stay for lowering on their own.
  const std::vector<int> nodes = int8_out ? m->nodes : std::vector<int>{m->dq, i};
  const std::string chain = int8_out ? m->chain : state.chain_of({m->dq}, i, {});
  QuantInfo in_q;
  std::string why = check_activation_dq(g, g.nodes[m->dq], m->dq, in_q);
  if (why.empty()) why = single_use(g, m->x);
  if (why.empty()) why = check_last_dim(n, static_cast<int64_t>(g.value(m->x).shape.size()));
  if (why.empty() && state.any_claimed(nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(chain, nodes, backend, why);

  Fusion f;
  f.nodes = nodes;
  f.dead = {m->x};
  Node& out = f.node;
  const std::string x_q = g.nodes[m->dq].inputs[0];
  out.op = backend;
  out.inputs = {x_q};
  out.args["input_scale"] = in_q.scale;
  out.args["input_zero_point"] = in_q.zero_point;
  out.args["log"] = n.op.find("log_softmax") != std::string::npos;
  if (int8_out) {
    f.dead.insert(f.dead.end(), m->tail.values.begin(), m->tail.values.end());
    out.outputs = {g.nodes[m->tail.q].outputs[0]};
    out.args["output_scale"] = m->tail.out_q.scale;
    out.args["output_zero_point"] = m->tail.out_q.zero_point;
    state.produced[out.outputs[0]] = m->tail.out_q;
  } else {
    out.outputs = {n.outputs[0]};
  }
  out.origin = state.fused_origin(i, backend);
  state.consume_quant(x_q, m->dq, in_q);
  state.commit(std::move(f), chain, "");
}

}  // namespace vkd::compiler::fusion
