// Data movement: aten.view_copy, aten.clone, aten.alias_copy, aten._clone_dim_order.
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/fusion/MoveChain.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"
#include "core/TensorLimits.h"

// CPU reference of the ops that copy a tensor unchanged or reshape it: view_copy, clone,
// alias_copy, _clone_dim_order (semantics above each function). Host tensors are always in logical
// C order, so the bytes are copied as they are.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

// aten.clone / aten.alias_copy / aten._clone_dim_order: copies (host tensors are always logical
//   C order, so a dim_order does not change the bytes).
std::vector<HostTensor> reference_copy(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  return {x};
}

// aten.view_copy: the input's bytes with the `size` argument as shape (one -1 is inferred).
std::vector<HostTensor> reference_view_copy(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  std::vector<int64_t> size = c.ints_arg("size");
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      c.require(infer < 0, "size has more than one -1");
      infer = static_cast<int>(i);
    } else {
      c.require(size[i] >= 0, detail::concat("invalid size ", shape_str(size)));
      known *= size[i];
    }
  }
  if (infer >= 0) {
    c.require(known != 0 && x.numel() % known == 0,
              detail::concat("size ", shape_str(size), " is invalid for ", x.numel(), " elements"));
    size[static_cast<size_t>(infer)] = x.numel() / known;
  }
  c.require(element_count(size) == x.numel(),
            detail::concat("size ", shape_str(size), " is invalid for ", x.numel(), " elements"));
  HostTensor out = x;
  out.shape = size;
  return {out};
}

}  // namespace vkd::compiler

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
// Other view_copy nodes of int8 data are lowered on their own (lower_view, below).
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

// The direct lowerings of what fusion leaves (Patterns.h's DirectLowering).

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

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// What a chain of views and clones on quantized data becomes (fuse_view; with a permute or a 5-D
// tensor in it, compiler/ops/Permute.cpp's data movement; a view requantizing into a q8ta_clamp
// after it).
std::vector<std::string> moved_by_ops() {
  return {"identity",     "q8ta_view", "q8ta_mean_flat", "q8ta_channel_shuffle",
          "q8ta_permute", "q8ta_clamp"};
}

std::vector<TypedShape> view_copy(const ShapeContext& c) {
  const Value& x = c.in("self");
  std::vector<int64_t> size = c.ints("size");  // any graph rank (5-D inside channel shuffles)
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] == -1) {
      if (infer >= 0) c.fail(c.arg_field("size"), "-1 appears more than once in ", shape_str(size));
      infer = static_cast<int>(i);
    } else if (size[i] < 0) {
      c.fail(c.arg_field("size"), "invalid dimension ", size[i], " in ", shape_str(size));
    } else if (size[i] > 0 && known > kMaxTensorElements / size[i]) {
      // (a product that wraps could equal the input's count: [2^62 + 1, 4] has "4" elements)
      c.fail(c.arg_field("size"), shape_str(size), " has more elements than a tensor may (",
             kMaxTensorElements, ")");
    } else {
      known *= size[i];
    }
  }
  const int64_t total = element_count(x.shape);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      c.fail(c.arg_field("size"), shape_str(size), " is invalid for input of shape ",
             shape_str(x.shape), " (", total, " elements)");
    }
    size[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    c.fail(c.arg_field("size"), shape_str(size), " has ", known, " elements, but the input shape ",
           shape_str(x.shape), " has ", total);
  }
  return {{x.dtype, size}};
}

std::vector<TypedShape> clone_like(const ShapeContext& c) {
  const Value& x = c.in("self");
  if (c.node().args.count("memory_format") != 0) (void)c.opt_str("memory_format");
  return {{x.dtype, x.shape}};
}

std::vector<TypedShape> clone_dim_order(const ShapeContext& c) {
  const Value& x = c.in("self");
  (void)c.flag_or("non_blocking", false);
  if (arg_present(c.node(), "dim_order")) {
    std::vector<int64_t> order = c.ints("dim_order");
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    bool ok = order.size() == x.shape.size();
    for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
    if (!ok) {
      c.fail(c.arg_field("dim_order"), "expected a permutation of the ", x.shape.size(),
             " dims of shape ", shape_str(x.shape), ", got ", shape_str(order));
    }
  }
  return {{x.dtype, x.shape}};
}

// A float tensor of the input's shape, once `p` is a probability and the node does not train
// (`train_arg` false; or p = 0, which drops nothing).
std::vector<TypedShape> eval_identity(const ShapeContext& c, const char* train_arg) {
  const Value& x = c.in("input");
  if (x.dtype != DType::Float32 && x.dtype != DType::Float16) c.dtype(x, "input", DType::Float32);
  const double p = c.f64("p");
  if (!(p >= 0.0 && p <= 1.0)) {
    c.fail(ShapeContext::arg_field("p"), "expected a probability in [0, 1], got ", p);
  }
  if (c.flag_or(train_arg, true) && p != 0.0) {
    c.fail(ShapeContext::arg_field(train_arg),
           "true: in training mode it zeroes random elements; export the model in eval mode "
           "(model.eval())");
  }
  return {{x.dtype, x.shape}};
}

std::vector<TypedShape> dropout(const ShapeContext& c) { return eval_identity(c, "train"); }

std::vector<TypedShape> stochastic_depth(const ShapeContext& c) {
  c.str_in("mode", {"row", "batch"}, false);
  return eval_identity(c, "training");
}

// dropout(Tensor input, float p, bool train) and its variants.
EdgeOp dropout_op(const char* name) {
  return EdgeOp{name, {"input"},
                1,    {required_arg("p", Lit::Number), required_arg("train", Lit::Bool)},
                1,    dropout}
      .computed_by(reference_copy)
      .fused_by(fusion::fuse_view, moved_by_ops())
      .lowered_by(fusion::lower_identity, {"identity"});
}

// Ops that are the identity outside training but stay as calls in a traced graph: aten.dropout,
// aten.alpha_dropout, aten.feature_dropout, aten.feature_alpha_dropout (train = false) and
// torchvision's stochastic_depth (training = false), as FX and other exporters write them. They
// fold like clones (fusion looks through them, lowering makes them identity: EdgeOpNames.h's
// is_clone); a node in training mode, which zeroes random elements, is refused when the graph
// is read.
std::vector<EdgeOp> eval_identity_ops() {
  return {
      dropout_op("aten.dropout"),
      dropout_op("aten.alpha_dropout"),
      dropout_op("aten.feature_dropout"),
      dropout_op("aten.feature_alpha_dropout"),
      // torchvision.ops.stochastic_depth(input, p, mode, training=True)
      EdgeOp{"aten.stochastic_depth",
             {"input"},
             1,
             {required_arg("p", Lit::Number), required_arg("mode", Lit::String),
              optional_arg("training", Lit::Bool, ArgValue(true), false)},
             1,
             stochastic_depth}
          .computed_by(reference_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .lowered_by(fusion::lower_identity, {"identity"}),
  };
}

std::vector<EdgeOp> copy_ops() {
  return {
      EdgeOp{"aten.view_copy", {"self"}, 1, {required_arg("size", Lit::Ints)}, 1, view_copy}
          .computed_by(reference_view_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .fusing_beyond_device()
          .lowered_by(fusion::lower_view, {"identity", "q8ta_view"}),
      EdgeOp{"aten.clone", {"self"}, 1, {optional_arg("memory_format", Lit::String)}, 1, clone_like}
          .computed_by(reference_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .lowered_by(fusion::lower_identity, {"identity"}),
      EdgeOp{"aten.alias_copy",
             {"self"},
             1,
             {optional_arg("memory_format", Lit::String)},
             1,
             clone_like}
          .computed_by(reference_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .lowered_by(fusion::lower_identity, {"identity"}),
      EdgeOp{"aten._clone_dim_order",
             {"self"},
             1,
             {optional_arg("non_blocking", Lit::Bool, ArgValue(false), false),
              optional_arg("dim_order", Lit::Ints)},
             1,
             clone_dim_order}
          .computed_by(reference_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .lowered_by(fusion::lower_identity, {"identity"}),
  };
}

}  // namespace

// The copies, then the ops that are the identity outside training.
std::vector<EdgeOp> copy_edge_ops() {
  std::vector<EdgeOp> ops = copy_ops();
  for (EdgeOp& op : eval_identity_ops()) ops.push_back(std::move(op));
  return ops;
}

}  // namespace vkd::compiler
