// Standalone int8 activations: dq -> aten.relu | aten.hardtanh | aten.clamp [-> act] -> q, where
// PyTorch left the activation apart from the op before it (FX keeps a ReLU6 after an add, or
// after an op it did not fuse with).
// - When the dequantized int8 value is the output of a fused int8 op with an activation range
//   (q8ta_conv2d[_ps / _add], q8ta_linear[_add], q8ta_add, q8ta_mul, q8ta_batch_norm; the range
//   of an op with a fused add is the sum's) that nothing else reads, and the q quantizes with
//   the scale and zero point that op wrote, the chain joins the op's epilogue: the op writes the
//   q's output itself, its activation range narrowed to the chain's clamp.
// - Otherwise the chain becomes q8ta_clamp (one requantizing kernel).
// A multiplication by a scalar constant, dq -> aten.mul (by a number or a one-element constant)
// [-> act] -> q, is the same requantizing kernel with the scalar as a factor: q8ta_mul_scalar.
// Neither range comes from an argument about rounding: the chain is computed as the reference
// interpreter computes it for every int8 value it can read, and it fuses only when the backend
// arithmetic (a clamp of the op's output; q8ta_clamp's requantization) gives the same values, so
// the two graphs agree bit for bit.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/reference/QuantChain.h"

namespace vkd::compiler::fusion {
namespace {

// The int8 ops whose requantizing epilogue clamps to [activation_min, activation_max].
bool has_activation_range(const std::string& op) {
  return op == "q8ta_conv2d" || op == "q8ta_conv2d_ps" || op == "q8ta_conv2d_add" ||
         op == "q8ta_conv_transpose2d" || op == "q8ta_linear" || op == "q8ta_linear_add" ||
         op == "q8ta_add" || op == "q8ta_mul" || op == "q8ta_batch_norm";
}

// A matched dq -> act [-> act] -> q chain reading the int8 value `x_q`, or dq -> mul by a scalar
// [-> act] -> q (backend q8ta_mul_scalar).
struct ActChain {
  std::vector<int> nodes;  // dq, the anchor, the tail's nodes
  std::string chain;       // "dq -> aten.hardtanh -> q"
  std::string x_q, output;
  QuantInfo in_q, out_q;
  std::vector<FloatClamp> clamps;
  std::string backend = "q8ta_clamp";
  float multiplier = 1.0f;  // the scalar of q8ta_mul_scalar
};

// "" when `c` can join the epilogue of match `f` (which writes c.x_q).
std::string check_epilogue(FuseState& state, const Fusion& f, const ActChain& c) {
  if (!has_activation_range(f.node.op)) return f.node.op + " has no activation range";
  const std::string why = state.read_as_written(c.x_q, c.in_q);
  if (!why.empty()) return why;
  if (!same_scale_and_zero_point(c.in_q, c.out_q)) {
    return "the q (" + describe_quant(c.out_q) + ") requantizes (the dq is " +
           describe_quant(c.in_q) + ")";
  }
  return "";
}

// The range [lo, hi] such that the chain maps every int8 value v the op writes (its range
// [min, max]) to clamp(v, lo, hi); "" or the first value where the chain is not such a clamp.
std::string narrowed_range(const ActChain& c, int64_t min, int64_t max, Activation& range) {
  range.min = reference_dq_clamp_q(min, c.in_q, c.clamps, c.out_q);
  range.max = reference_dq_clamp_q(max, c.in_q, c.clamps, c.out_q);
  for (int64_t v = min; v <= max; ++v) {
    const int64_t got = reference_dq_clamp_q(v, c.in_q, c.clamps, c.out_q);
    if (range.min > range.max || got != std::min(std::max(v, range.min), range.max)) {
      return "the chain maps int8 value " + std::to_string(v) + " to " + std::to_string(got) +
             ", not a clamp of the op's output";
    }
  }
  return "";
}

// Folds chain `c` into match `f`: it now writes c.output, clamped to `range`.
void join_epilogue(FuseState& state, Fusion& f, const ActChain& c, const Activation& range,
                   const std::vector<std::string>& dead) {
  const int64_t old_min = std::get<int64_t>(f.node.args.at("activation_min"));
  const int64_t old_max = std::get<int64_t>(f.node.args.at("activation_max"));
  state.absorb(f, c.nodes, dead, c.output, c.out_q);
  f.node.args["activation_min"] = range.min;
  f.node.args["activation_max"] = range.max;
  state.note("fused " + c.chain + " (" + node_list(c.nodes) + ") into the epilogue of " +
             f.node.op + ": it writes " + quoted(c.output) + ", activation range " +
             std::to_string(old_min) + ".." + std::to_string(old_max) + " -> " +
             std::to_string(range.min) + ".." + std::to_string(range.max));
}

// The range [lo, hi] for which q8ta_clamp computes the chain for all 256 int8 inputs; "" or the
// first input where no range does.
std::string clamp_kernel_range(const ActChain& c, Activation& range) {
  range.min = 127;
  range.max = -128;
  for (int64_t v = -128; v <= 127; ++v) {
    const int64_t want = reference_dq_clamp_q(v, c.in_q, c.clamps, c.out_q, c.multiplier);
    range.min = std::min(range.min, want);
    range.max = std::max(range.max, want);
  }
  for (int64_t v = -128; v <= 127; ++v) {
    const int64_t want = reference_dq_clamp_q(v, c.in_q, c.clamps, c.out_q, c.multiplier);
    const int64_t got = requantize_clamp(v, c.in_q, c.out_q, range.min, range.max, c.multiplier);
    if (got != want) {
      return "int8 value " + std::to_string(v) + " requantizes to " + std::to_string(got) +
             ", the chain gives " + std::to_string(want);
    }
  }
  return "";
}

// Replaces chain `c` (anchor `i`, dq node `p`) by a q8ta_clamp (q8ta_mul_scalar) node, or
// reports why not. `folded`: a scalar's weight dequantize the node no longer reads.
void fuse_clamp_kernel(FuseState& state, int i, int p, const ActChain& c,
                       const std::vector<std::string>& dead,
                       const std::vector<std::string>& folded = {}) {
  Activation range;
  std::string why = state.may_target(c.backend) ? clamp_kernel_range(c, range)
                                                : "it has no kernel yet (left to the host)";
  if (!why.empty()) return state.not_fused(c.chain, c.nodes, c.backend, why);
  Fusion f;
  f.nodes = c.nodes;
  f.dead = dead;
  f.folded = folded;
  Node& n = f.node;
  n.op = c.backend;
  if (c.backend == "q8ta_mul_scalar") n.args["scalar"] = static_cast<double>(c.multiplier);
  n.inputs = {c.x_q};
  n.outputs = {c.output};
  n.args["input_scale"] = c.in_q.scale;
  n.args["input_zero_point"] = c.in_q.zero_point;
  n.args["output_scale"] = c.out_q.scale;
  n.args["output_zero_point"] = c.out_q.zero_point;
  n.args["activation_min"] = range.min;
  n.args["activation_max"] = range.max;
  n.origin = state.fused_origin(i, n.op);
  state.produced[c.output] = c.out_q;
  state.consume_quant(c.x_q, p, c.in_q);
  const std::string scalar =
      c.backend == "q8ta_mul_scalar" ? "scalar " + fmt(c.multiplier) + ", " : "";
  state.commit(std::move(f), c.chain,
               " (" + scalar + "activation range " + std::to_string(range.min) + ".." +
                   std::to_string(range.max) + ")");
}

// "" when chain `c` (anchor `i` reading dq node `p`'s output `x`, `tail` after the anchor;
// `anchor_clamps`: the anchor is an activation) is a quantized chain the routes can take; fills
// its parameters.
std::string read_chain(const Graph& g, int i, int p, const std::string& x, const Tail& tail,
                       bool anchor_clamps, ActChain& c) {
  std::string why = check_activation_dq(g, g.nodes[p], p, c.in_q);
  if (why.empty()) why = single_use(g, x);
  if (why.empty() && tail.kind == Tail::Half) why = tail.why;
  if (!why.empty()) return why;
  c.out_q = tail.out_q;
  c.output = g.nodes[tail.q].outputs[0];
  std::vector<int> acts;
  if (anchor_clamps) acts.push_back(i);
  if (tail.act >= 0) acts.push_back(tail.act);
  return activation_clamps(g, acts, c.clamps);
}

}  // namespace

void fuse_activation(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return;
  const int p = g.producer(n.inputs[0]);
  if (!node_is(g, p, kDq)) return;  // not a quantized pattern
  const Tail tail = match_tail(g, n.outputs[0]);
  // No quantize after it: a float activation, lowered on its own.
  if (tail.kind == Tail::None || tail.q < 0) return;
  ActChain c;
  c.nodes = {p, i};
  c.nodes.insert(c.nodes.end(), tail.nodes.begin(), tail.nodes.end());
  c.chain = state.chain_of({p}, i, tail.nodes);
  c.x_q = g.nodes[p].inputs[0];
  std::string why = read_chain(g, i, p, n.inputs[0], tail, true, c);
  if (why.empty() && state.any_claimed(c.nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(c.chain, c.nodes, "q8ta_clamp", why);
  std::vector<std::string> dead = {n.inputs[0]};
  dead.insert(dead.end(), tail.values.begin(), tail.values.end());
  if (Fusion* f = state.fusion_writing(c.x_q)) {
    Activation range;
    why = check_epilogue(state, *f, c);
    if (why.empty()) {
      why = narrowed_range(c, std::get<int64_t>(f->node.args.at("activation_min")),
                           std::get<int64_t>(f->node.args.at("activation_max")), range);
    }
    if (why.empty()) return join_epilogue(state, *f, c, range, dead);
    state.not_fused(c.chain, c.nodes, "the epilogue of " + f->node.op, why);
  }
  fuse_clamp_kernel(state, i, p, c, dead);
}

void fuse_scaled_chain(FuseState& state, int i, int x_input, float scalar,
                       const std::string& scalar_dq) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  const std::string& x = n.inputs[static_cast<size_t>(x_input)];
  const int p = g.producer(x);
  if (!node_is(g, p, kDq)) return;  // not a quantized pattern
  const Tail tail = match_tail(g, n.outputs[0]);
  // No quantize after it: a float multiplication, left to the host.
  if (tail.kind == Tail::None || tail.q < 0) return;
  if (!state.allowed(i, "q8ta_mul_scalar")) return;
  ActChain c;
  c.backend = "q8ta_mul_scalar";
  c.multiplier = scalar;
  c.nodes = {p, i};
  c.nodes.insert(c.nodes.end(), tail.nodes.begin(), tail.nodes.end());
  c.chain = state.chain_of({p}, i, tail.nodes);
  c.x_q = g.nodes[p].inputs[0];
  std::string why = read_chain(g, i, p, x, tail, false, c);
  if (why.empty() && g.value(n.outputs[0]).shape != g.value(x).shape) {
    why = "the scalar " + quoted(n.inputs[static_cast<size_t>(1 - x_input)]) + " broadcasts " +
          shape_str(g.value(x).shape) + " to " + shape_str(g.value(n.outputs[0]).shape);
  }
  if (why.empty() && state.any_claimed(c.nodes)) why = "overlaps another fused pattern";
  if (!why.empty()) return state.not_fused(c.chain, c.nodes, c.backend, why);
  std::vector<std::string> dead = {x};
  dead.insert(dead.end(), tail.values.begin(), tail.values.end());
  fuse_clamp_kernel(
      state, i, p, c, dead,
      scalar_dq.empty() ? std::vector<std::string>{} : std::vector<std::string>{scalar_dq});
}

void fuse_mul_scalar(FuseState& state, int i) {
  const Node& n = state.graph.nodes[i];
  if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) return;
  const std::optional<double> m = opt_float(n, "other");
  if (!m) return;  // shape inference refuses it before
  fuse_scaled_chain(state, i, 0, static_cast<float>(*m), "");
}

}  // namespace vkd::compiler::fusion
