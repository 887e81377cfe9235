// dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q => q8ta_pixel_shuffle. A shuffle only
// moves values, so the clones around it (what export leaves for memory-format changes) go too.
// The kernel moves the bytes where the qparams round-trip, else requantizes each one into the
// full int8 range (requantize_moved): the fusion checks that this is the chain's dq -> q.
// A shuffle of a convolution's output may instead join that convolution's epilogue
// (Epilogue.cpp: q8ta_conv2d_ps).
#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Patterns.h"

namespace vkd::compiler::fusion {
namespace {

// The nodes and values from the dq, through the shuffle, to the q (as far as they were found).
struct ShuffleChain {
  int dq = -1, q = -1;
  std::vector<int> nodes;           // dq, clones, the shuffle, clones, q: in data order
  std::vector<std::string> values;  // intermediates
  std::string why;                  // why no q was reached (q == -1)
};

// Walks back from shuffle `i` through clones; sets `c.dq` to the node reached (-1 for none).
void walk_to_dq(const Graph& g, int i, ShuffleChain& c) {
  std::vector<int> before;  // clones before the shuffle, nearest first
  std::string v = g.nodes[i].inputs[0];
  int p = g.producer(v);
  while (p >= 0 && is_clone(g.nodes[p].op) && !g.nodes[p].inputs.empty()) {
    before.push_back(p);
    c.values.push_back(v);
    v = g.nodes[p].inputs[0];
    p = g.producer(v);
  }
  c.dq = p;
  c.values.push_back(v);  // the dq's output
  c.nodes = {p};
  c.nodes.insert(c.nodes.end(), before.rbegin(), before.rend());
  c.nodes.push_back(i);
}

// Walks forward from shuffle `i` through clones to a quantize_per_tensor.
void walk_to_q(const Graph& g, int i, ShuffleChain& c) {
  std::string cur = g.nodes[i].outputs[0];
  for (;;) {
    int next = -1;
    for (int k : g.consumers(cur)) {
      if (g.nodes[k].op == kQ || is_clone(g.nodes[k].op)) {
        next = k;
        break;
      }
    }
    if (next < 0) {
      c.why = describe_consumers(g, cur);
      return;
    }
    c.values.push_back(cur);
    c.nodes.push_back(next);
    if (g.nodes[next].op == kQ) {
      c.q = next;
      return;
    }
    cur = g.nodes[next].outputs.at(0);
  }
}

// "" when the found chain fits q8ta_pixel_shuffle; fills the qparams of both ends.
std::string check_chain(const Graph& g, const ShuffleChain& c, QuantInfo& in_q, QuantInfo& out_q) {
  const std::string dq_why = check_activation_dq(g, g.nodes[c.dq], c.dq, in_q);
  if (!dq_why.empty()) return dq_why;
  for (const auto& value : c.values) {
    const std::string use = single_use(g, value);
    if (!use.empty()) return use;
  }
  if (c.q < 0) return c.why;
  const std::string q_why = check_q(g, g.nodes[c.q], c.q, out_q);
  if (!q_why.empty()) return q_why;
  return check_bytes_or_requantization(in_q, out_q);
}

Node build_shuffle(FuseState& state, int i, const ShuffleChain& c, const QuantInfo& in_q,
                   const QuantInfo& out_q, int64_t factor) {
  const Graph& g = state.graph;
  Node out;
  out.op = "q8ta_pixel_shuffle";
  const std::string x_q = g.nodes[c.dq].inputs[0];
  const std::string output = g.nodes[c.q].outputs[0];
  out.inputs = {x_q};
  out.args["input_scale"] = in_q.scale;
  out.args["input_zero_point"] = in_q.zero_point;
  out.args["upscale_factor"] = factor;
  out.args["output_scale"] = out_q.scale;
  out.args["output_zero_point"] = out_q.zero_point;
  out.outputs = {output};
  out.origin = state.fused_origin(i, out.op);
  state.produced[output] = out_q;
  state.consume_quant(x_q, c.dq, in_q);
  return out;
}

}  // namespace

void fuse_pixel_shuffle(FuseState& state, int i) {
  const Graph& g = state.graph;
  const Node& n = g.nodes[i];
  if (n.inputs.empty() || n.outputs.size() != 1) return;
  ShuffleChain c;
  walk_to_dq(g, i, c);
  if (!node_is(g, c.dq, kDq)) return;  // not a quantized pattern
  if (!state.allowed(i, "q8ta_pixel_shuffle")) return;
  walk_to_q(g, i, c);
  std::string chain;
  for (size_t k = 0; k < c.nodes.size(); ++k) {
    chain += (k ? " -> " : "") + label(g.nodes[c.nodes[k]]);
  }
  auto fail = [&](const std::string& why) {
    state.not_fused(chain, c.nodes, "q8ta_pixel_shuffle", why);
  };

  QuantInfo in_q, out_q;
  const std::string why = check_chain(g, c, in_q, out_q);
  if (!why.empty()) return fail(why);
  const auto factor = opt_int(n, "upscale_factor");
  if (!factor || *factor < 1) return fail("upscale_factor is not a positive integer");
  if (state.any_claimed(c.nodes)) return fail("overlaps another fused pattern");
  const EpilogueCandidate epilogue{g.nodes[c.dq].inputs[0], in_q,  c.nodes, c.values,
                                   g.nodes[c.q].outputs[0], out_q, chain};
  if (join_shuffle_epilogue(state, epilogue, *factor)) return;
  Fusion f;
  f.nodes = c.nodes;
  f.dead = c.values;
  f.node = build_shuffle(state, i, c, in_q, out_q, *factor);
  state.commit(std::move(f), chain, "");
}

}  // namespace vkd::compiler::fusion
