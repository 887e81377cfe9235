// dq -> <activation> [-> relu | hardtanh | clamp] -> q => q8ta_lut, for the smooth activations
// (compiler/ops/Activation.cpp). An element-wise function between two fixed int8 quantizations
// maps each of the 256 int8 inputs to one int8 output, so the chain is computed here, ahead of
// time, and the kernel only looks it up: the table is what the reference interpreter itself
// computes for the chain's nodes on a tensor holding the 256 int8 values (dequantize, the
// activation evaluated as its reference defines it, any clamp, then the quantize's rounding). It
// is stored in the blob as a 256-entry int8 constant (entry v + 128 for input v), so the fused
// graph agrees with the interpreter bit for bit by construction.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/Patterns.h"
#include "core/Error.h"

namespace vkd::compiler::fusion {
namespace {

const char kLut[] = "q8ta_lut";

// The interpreter's output of chain `nodes` (the dq, the anchor, the tail: each reading the
// previous one's output through its only tensor input) for the int8 inputs -128 .. 127; "" in
// `why`, or why the interpreter (`interpret`, FuseState's) could not compute it.
std::vector<int8_t> chain_table(InterpretFn interpret, const Graph& g,
                                const std::vector<int>& nodes, std::string& why) {
  Graph t;
  Value in;
  in.name = "int8_values";
  in.dtype = DType::Int8;
  in.shape = {256};
  t.add_value(in);
  t.inputs = {in.name};
  std::string prev = in.name;
  for (int k : nodes) {
    Node n = g.nodes[k];
    const auto given = std::count_if(n.inputs.begin(), n.inputs.end(),
                                     [](const std::string& s) { return !s.empty(); });
    if (given != 1) {
      why = label(n) + " reads more than one tensor";
      return {};
    }
    n.inputs[0] = prev;
    prev = "chain_" + std::to_string(t.nodes.size());
    n.outputs = {prev};
    t.nodes.push_back(std::move(n));
  }
  t.outputs = {prev};
  std::vector<int8_t> values(256);
  for (int v = -128; v <= 127; ++v) values[static_cast<size_t>(v + 128)] = static_cast<int8_t>(v);
  try {
    return interpret(t, {{in.name, HostTensor::from_int8({256}, values)}}).at(prev).to_int8();
  } catch (const Error& e) {
    why = std::string("the reference cannot compute the table: ") + e.what();
    return {};
  }
}

// "" when the anchor's float output goes, through the tail, into a quantize.
std::string check_lut_tail(const Graph& g, const Node& anchor, const Tail& tail) {
  if (tail.kind == Tail::None) {
    return describe_consumers(g, anchor.outputs[0]) + " (" + kLut + " has int8 output only)";
  }
  return tail.kind == Tail::Half ? tail.why : "";
}

// The table as an int8 constant [256] of the graph, named after the chain's output.
std::string table_constant(Graph& g, const std::string& output, const std::vector<int8_t>& table) {
  Value v;
  v.name = g.unique_name(output + "_table");
  v.dtype = DType::Int8;
  v.shape = {256};
  v.data = std::vector<uint8_t>(table.begin(), table.end());
  g.add_value(v);
  return v.name;
}

}  // namespace

void fuse_lut(FuseState& state, int i) {
  const std::optional<DqAnchor> m = state.match_dq_anchor(i, kLut);
  if (!m) return;
  const Graph& g = state.graph;
  const Tail& tail = m->tail;
  QuantInfo in_q;
  std::string why = check_activation_dq(g, g.nodes[m->dq], m->dq, in_q);
  if (why.empty()) why = single_use(g, m->x);
  if (why.empty()) why = check_lut_tail(g, g.nodes[i], tail);
  if (why.empty() && state.any_claimed(m->nodes)) why = "overlaps another fused pattern";
  std::vector<int8_t> table;
  if (why.empty()) table = chain_table(state.interpret, g, m->nodes, why);
  if (!why.empty()) return state.not_fused(m->chain, m->nodes, kLut, why);

  Fusion f;
  f.nodes = m->nodes;
  f.dead = {m->x};
  f.dead.insert(f.dead.end(), tail.values.begin(), tail.values.end());
  Node& n = f.node;
  const std::string x_q = g.nodes[m->dq].inputs[0];
  const std::string output = g.nodes[tail.q].outputs[0];
  const std::string name = table_constant(state.graph, output, table);
  n.op = kLut;
  n.inputs = {x_q, name};
  n.outputs = {output};
  n.args["input_scale"] = in_q.scale;
  n.args["input_zero_point"] = in_q.zero_point;
  n.args["output_scale"] = tail.out_q.scale;
  n.args["output_zero_point"] = tail.out_q.zero_point;
  n.origin = state.fused_origin(i, n.op);
  state.produced[output] = tail.out_q;
  state.consume_quant(x_q, m->dq, in_q);
  const auto [lo, hi] = std::minmax_element(table.begin(), table.end());
  state.commit(std::move(f), m->chain,
               " (table " + quoted(name) + ", outputs " + std::to_string(*lo) + ".." +
                   std::to_string(*hi) + ")");
}

}  // namespace vkd::compiler::fusion
