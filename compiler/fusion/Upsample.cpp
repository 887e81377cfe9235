// dq -> aten.upsample_nearest2d | aten.upsample_bilinear2d (either overload) -> q =>
// q8ta_upsample_nearest2d | q8ta_upsample_bilinear2d. Nearest with the same scale and zero point
// on both sides moves bytes; otherwise the kernel requantizes (bilinear always: its one
// requantization). No activation is fused and there is no float-output variant.
#include "compiler/reference/Upsample.h"
#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

// "" when the anchor `n` (input dq `p`, matched `tail`) fits `backend`; fills the input
// qparams and the geometry.
std::string check_upsample(const Graph& g, const Node& n, int p, const Tail& tail,
                           const std::string& backend, QuantInfo& in_q, UpsampleArgs& a) {
  const std::string why = check_quantized_anchor(g, n, p, tail, backend, in_q);
  if (!why.empty()) return why;
  if (tail.out_q.quant_min != -128 || tail.out_q.quant_max != 127) {
    return "output range " + std::to_string(tail.out_q.quant_min) + ".." +
           std::to_string(tail.out_q.quant_max) + " is not the full int8 range";
  }
  return read_upsample_args(n, g.value(n.inputs[0]).shape, a);
}

}  // namespace

void fuse_upsample(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  const bool bilinear = is_bilinear_upsample(n.op);
  const std::string backend = bilinear ? "q8ta_upsample_bilinear2d" : "q8ta_upsample_nearest2d";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  auto fail = [&](const std::string& why) { state.not_fused(m->chain, m->nodes, backend, why); };

  QuantInfo in_q;
  UpsampleArgs a;
  const std::string why = check_upsample(g, n, m->dq, m->tail, backend, in_q, a);
  if (!why.empty()) return fail(why);
  Fusion f;
  f.nodes = m->nodes;
  if (state.any_claimed(f.nodes)) return fail("overlaps another fused pattern");
  f.dead = {m->x};
  f.dead.insert(f.dead.end(), m->tail.values.begin(), m->tail.values.end());
  Node& out = f.node;
  out.op = backend;
  const std::string x_q = g.nodes[m->dq].inputs[0];
  const std::string output = g.nodes[m->tail.q].outputs[0];
  out.inputs = {x_q};
  out.outputs = {output};
  out.args["input_scale"] = in_q.scale;
  out.args["input_zero_point"] = in_q.zero_point;
  if (bilinear) out.args["align_corners"] = a.align_corners;
  out.args["scales_h"] = a.scale_h;
  out.args["scales_w"] = a.scale_w;
  out.args["output_scale"] = m->tail.out_q.scale;
  out.args["output_zero_point"] = m->tail.out_q.zero_point;
  out.origin = state.fused_origin(i, out.op);
  state.produced[output] = m->tail.out_q;
  state.consume_quant(x_q, m->dq, in_q);
  const bool copies =
      !bilinear && in_q.scale == m->tail.out_q.scale && in_q.zero_point == m->tail.out_q.zero_point;
  state.commit(std::move(f), m->chain, copies ? " (bytes moved)" : " (requantized)");
}

}  // namespace vkd::compiler::fusion
