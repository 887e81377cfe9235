// dq -> aten.linear | aten.convolution [-> act] -> q => q8ta_linear | q8ta_conv2d, or, when
// nothing quantized follows, the float-output q8ta_linear_dq | q8ta_conv2d_dq. A transposed
// convolution becomes q8ta_conv_transpose2d (quantized output only), its weight [C_in, C_out /
// groups, KH, KW] rewritten into q8ta_conv2d's order [C_out, C_in / groups, KH, KW] and its
// scales (per tensor, or per channel along axis 1) one per output channel. The weight must be a
// symmetric dequantization of an int8 constant (its dq node is folded away later).
#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

// The operands of a matching linear / convolution, all read before anything is built.
struct Operands {
  QuantInfo in_q;
  WeightFold weight;  // scales: one per output channel
  std::string bias;   // "" when absent: a zeros constant is made
  Args conv_args;     // stride, padding, dilation, groups (+ output_padding when transposed)
  bool transposed = false;
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

// aten.convolution's `transposed` (absent: false; a bool or an int), or "" in `why`.
std::string read_transposed(const Node& n, bool& transposed) {
  transposed = false;
  if (!arg_present(n, "transposed")) return "";
  const ArgValue& v = n.args.at("transposed");
  const bool* t = std::get_if<bool>(&v);
  const int64_t* ti = std::get_if<int64_t>(&v);
  if (!t && !ti) return "transposed is not a bool";
  transposed = t ? *t : *ti != 0;
  return "";
}

// A 2-D convolution's stride / padding / dilation (+ output_padding when transposed; one value
// meaning both) and groups.
std::string read_conv_args(const Graph& g, const Node& n, const Value& wq, bool transposed,
                           Args& conv_args) {
  const size_t rank = g.value(n.inputs[0]).shape.size();
  if (rank != 4 || wq.shape.size() != 4) {
    return "only 2-D convolution is supported (input rank " + std::to_string(rank) +
           ", weight rank " + std::to_string(wq.shape.size()) + ")";
  }
  std::vector<const char*> lists = {"stride", "padding", "dilation"};
  if (transposed) lists.push_back("output_padding");
  for (const char* name : lists) {
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

// A transposed convolution's per-index scales (along axis 1: C_out / groups of them) as one
// per output channel: channel co of group g takes index co - g * C_out / groups.
void scales_per_output_channel(WeightFold& w, int64_t groups) {
  const std::vector<float> per_group = w.scales;
  w.scales.clear();
  for (int64_t g = 0; g < groups; ++g) {
    w.scales.insert(w.scales.end(), per_group.begin(), per_group.end());
  }
}

// The weight, its scales (one per output channel) and the convolution's args.
std::string read_weight_and_args(const Graph& g, const Node& n, Operands& ops) {
  if (n.inputs.size() < 2) return "no weight";
  std::string why = n.op == kConv ? read_transposed(n, ops.transposed) : "";
  if (why.empty()) why = fold_weight(g, n.inputs[1], ops.weight, ops.transposed ? 1 : 0);
  if (!why.empty()) return why;
  const Value& wq = g.value(ops.weight.weight);
  if (n.op != kConv) {
    return wq.shape.size() == 2 ? ""
                                : "linear weight " + quoted(wq.name) + " has rank " +
                                      std::to_string(wq.shape.size()) + ", expected 2";
  }
  why = read_conv_args(g, n, wq, ops.transposed, ops.conv_args);
  if (why.empty() && ops.transposed) {
    scales_per_output_channel(ops.weight, std::get<int64_t>(ops.conv_args.at("groups")));
  }
  return why;
}

// Reads the operands of anchor `n` whose input dq is node `p`; "" or why they do not fit.
std::string read_operands(const Graph& g, const Node& n, int p, Operands& ops) {
  std::string why = check_activation_dq(g, g.nodes[p], p, ops.in_q);
  if (why.empty()) why = single_use(g, n.inputs[0]);
  if (why.empty()) why = read_weight_and_args(g, n, ops);
  if (!why.empty()) return why;
  ops.bias = n.inputs.size() > 2 ? n.inputs[2] : "";
  return check_bias(g, ops.bias, static_cast<int64_t>(ops.weight.scales.size()));
}

// PyTorch's transposed weight [C_in, C_out / groups, KH, KW] as a new int8 constant in
// q8ta_conv2d's order [C_out, C_in / groups, KH, KW]: out[co][i][ky][kx] = w[g * Cin_g + i]
// [co - g * Cout_g][ky][kx], g = co / Cout_g.
std::string swapped_weight(FuseState& state, const std::string& weight, int64_t groups) {
  const Value& w = state.graph.value(weight);
  const int64_t cin = w.shape[0], cout_g = w.shape[1], taps = w.shape[2] * w.shape[3];
  const int64_t cin_g = cin / groups;
  Value v;
  v.name = state.graph.unique_name(weight + "_oihw");
  v.dtype = DType::Int8;
  v.shape = {cout_g * groups, cin_g, w.shape[2], w.shape[3]};
  v.data = std::vector<uint8_t>(w.data->size());
  for (int64_t co = 0; co < cout_g * groups; ++co) {
    const int64_t g = co / cout_g;
    for (int64_t i = 0; i < cin_g; ++i) {
      for (int64_t t = 0; t < taps; ++t) {
        (*v.data)[static_cast<size_t>((co * cin_g + i) * taps + t)] =
            (*w.data)[static_cast<size_t>(((g * cin_g + i) * cout_g + co - g * cout_g) * taps + t)];
      }
    }
  }
  state.graph.add_value(v);
  return v.name;
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
  const std::string weight =
      ops.transposed
          ? swapped_weight(state, ops.weight.weight, std::get<int64_t>(ops.conv_args.at("groups")))
          : ops.weight.weight;
  out.inputs = {x_q, weight, state.scales_constant(ops.weight),
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
  bool transposed = false;  // a malformed flag reads as false here and is reported below
  if (n.op == kConv) (void)read_transposed(n, transposed);
  const std::string backend = n.op != kConv ? "q8ta_linear"
                              : transposed  ? "q8ta_conv_transpose2d"
                                            : "q8ta_conv2d";
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, backend);
  if (!m) return;
  const Tail& tail = m->tail;
  const int p = m->dq;
  const std::string full_backend =
      tail.kind == Tail::None && !transposed ? backend + "_dq" : backend;
  auto fail = [&](const std::string& why) {
    state.not_fused(m->chain, m->nodes, full_backend, why);
  };

  Operands ops;
  const std::string why = read_operands(g, n, p, ops);
  if (!why.empty()) return fail(why);
  if (transposed && tail.kind != Tail::Ok) {
    return fail(tail.kind == Tail::Half ? tail.why
                                        : describe_consumers(g, n.outputs[0]) +
                                              " (q8ta_conv_transpose2d has no float-output "
                                              "variant)");
  }
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
