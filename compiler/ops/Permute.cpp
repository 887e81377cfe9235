// Dimension permutations: aten.permute_copy / aten.permute (dims) and aten.transpose.int /
// aten.transpose_copy.int (dim0, dim1); PyTorch's view forms and the edge dialect's copy forms
// mean the same here (values are never aliased).
#include "compiler/ops/EdgeOp.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/MoveChain.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of the dimension permutations (semantics above each function): elements are
// moved byte for byte, so they take any dtype the interpreter holds (float16 and int8 included)
// and any rank up to 6.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// out[i_0, ..., i_{r-1}] = x[j] with j[dims[k]] = i_k: output dim k is input dim dims[k].
HostTensor permuted(const ReferenceContext& c, const HostTensor& x,
                    const std::vector<int64_t>& dims) {
  const size_t rank = x.shape.size();
  c.require(dims.size() == rank,
            detail::concat("dims ", shape_str(dims), " do not match rank ", rank));
  std::vector<int64_t> in_stride(rank, 1), out_shape(rank), stride(rank);
  for (size_t k = rank; k-- > 1;) in_stride[k - 1] = in_stride[k] * x.shape[k];
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < rank; ++k) {
    const size_t d = static_cast<size_t>(norm_dim(c, dims[k], rank));
    c.require(!seen[d], detail::concat("dims ", shape_str(dims), " repeat dim ", d));
    seen[d] = true;
    out_shape[k] = x.shape[d];
    stride[k] = in_stride[d];  // input elements between neighbours along output dim k
  }
  HostTensor out = make_tensor(x.dtype, out_shape);
  const size_t es = elem_bytes(x.dtype);
  strided_loop(out_shape, {stride}, [&](int64_t i, const std::vector<int64_t>& offsets) {
    std::memcpy(out.bytes.data() + i * es, x.bytes.data() + offsets[0] * es, es);
  });
  return out;
}

}  // namespace

// aten.permute_copy / aten.permute(dims): output dim k is input dim dims[k] (negative dims count
// from the end); out[i_0, .., i_{r-1}] = x[j] with j[dims[k]] = i_k.
std::vector<HostTensor> reference_permute(const ReferenceContext& c) {
  return {permuted(c, c.input(0, "self"), c.ints_arg("dims"))};
}

// aten.transpose.int / aten.transpose_copy.int(dim0, dim1): the permute that swaps the two dims.
std::vector<HostTensor> reference_transpose(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  const size_t rank = x.shape.size();
  std::vector<int64_t> dims(rank);
  for (size_t k = 0; k < rank; ++k) dims[k] = static_cast<int64_t>(k);
  if (rank > 0) {
    std::swap(dims[static_cast<size_t>(norm_dim(c, c.int_arg("dim0"), rank))],
              dims[static_cast<size_t>(norm_dim(c, c.int_arg("dim1"), rank))]);
  }
  return {permuted(c, x, dims)};
}

}  // namespace vkd::compiler

// Data movement on quantized data as one backend op (the chains: compiler/fusion/MoveChain.h).
// - A chain of views, permutes / transposes and clones between a dequantize and a quantize
//   (round-trip q -> dq pairs between the moves, as FX's reference graphs write reshapes), or
//   on int8 data (what sink_dequantize leaves in front of a float consumer) => the op that moves
//   the elements the same way: q8ta_channel_shuffle for view [N, g, C/g, H, W] -> transpose(1, 2)
//   -> view [N, C, H, W] (ShuffleNet's channel shuffle, with or without a contiguous clone), or
//   anything equivalent; q8ta_permute for a permute of the 4 dims; q8ta_permute into the
//   permute's own sizes and a q8ta_view when the permuted data is then only reshaped (a conv's
//   [N, C, H, W] flattened into tokens [N, H*W, C]); identity / q8ta_view when the chain only
//   reshapes (a permute and its inverse). Which one is decided by evaluating the
//   chain for every element, not by the node sequence. Intermediate quantizations must give
//   back every int8 value; the final quantize may requantize (full int8 range), which the op
//   then does per element, checked for all 256 values against the reference arithmetic (a
//   view requantizes in a q8ta_clamp after it: compiler/ops/Copy.cpp's commit_requantized_view).
// - A lone int8 permute / transpose left after fusion is lowered the same way.
// Views and clones that start such a chain (a permute in it, or a 5-D / 6-D tensor) come here
// from fuse_view; other chains stay with it.
namespace vkd::compiler::fusion {
namespace {

// Any data-movement op, for messages about a chain no op takes yet.
constexpr char kAnyMovementOp[] = "a data-movement op";

// "" when the op can requantize from `in` to `out` as the chain does: identity-valued when
// they round-trip, else a per-element requantization to the full int8 range that equals the
// chain's dequantize -> quantize for all 256 inputs. (A view requantizes in a q8ta_clamp after
// it: commit_requantized_view.)
std::string check_requantization(const QuantInfo& in, const QuantInfo& out) {
  if (check_round_trip(in, out).empty()) return "";
  return check_moved_requantization(in, out);
}

void set_qparams(Node& n, const QuantInfo& in, const QuantInfo& out) {
  n.args["input_scale"] = in.scale;
  n.args["input_zero_point"] = in.zero_point;
  n.args["output_scale"] = out.scale;
  n.args["output_zero_point"] = out.zero_point;
}

// The backend node moving `source` into `output` as `m` does. Without `q` (int8 data) the
// quantization args are filled in once the values' quantization is known (assign_int8x4).
Node movement_node(const Graph& g, const Movement& m, const std::string& source,
                   const std::string& output,
                   const std::optional<std::pair<QuantInfo, QuantInfo>>& q) {
  Node n;
  n.inputs = {source};
  n.outputs = {output};
  switch (m.kind) {
    case Movement::View:
      n.op = same_packed_shape(g.value(source).shape, g.value(output).shape) ? "identity"
                                                                             : "q8ta_view";
      if (n.op == "q8ta_view" && q) n.args["zero_point"] = q->first.zero_point;
      return n;
    case Movement::ChannelShuffle:
      n.op = "q8ta_channel_shuffle";
      n.args["groups"] = m.groups;
      break;
    case Movement::Permute:
      n.op = "q8ta_permute";
      n.args["dims"] = m.dims;
      break;
  }
  if (q) set_qparams(n, q->first, q->second);
  return n;
}

// Chain `c` as `m` (a permute then a view, m.then_view): q8ta_permute into a new int8 value of
// the permute's own 4-D sizes (requantizing as the chain does), then q8ta_view into the chain's
// output; "" or why not.
std::string commit_permute_then_view(FuseState& state, int anchor, const MoveChain& c,
                                     const Movement& m,
                                     const std::optional<std::pair<QuantInfo, QuantInfo>>& q) {
  Graph& g = state.graph;
  if (!q) return "a permute then a view on int8 data (no quantize to end it)";
  if (!state.may_target("q8ta_permute") || !state.may_target("q8ta_view")) {
    return "q8ta_permute or q8ta_view is ruled out";
  }
  if (state.any_claimed(c.nodes)) return "overlaps another fused pattern";
  Value mid;
  mid.name = g.unique_name(c.output + "_permuted");
  mid.dtype = DType::Int8;
  mid.shape = m.permuted;
  g.add_value(mid);
  const std::string chain = chain_label(g, c.nodes);
  Fusion permute;  // every node of the chain but its final q
  permute.nodes.assign(c.nodes.begin(), c.nodes.end() - 1);
  permute.dead = c.dead;
  permute.node = movement_node(g, m, c.source, mid.name, q);
  permute.node.origin = state.fused_origin(anchor, permute.node.op);
  state.consume_quant(c.source, c.dq, q->first);
  state.produced[mid.name] = q->second;
  state.commit(std::move(permute), chain, " (" + m.describe() + ")");
  Fusion view;  // the final q
  view.nodes = {c.nodes.back()};
  view.node =
      movement_node(g, Movement{}, mid.name, c.output, std::make_pair(q->second, q->second));
  view.node.origin = state.fused_origin(anchor, view.node.op);
  state.produced[c.output] = q->second;
  state.commit(std::move(view), chain, " (the view after the permute)");
  return "";
}

std::vector<const Node*> move_nodes(const Graph& g, const MoveChain& c) {
  std::vector<const Node*> out;
  for (int k : c.moves) out.push_back(&g.nodes[k]);
  return out;
}

// Matches and commits the chain `c` anchored at `anchor`, or reports why it does not fuse.
void fuse_chain(FuseState& state, int anchor, const MoveChain& c) {
  const Graph& g = state.graph;
  const std::string chain = chain_label(g, c.nodes);
  auto fail = [&](const std::string& why) { state.not_fused(chain, c.nodes, kAnyMovementOp, why); };
  std::optional<std::pair<QuantInfo, QuantInfo>> q;
  if (c.float_domain()) {
    QuantInfo in, out;
    const std::string why = check_chain_quantization(g, c, in, out);
    if (!why.empty()) return fail(why);
    q = std::make_pair(in, out);
  }
  Movement m;
  std::string why = classify_movement(g, move_nodes(g, c), c.source, c.output, m);
  const bool requantizing_view = why.empty() && q && m.kind == Movement::View &&
                                 !check_round_trip(q->first, q->second).empty();
  if (requantizing_view) {  // the view, then a q8ta_clamp requantizing its int8 output
    why = commit_requantized_view(state, anchor, c, q->first, q->second);
    if (!why.empty()) fail(why);
    return;
  }
  if (why.empty() && q) why = check_requantization(q->first, q->second);
  if (why.empty() && m.then_view) why = commit_permute_then_view(state, anchor, c, m, q);
  if (!why.empty() || m.then_view) {
    if (!why.empty()) fail(why);
    return;
  }
  Fusion f;
  f.nodes = c.nodes;
  f.dead = c.dead;
  f.node = movement_node(g, m, c.source, c.output, q);
  if (!state.allowed(anchor, f.node.op)) return;
  if (state.any_claimed(f.nodes)) return fail("overlaps another fused pattern");
  f.node.origin = state.fused_origin(anchor, f.node.op);
  if (q) {
    state.consume_quant(c.source, c.dq, q->first);
    state.produced[c.output] = q->second;
  }
  state.commit(std::move(f), chain, " (" + m.describe() + ")");
}

}  // namespace

bool fuse_move_chain(FuseState& state, int anchor) {
  const std::optional<MoveChain> c = find_move_chain(state.graph, anchor);
  if (!c || !needs_movement_op(state.graph, *c)) return false;
  // Tried once, from its first move (node order); later anchors of the chain only confirm
  // that it is not fuse_view's.
  if (c->moves.front() == anchor) fuse_chain(state, anchor, *c);
  return true;
}

void fuse_data_movement(FuseState& state, int anchor) { (void)fuse_move_chain(state, anchor); }

std::string lower_permute(FuseState& state, Node& node, int where) {
  (void)where;  // the node keeps its parsed origin
  const Graph& g = state.graph;
  if (node.inputs.empty() || node.inputs[0].empty() || node.outputs.size() != 1) return "";
  const Value& in = g.value(node.inputs[0]);
  if (in.is_constant() || (in.dtype != DType::Int8 && in.dtype != DType::Int8x4)) return "";
  Movement m;
  if (!classify_movement(g, {&node}, node.inputs[0], node.outputs[0], m).empty() || m.then_view) {
    return "";
  }
  const Node lowered = movement_node(g, m, node.inputs[0], node.outputs[0], std::nullopt);
  if (!state.may_target(lowered.op)) return "";
  node.op = lowered.op;
  node.inputs.resize(1);
  node.args = lowered.args;
  return node.op;
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// A dim index in [-rank, rank) made non-negative, or a failure naming `arg`.
int64_t wrapped_dim(const ShapeContext& c, const std::string& arg, int64_t dim, size_t rank) {
  const int64_t r = static_cast<int64_t>(std::max<size_t>(rank, 1));
  if (dim < -r || dim >= r) {
    c.fail(c.arg_field(arg), "dim ", dim, " is out of range for rank ", rank, " (expected ", -r,
           "..", r - 1, ")");
  }
  return dim < 0 ? dim + r : dim;
}

std::vector<TypedShape> permute(const ShapeContext& c) {
  const Value& x = c.in("self");
  const std::vector<int64_t> dims = c.ints("dims");
  if (dims.size() != x.shape.size()) {
    c.fail(c.arg_field("dims"), "expected ", x.shape.size(), " dims for shape ", shape_str(x.shape),
           ", got ", shape_str(dims));
  }
  std::vector<int64_t> seen(dims.size(), 0), out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrapped_dim(c, "dims", dims[i], dims.size());
    if (seen[static_cast<size_t>(d)]++ != 0) {
      c.fail(c.arg_field("dims"), "dim ", d, " appears more than once in ", shape_str(dims));
    }
    out[i] = x.shape[static_cast<size_t>(d)];
  }
  return {{x.dtype, out}};
}

std::vector<TypedShape> transpose(const ShapeContext& c) {
  const Value& x = c.in("self");
  const int64_t d0 = wrapped_dim(c, "dim0", c.i64("dim0"), x.shape.size());
  const int64_t d1 = wrapped_dim(c, "dim1", c.i64("dim1"), x.shape.size());
  std::vector<int64_t> out = x.shape;
  if (!out.empty()) std::swap(out[static_cast<size_t>(d0)], out[static_cast<size_t>(d1)]);
  return {{x.dtype, out}};
}

const std::vector<std::string> kBackend = {"q8ta_channel_shuffle", "q8ta_permute", "identity",
                                           "q8ta_view"};

EdgeOp permute_op(const char* name) {
  return EdgeOp{name, {"self"}, 1, {required_arg("dims", Lit::Ints)}, 1, permute}
      .computed_by(reference_permute)
      .fused_by(fusion::fuse_data_movement, kBackend)
      .fusing_beyond_device()
      .lowered_by(fusion::lower_permute, {"q8ta_permute", "identity", "q8ta_view"});
}

EdgeOp transpose_op(const char* name) {
  return EdgeOp{name, {"self"}, 1, {required_arg("dim0", Lit::Int), required_arg("dim1", Lit::Int)},
                1,    transpose}
      .computed_by(reference_transpose)
      .fused_by(fusion::fuse_data_movement, kBackend)
      .fusing_beyond_device()
      .lowered_by(fusion::lower_permute, {"q8ta_permute", "identity", "q8ta_view"});
}

}  // namespace

std::vector<EdgeOp> permute_edge_ops() {
  return {permute_op("aten.permute_copy"), permute_op("aten.permute"),
          transpose_op("aten.transpose_copy.int"), transpose_op("aten.transpose.int")};
}

}  // namespace vkd::compiler
