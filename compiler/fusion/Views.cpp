// Views of int8 data (view_copy, and what flatten / reshape / squeeze / unsqueeze become).
// - dq -> aten.view_copy -> q, where the q gives back every int8 value the dq read (the same
//   quantization on both sides; checked for all 256 values against the reference arithmetic)
//   => the view on the int8 data: identity where the packed shape is the same (free), else
//   q8ta_view (one kernel). The dq / q pair disappears.
// - Such a view (or a view_copy of the int8 data itself) that flattens the [N, C, 1, 1] output
//   of a fused q8ta_mean into [N, C] (torch.flatten after a classifier's global pool) joins the
//   mean's match: q8ta_mean_flat writes the [N, C] rows itself, in the layout q8ta_linear reads,
//   so the head pool -> flatten -> linear needs no view kernel and no conversion.
// Other view_copy nodes of int8 data are lowered on their own (lower_view, Lowerings.cpp).
#include <optional>
#include <utility>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/MoveChain.h"
#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

// A view of int8 data as matched: `source` (int8) viewed into `output` (int8) by `nodes`, whose
// intermediates are `dead`; `q` is the output's quantization when a q ends the chain.
struct Int8View {
  std::string source, output;
  std::vector<int> nodes;
  std::vector<std::string> dead;
  std::optional<QuantInfo> q;
  std::string chain;
};

// The committed q8ta_mean match writing `v` when `view` only drops its trailing 1 x 1 and
// nothing else reads `v`; else nullptr.
Fusion* flattened_mean(FuseState& state, const std::string& v, const std::string& output) {
  const Graph& g = state.graph;
  Fusion* f = state.fusion_writing(v);
  if (f == nullptr || f->node.op != "q8ta_mean" || !single_use(g, v).empty()) return nullptr;
  const std::vector<int64_t>& in = g.value(f->node.inputs.at(0)).shape;
  const std::vector<int64_t>& out = g.value(output).shape;
  return in.size() == 4 && out == std::vector<int64_t>{in[0], in[1]} ? f : nullptr;
}

// Folds view `m` into the mean match `f` that writes its source.
void fold_into_mean(FuseState& state, Fusion& f, const Int8View& m) {
  const std::string mean_output = f.node.outputs.at(0);
  const QuantInfo q = m.q ? *m.q : state.produced.at(mean_output);
  state.absorb(f, m.nodes, m.dead, m.output, q);
  f.node.op = "q8ta_mean_flat";
  f.node.origin += "_flat";  // "... fused into q8ta_mean" names the op it now is
  state.note("fused " + m.chain + " (" + node_list(m.nodes) + ") into q8ta_mean " +
             quoted(mean_output) + ": q8ta_mean_flat writes the " +
             shape_str(state.graph.value(m.output).shape) + " rows " + quoted(m.output) +
             " itself");
}

// A view_copy reading int8 data directly: only the flattened mean takes it here.
void fuse_int8_view(FuseState& state, int i) {
  const Node& n = state.graph.nodes[i];
  Int8View m{n.inputs[0], n.outputs[0], {i}, {}, std::nullopt, n.op};
  Fusion* mean = flattened_mean(state, m.source, m.output);
  if (mean != nullptr && state.may_target("q8ta_mean_flat")) fold_into_mean(state, *mean, m);
}

}  // namespace

void fuse_view(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return;
  if (fuse_move_chain(state, i)) return;  // it starts a chain with a permute or a 5-D tensor
  // Plain views of 5-D / 6-D tensors stay edge ops (fuse_and_lower reported them).
  if (g.value(n.inputs[0]).shape.size() > 4 || g.value(n.outputs[0]).shape.size() > 4) return;
  if (g.value(n.inputs[0]).dtype == DType::Int8) return fuse_int8_view(state, i);
  const bool free = same_packed_shape(g.value(n.inputs[0]).shape, g.value(n.outputs[0]).shape);
  const std::string backend = free ? "identity" : "q8ta_view";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  // A float view with no quantize after it stays a float op.
  if (!m || m->tail.kind == Tail::None) return;
  auto fail = [&](const std::string& why) { state.not_fused(m->chain, m->nodes, backend, why); };

  QuantInfo in_q;
  std::string why = check_activation_dq(g, g.nodes[m->dq], m->dq, in_q);
  if (why.empty()) why = single_use(g, m->x);
  if (why.empty() && m->tail.kind == Tail::Half) why = m->tail.why;
  if (why.empty() && m->tail.act >= 0) why = "an activation follows (a view fuses none)";
  if (why.empty()) why = check_round_trip(in_q, m->tail.out_q);
  if (!why.empty()) return fail(why);
  if (state.any_claimed(m->nodes)) return fail("overlaps another fused pattern");
  Int8View v{g.nodes[m->dq].inputs[0], g.nodes[m->tail.q].outputs[0], m->nodes, {m->x},
             m->tail.out_q, m->chain};
  v.dead.insert(v.dead.end(), m->tail.values.begin(), m->tail.values.end());
  state.consume_quant(v.source, m->dq, in_q);
  if (Fusion* mean = flattened_mean(state, v.source, v.output)) {
    if (state.may_target("q8ta_mean_flat")) return fold_into_mean(state, *mean, v);
  }
  Fusion f;
  f.nodes = v.nodes;
  f.dead = v.dead;
  f.node.op = backend;
  f.node.inputs = {v.source};
  f.node.outputs = {v.output};
  if (!free) f.node.args["zero_point"] = in_q.zero_point;
  f.node.origin = state.fused_origin(i, backend);
  state.produced[v.output] = m->tail.out_q;
  state.commit(std::move(f), m->chain, " (a view of the int8 data)");
}

}  // namespace vkd::compiler::fusion
