// Views of int8 data (view_copy, and what flatten / reshape / squeeze / unsqueeze become) and
// the copies that change nothing (clone / contiguous, and the ops that are the identity in eval
// mode: dropouts, stochastic depth), alone or in a chain of them (MoveChain.h: q -> dq pairs
// between the moves, as FX's reference graphs write each one).
// - dq -> moves -> q, where the q gives back every int8 value the dq read (the same
//   quantization on both sides; checked for all 256 values against the reference arithmetic)
//   => the view on the int8 data: identity where the packed shape is the same (free), else
//   q8ta_view (one kernel). The dq / q pair disappears.
// - Where the q has other parameters (FX observes a flatten before a classifier on its own)
//   => the view, then q8ta_clamp requantizing its int8 output with no bounds but the q's range,
//   when that gives what dq -> q gives for all 256 values (commit_requantized_view).
// - Such a view (or a view_copy of the int8 data itself) that flattens the [N, C, 1, 1] output
//   of a fused q8ta_mean into [N, C] (torch.flatten after a classifier's global pool) joins the
//   mean's match: q8ta_mean_flat writes the [N, C] rows itself, in the layout q8ta_linear reads,
//   so the head pool -> flatten -> linear needs no view kernel and no conversion. Not a
//   requantizing one: the mean's int8 output stays visible to the checks (commit_requantized_view).
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

// Commits view `v` of int8 value v.source (dequantized by node `dq` with `in_q`): folded into
// the q8ta_mean it flattens (when `fold_mean`), else identity / q8ta_view.
void commit_view(FuseState& state, int anchor, const Int8View& v, int dq, const QuantInfo& in_q,
                 bool fold_mean = true) {
  const Graph& g = state.graph;
  state.consume_quant(v.source, dq, in_q);
  if (Fusion* mean = fold_mean ? flattened_mean(state, v.source, v.output) : nullptr) {
    if (state.may_target("q8ta_mean_flat")) return fold_into_mean(state, *mean, v);
  }
  const bool free = same_packed_shape(g.value(v.source).shape, g.value(v.output).shape);
  Fusion f;
  f.nodes = v.nodes;
  f.dead = v.dead;
  f.node.op = free ? "identity" : "q8ta_view";
  f.node.inputs = {v.source};
  f.node.outputs = {v.output};
  if (!free) f.node.args["zero_point"] = in_q.zero_point;
  f.node.origin = state.fused_origin(anchor, f.node.op);
  state.produced[v.output] = *v.q;
  state.commit(std::move(f), v.chain, " (a view of the int8 data)");
}

}  // namespace

std::string commit_requantized_view(FuseState& state, int anchor, const MoveChain& c,
                                    const QuantInfo& in, const QuantInfo& out) {
  Graph& g = state.graph;
  if (!state.may_target("q8ta_clamp")) return "q8ta_clamp has no kernel yet (left to the host)";
  std::string why = check_clamp_requantization(in, out);
  if (!why.empty()) return "the view does not requantize, and q8ta_clamp after it: " + why;
  if (state.any_claimed(c.nodes)) return "overlaps another fused pattern";
  // The view writes a new int8 value, quantized as its input, over the full int8 range.
  std::vector<int> view_nodes(c.nodes.begin(), c.nodes.end() - 1);  // all but the final q
  const std::string moved = g.nodes[c.q].inputs.at(0);
  Value mid;
  mid.name = g.unique_name(moved + "_int8");
  mid.dtype = DType::Int8;
  mid.shape = g.value(c.output).shape;
  g.add_value(mid);
  QuantInfo mid_q = in;
  mid_q.quant_min = -128;
  mid_q.quant_max = 127;
  // Not folded into a q8ta_mean it flattens: the mean's own output (the graph's value, which
  // the q quantized) stays a tensor the device writes, for `vkd run --check` and the per-layer
  // comparison with PyTorch to see; a tie there would otherwise show up amplified in the
  // requantized value.
  commit_view(state, anchor,
              {c.source, mid.name, view_nodes, c.dead, mid_q, chain_label(g, view_nodes)}, c.dq, in,
              /*fold_mean=*/false);
  Fusion f;
  f.nodes = {c.q};
  f.node.op = "q8ta_clamp";
  f.node.inputs = {mid.name};
  f.node.outputs = {c.output};
  f.node.args = {{"input_scale", in.scale},         {"input_zero_point", in.zero_point},
                 {"output_scale", out.scale},       {"output_zero_point", out.zero_point},
                 {"activation_min", out.quant_min}, {"activation_max", out.quant_max}};
  f.node.origin = state.fused_origin(c.q, f.node.op);
  state.produced[c.output] = out;
  state.commit(std::move(f), "q",
               " (requantizes the view " + quoted(mid.name) + ": " + describe_quant(in) + " -> " +
                   describe_quant(out) + ")");
  return "";
}

void fuse_view(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return;
  if (fuse_move_chain(state, i)) return;  // it starts a chain with a permute or a 5-D tensor
  // Plain views of 5-D / 6-D tensors stay edge ops (fuse_and_lower reported them).
  if (g.value(n.inputs[0]).shape.size() > 4 || g.value(n.outputs[0]).shape.size() > 4) return;
  if (g.value(n.inputs[0]).dtype == DType::Int8) {
    if (n.op == kViewCopy) fuse_int8_view(state, i);
    return;  // int8 clones are lowered to identity
  }
  const std::optional<MoveChain> c = find_move_chain(g, i);
  // Tried once, from the chain's first move; a float chain with no quantize after it stays
  // float ops.
  if (!c || !c->float_domain() || c->moves.front() != i || c->q < 0) return;
  const std::string chain = chain_label(g, c->nodes);
  const bool free = same_packed_shape(g.value(c->source).shape, g.value(c->output).shape);
  const std::string backend = free ? "identity" : "q8ta_view";
  if (!state.allowed(i, backend)) return;
  auto fail = [&](const std::string& why) { state.not_fused(chain, c->nodes, backend, why); };

  QuantInfo in_q, out_q;
  std::string why = check_chain_quantization(g, *c, in_q, out_q);
  if (!why.empty()) return fail(why);
  if (!check_round_trip(in_q, out_q).empty()) {
    why = commit_requantized_view(state, i, *c, in_q, out_q);
    if (!why.empty()) fail(why);
    return;
  }
  if (state.any_claimed(c->nodes)) return fail("overlaps another fused pattern");
  commit_view(state, i, {c->source, c->output, c->nodes, c->dead, out_q, chain}, c->dq, in_q);
}

}  // namespace vkd::compiler::fusion
