#include "compiler/fusion/MoveChain.h"

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Match.h"

namespace vkd::compiler::fusion {
namespace {

// The one node reading `v` (not a graph output), or -1.
int only_reader(const Graph& g, const std::string& v) {
  if (g.is_graph_output(v)) return -1;
  const std::vector<int> c = g.consumers(v);
  return c.size() == 1 ? c[0] : -1;
}

bool is_move(const Graph& g, int k) {
  if (k < 0) return false;
  const Node& n = g.nodes[k];
  return is_data_movement(n.op) && !n.inputs.empty() && !n.inputs[0].empty() &&
         n.outputs.size() == 1;
}

bool is_int8_activation(const Value& v) {
  return !v.is_constant() && (v.dtype == DType::Int8 || v.dtype == DType::Int8x4);
}

// The q of a round-trip pair q -> dq inside a float chain: dq `dq` reads the q's output alone,
// and the q reads a data movement's output; else -1.
int pair_quantize(const Graph& g, int dq) {
  const std::string& x = g.nodes[dq].inputs.at(0);
  const int q = g.producer(x);
  if (!node_is(g, q, kQ) || only_reader(g, x) != dq) return -1;
  return is_move(g, g.producer(g.nodes[q].inputs.at(0))) ? q : -1;
}

// Walks back from the anchor's input through moves (and, on floats, round-trip pairs) to the
// chain's first node; `before` gets the nodes nearest first. False when the chain is not
// quantized (no dequantize starts a float chain, an int8 chain reads a constant).
bool walk_back(const Graph& g, int anchor, bool int8, std::vector<int>& before) {
  std::string v = g.nodes[anchor].inputs[0];
  for (;;) {
    const int p = g.producer(v);
    if (only_reader(g, v) >= 0 && is_move(g, p)) {
      before.push_back(p);
      v = g.nodes[p].inputs[0];
      continue;
    }
    if (int8) return is_int8_activation(g.value(v));
    if (only_reader(g, v) < 0 || !node_is(g, p, kDq) || g.nodes[p].inputs.empty()) return false;
    before.push_back(p);
    const int q = pair_quantize(g, p);
    if (q < 0) return true;
    before.push_back(q);
    v = g.nodes[q].inputs.at(0);
  }
}

// Walks forward from the anchor's output through moves (and, on floats, round-trip pairs) to
// the chain's last node: an int8 chain's last move, or a float chain's final quantize (a move
// when none follows).
void walk_forward(const Graph& g, int anchor, bool int8, std::vector<int>& after) {
  std::string cur = g.nodes[anchor].outputs[0];
  for (;;) {
    const int k = only_reader(g, cur);
    if (is_move(g, k)) {
      after.push_back(k);
      cur = g.nodes[k].outputs[0];
      continue;
    }
    if (int8 || !node_is(g, k, kQ) || g.nodes[k].outputs.size() != 1) return;
    after.push_back(k);
    const int dq = only_reader(g, g.nodes[k].outputs[0]);
    if (!node_is(g, dq, kDq) || !is_move(g, only_reader(g, g.nodes[dq].outputs.at(0)))) return;
    after.push_back(dq);
    cur = g.nodes[dq].outputs[0];
  }
}

// A float chain requantizes where a quantize inside it has other parameters than the
// dequantize before it: it ends there, and the dequantize after it starts the next chain.
// The part of `nodes` (data order) holding node `anchor`.
std::vector<int> segment_of(const Graph& g, const std::vector<int>& nodes, int anchor) {
  std::vector<int> part;
  bool found = false;
  std::optional<QuantInfo> last_dq;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = g.nodes[nodes[i]];
    QuantInfo q;
    const bool known = read_qparams(n, q).empty();
    if (n.op == kDq) last_dq = known ? std::optional<QuantInfo>(q) : std::nullopt;
    part.push_back(nodes[i]);
    found = found || nodes[i] == anchor;
    const bool requantizes =
        n.op == kQ && i + 1 < nodes.size() && (!known || !last_dq || !same_quant(q, *last_dq));
    if (!requantizes) continue;
    if (found) break;
    part.clear();
  }
  return part;
}

// Sizes padded to 4-D with leading 1s, as device tensors hold them.
std::array<int64_t, 4> dims4(const std::vector<int64_t>& shape) {
  std::array<int64_t, 4> d{1, 1, 1, 1};
  std::copy(shape.begin(), shape.end(), d.end() - static_cast<std::ptrdiff_t>(shape.size()));
  return d;
}

// One permute of the chain: the input sizes it permutes and its dims.
struct PermuteStep {
  std::vector<int64_t> in_shape, dims;
};

// The flat (C-order) index of the input element that the chain puts at output flat index `i`:
// views and clones keep flat indices, each permute maps them back through its dims.
int64_t source_index(const std::vector<PermuteStep>& steps, int64_t i) {
  for (auto s = steps.rbegin(); s != steps.rend(); ++s) {
    const size_t rank = s->in_shape.size();
    std::array<int64_t, 6> j{};        // graph values have rank <= 6
    for (size_t k = rank; k-- > 0;) {  // decode i in the output sizes, scatter into input dims
      const int64_t size = s->in_shape[static_cast<size_t>(s->dims[k])];
      j[static_cast<size_t>(s->dims[k])] = i % size;
      i /= size;
    }
    i = 0;
    for (size_t k = 0; k < rank; ++k) i = i * s->in_shape[k] + j[k];
  }
  return i;
}

// Whether `expected(i)` is the chain's source index for every output element i.
bool moves_like(const std::vector<PermuteStep>& steps, int64_t numel,
                const std::function<int64_t(int64_t)>& expected) {
  for (int64_t i = 0; i < numel; ++i) {
    if (source_index(steps, i) != expected(i)) return false;
  }
  return true;
}

// The channel shuffle of `d` with `groups`: output channel c is input channel
// (c % groups) * (C / groups) + c / groups.
int64_t shuffled_index(const std::array<int64_t, 4>& d, int64_t groups, int64_t i) {
  const int64_t hw = d[2] * d[3], c = (i / hw) % d[1], nc = i / hw - c;
  return (nc + (c % groups) * (d[1] / groups) + c / groups) * hw + i % hw;
}

// The shuffle's groups read off where output channel 1 comes from (C / groups), or 0.
int64_t shuffle_groups(const std::vector<PermuteStep>& steps, const std::array<int64_t, 4>& d) {
  const int64_t hw = d[2] * d[3];
  if (d[1] < 2) return 0;
  const int64_t from = (source_index(steps, hw) / hw) % d[1];
  return from > 0 && d[1] % from == 0 && from < d[1] ? d[1] / from : 0;
}

}  // namespace

std::optional<MoveChain> find_move_chain(const Graph& g, int anchor) {
  if (!is_move(g, anchor)) return std::nullopt;
  const bool int8 = g.value(g.nodes[anchor].inputs[0]).dtype != DType::Float32;
  std::vector<int> before, after;
  if (!walk_back(g, anchor, int8, before)) return std::nullopt;
  walk_forward(g, anchor, int8, after);
  std::vector<int> all(before.rbegin(), before.rend());
  all.push_back(anchor);
  all.insert(all.end(), after.begin(), after.end());
  MoveChain c;
  c.nodes = int8 ? all : segment_of(g, all, anchor);
  const Node& first = g.nodes[c.nodes.front()];
  const Node& last = g.nodes[c.nodes.back()];
  c.source = first.inputs[0];
  if (first.op == kDq) c.dq = c.nodes.front();
  if (last.op == kQ) c.q = c.nodes.back();
  if (int8 || c.q >= 0) {
    c.output = last.outputs[0];
  } else {
    c.why = single_use(g, last.outputs[0]);
    if (c.why.empty()) c.why = describe_consumers(g, last.outputs[0]);
  }
  for (size_t i = 0; i + 1 < c.nodes.size(); ++i) {
    c.dead.push_back(g.nodes[c.nodes[i]].outputs[0]);
  }
  for (int k : c.nodes) {
    if (is_data_movement(g.nodes[k].op)) c.moves.push_back(k);
  }
  return c;
}

bool needs_movement_op(const Graph& g, const MoveChain& c) {
  for (int k : c.moves) {
    const Node& n = g.nodes[k];
    if (is_permute(n.op)) return true;
    for (const std::string& v : {n.inputs[0], n.outputs[0]}) {
      if (g.value(v).shape.size() > 4) return true;
    }
  }
  return false;
}

std::string chain_label(const Graph& g, const std::vector<int>& nodes) {
  std::string s;
  for (size_t k = 0; k < nodes.size(); ++k) s += (k ? " -> " : "") + label(g.nodes[nodes[k]]);
  return s;
}

std::string check_chain_quantization(const Graph& g, const MoveChain& c, QuantInfo& in,
                                     QuantInfo& out) {
  std::string why = check_activation_dq(g, g.nodes[c.dq], c.dq, in);
  if (!why.empty()) return why;
  for (int k : c.nodes) {
    const Node& n = g.nodes[k];
    if (k == c.dq || (n.op != kQ && n.op != kDq) || k == c.q) continue;
    QuantInfo mid;
    why = n.op == kQ ? check_q(g, n, k, mid) : check_activation_dq(g, n, k, mid);
    if (why.empty()) why = check_round_trip(in, mid);
    if (!why.empty()) return "inside the chain: " + why;
  }
  if (c.q < 0) return c.why;
  return check_q(g, g.nodes[c.q], c.q, out);
}

std::vector<int64_t> permutation_of(const Graph& g, const Node& n) {
  const int64_t rank = static_cast<int64_t>(g.value(n.inputs.at(0)).shape.size());
  const auto wrap = [&](int64_t d) { return d < 0 ? d + rank : d; };
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  if (n.op == kPermuteCopy || n.op == kPermute) {
    dims = arg_ints(n, "dims");
    for (auto& d : dims) d = wrap(d);
    return dims;
  }
  std::iota(dims.begin(), dims.end(), int64_t{0});
  if (rank > 0) {
    std::swap(dims[static_cast<size_t>(wrap(arg_int(n, "dim0")))],
              dims[static_cast<size_t>(wrap(arg_int(n, "dim1")))]);
  }
  return dims;
}

std::string Movement::describe() const {
  switch (kind) {
    case View: return "a view";
    case ChannelShuffle: return "channel shuffle (groups " + std::to_string(groups) + ")";
    case Permute: return "permute " + shape_str(dims) + (then_view ? ", then a view" : "");
  }
  return "?";
}

std::string classify_movement(const Graph& g, const std::vector<const Node*>& moves,
                              const std::string& from, const std::string& to, Movement& out) {
  const Value& in = g.value(from);
  const Value& result = g.value(to);
  for (const Value* v : {&in, &result}) {
    if (v->shape.size() > 4) {
      return quoted(v->name) + " has rank " + std::to_string(v->shape.size()) +
             " (device tensors are at most 4-D)";
    }
  }
  std::vector<PermuteStep> steps;
  for (const Node* n : moves) {
    if (is_permute(n->op)) steps.push_back({g.value(n->inputs[0]).shape, permutation_of(g, *n)});
  }
  const int64_t numel = element_count(in.shape);
  const std::array<int64_t, 4> s = dims4(in.shape), t = dims4(result.shape);
  if (moves_like(steps, numel, [](int64_t i) { return i; })) {
    out = {Movement::View, 1, {}};
    return "";
  }
  if (s == t) {
    const int64_t groups = shuffle_groups(steps, s);
    if (groups > 1 &&
        moves_like(steps, numel, [&](int64_t i) { return shuffled_index(s, groups, i); })) {
      out = {Movement::ChannelShuffle, groups, {}};
      return "";
    }
  }
  std::vector<int64_t> dims{0, 1, 2, 3};
  while (std::next_permutation(dims.begin(), dims.end())) {  // every order but the identity
    bool sizes_fit = true;
    for (size_t k = 0; k < 4; ++k) sizes_fit = sizes_fit && t[k] == s[dims[k]];
    const std::vector<PermuteStep> one{{{s.begin(), s.end()}, dims}};
    if (sizes_fit && moves_like(steps, numel, [&](int64_t i) { return source_index(one, i); })) {
      out = {Movement::Permute, 1, dims};
      return "";
    }
  }
  // A permute whose result is then only reshaped: the same flat order as the permute's own.
  dims = {0, 1, 2, 3};
  while (std::next_permutation(dims.begin(), dims.end())) {
    const std::vector<PermuteStep> one{{{s.begin(), s.end()}, dims}};
    if (moves_like(steps, numel, [&](int64_t i) { return source_index(one, i); })) {
      out = {Movement::Permute, 1, dims, true, {}};
      for (int64_t d : dims) out.permuted.push_back(s[static_cast<size_t>(d)]);
      return "";
    }
  }
  return "it moves elements in a way no single backend op does (neither a view, a channel "
         "shuffle nor a 4-D permute of " +
         shape_str(in.shape) + ")";
}

}  // namespace vkd::compiler::fusion
