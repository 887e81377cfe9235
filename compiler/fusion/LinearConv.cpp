// dq -> aten.linear | aten.convolution [-> act] -> q => q8ta_linear | q8ta_conv2d, or, when
// nothing quantized follows, the float-output q8ta_linear_dq | q8ta_conv2d_dq. The weight must
// be a symmetric dequantization of an int8 constant (its dq node is folded away later).
#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

// The operands of a matching linear / convolution, all read before anything is built.
struct Operands {
  QuantInfo in_q;
  WeightFold weight;
  std::string bias;  // "" when absent: a zeros constant is made
  Args conv_args;    // stride, padding, dilation, groups (convolution only)
};

// "" when bias `b` is absent or a float32 constant of shape [out_channels].
std::string check_bias(const Graph& g, const std::string& b, int64_t out_channels) {
  if (b.empty()) return "";
  const Value& bv = g.value(b);
  if (!bv.is_constant() || bv.dtype != DType::Float32 || element_count(bv.shape) != out_channels ||
      bv.shape.size() != 1) {
    return "bias " + quoted(b) + " is not a float32 constant of shape [" +
           std::to_string(out_channels) + "]";
  }
  return "";
}

// "" unless aten.convolution's `transposed` is set (true, nonzero, or of another kind).
std::string check_not_transposed(const Node& n) {
  if (!arg_present(n, "transposed")) return "";
  const ArgValue& v = n.args.at("transposed");
  const bool* t = std::get_if<bool>(&v);
  const int64_t* ti = std::get_if<int64_t>(&v);
  if ((t && *t) || (ti && *ti) || (!t && !ti)) return "transposed convolution";
  return "";
}

// A 2-D convolution's stride / padding / dilation (one value meaning both) and groups.
std::string read_conv_args(const Graph& g, const Node& n, const Value& wq, Args& conv_args) {
  const std::string why = check_not_transposed(n);
  if (!why.empty()) return why;
  const size_t rank = g.value(n.inputs[0]).shape.size();
  if (rank != 4 || wq.shape.size() != 4) {
    return "only 2-D convolution is supported (input rank " + std::to_string(rank) +
           ", weight rank " + std::to_string(wq.shape.size()) + ")";
  }
  for (const char* name : {"stride", "padding", "dilation"}) {
    auto list = opt_ints(n, name);
    if (!list) return std::string("missing or non-integer ") + name;
    if (list->size() == 1) list->push_back(list->front());
    if (list->size() != 2) {
      return std::string(name) + " has " + std::to_string(list->size()) +
             " values, expected 1 or 2";
    }
    conv_args[name] = *list;
  }
  const auto groups = arg_present(n, "groups") ? opt_int(n, "groups") : int64_t{1};
  if (!groups || *groups < 1) return "groups is not a positive integer";
  conv_args["groups"] = *groups;
  return "";
}

// Reads the operands of anchor `n` whose input dq is node `p`; "" or why they do not fit.
std::string read_operands(const Graph& g, const Node& n, int p, Operands& ops) {
  std::string why = check_activation_dq(g, g.nodes[p], p, ops.in_q);
  if (why.empty()) why = single_use(g, n.inputs[0]);
  if (!why.empty()) return why;
  if (n.inputs.size() < 2) return "no weight";
  why = fold_weight(g, n.inputs[1], ops.weight);
  if (!why.empty()) return why;
  const int64_t out_channels = static_cast<int64_t>(ops.weight.scales.size());
  ops.bias = n.inputs.size() > 2 ? n.inputs[2] : "";
  why = check_bias(g, ops.bias, out_channels);
  if (!why.empty()) return why;
  const Value& wq = g.value(ops.weight.weight);
  if (n.op == kConv) return read_conv_args(g, n, wq, ops.conv_args);
  if (wq.shape.size() != 2) {
    return "linear weight " + quoted(wq.name) + " has rank " + std::to_string(wq.shape.size()) +
           ", expected 2";
  }
  return "";
}

// The backend node for anchor `i` (input dq `p`): quantized when `tail` is given, else the
// _dq variant writing the anchor's own float output. Adds the scales (and zero-bias) constants.
Node build_node(FuseState& state, int p, int i, const std::string& backend, const Tail* tail,
                const Operands& ops) {
  const Graph& g = state.graph;
  Node out;
  out.op = tail ? backend : backend + "_dq";
  const std::string output = tail ? g.nodes[tail->q].outputs[0] : g.nodes[i].outputs[0];
  const std::string x_q = g.nodes[p].inputs[0];
  const int64_t out_channels = static_cast<int64_t>(ops.weight.scales.size());
  out.inputs = {x_q, ops.weight.weight, state.scales_constant(ops.weight),
                ops.bias.empty() ? state.zero_bias(output, out_channels) : ops.bias};
  out.args["input_scale"] = ops.in_q.scale;
  out.args["input_zero_point"] = ops.in_q.zero_point;
  for (auto& kv : ops.conv_args) out.args[kv.first] = kv.second;
  if (tail) {
    out.args["output_scale"] = tail->out_q.scale;
    out.args["output_zero_point"] = tail->out_q.zero_point;
    out.args["activation_min"] = tail->activation.min;
    out.args["activation_max"] = tail->activation.max;
    state.produced[output] = tail->out_q;
  }
  out.outputs = {output};
  out.origin = state.fused_origin(i, out.op);
  state.consume_quant(x_q, p, ops.in_q);
  return out;
}

}  // namespace

void fuse_linear_conv(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  const std::string backend = n.op == kConv ? "q8ta_conv2d" : "q8ta_linear";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  const Tail& tail = m->tail;
  const int p = m->dq;
  const std::string full_backend = tail.kind == Tail::None ? backend + "_dq" : backend;
  auto fail = [&](const std::string& why) {
    state.not_fused(m->chain, m->nodes, full_backend, why);
  };

  Operands ops;
  const std::string why = read_operands(g, n, p, ops);
  if (!why.empty()) return fail(why);
  // Only the quantized tail failed: say why, then fuse the float-output variant.
  const bool quantized = tail.kind == Tail::Ok;
  if (tail.kind == Tail::Half) state.not_fused(m->chain, m->nodes, backend, tail.why);
  Fusion f;
  f.nodes = {p, i};
  if (quantized) f.nodes.insert(f.nodes.end(), tail.nodes.begin(), tail.nodes.end());
  if (state.any_claimed(f.nodes)) return fail("overlaps another fused pattern");
  f.dead = {m->x};
  if (quantized) f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
  f.folded = {n.inputs[1]};
  f.node = build_node(state, p, i, backend, quantized ? &tail : nullptr, ops);
  const std::string chain = state.chain_of({p}, i, quantized ? tail.nodes : std::vector<int>{});
  state.commit(std::move(f), chain,
               quantized ? " (activation " + tail.activation.label + ")" : std::string());
}

}  // namespace vkd::compiler::fusion
