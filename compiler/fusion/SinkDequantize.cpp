// sink_dequantize (SinkDequantize.h): dequantizes moved below the data movement they feed.
//
// Data movement (view_copy, permute / transpose, clones) only moves elements, so it commutes
// exactly with a per-tensor dequantize: dq -> moves == moves on the int8 data -> dq. A
// dequantize of an int8 activation whose float result flows only through data movement (each
// intermediate read once) into readers that are not quantizes is moved below the moves; the
// dequantize then sits in front of its reader again, where the fusion patterns look for it:
// dq -> view -> transpose -> contiguous -> view -> conv becomes an int8 channel shuffle
// (fuse_data_movement) and dq -> conv, an int8 conv. Each reader of the moved result gets a
// dequantize of its own, as the exporter writes them. A chain that ends in a quantize is left
// as it is: the data-movement pattern takes it whole, requantization included.
#include "compiler/fusion/SinkDequantize.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Match.h"

namespace vkd::compiler {
namespace {

using fusion::is_data_movement;
using fusion::kDq;
using fusion::kQ;

// One dequantize to move (node indices of the graph as the pass gets it).
struct Sink {
  int dq = -1;
  std::vector<int> moves;    // data order
  std::vector<int> readers;  // the nodes reading the last move's output
};

int only_reader(const Graph& g, const std::string& v) {
  if (g.is_graph_output(v)) return -1;
  const std::vector<int> c = g.consumers(v);
  return c.size() == 1 ? c[0] : -1;
}

// The moves below activation dequantize `k` and their readers, when it should be moved.
bool find_sink(const Graph& g, int k, Sink& s) {
  const Node& dq = g.nodes[k];
  QuantInfo q;
  if (dq.op != kDq || !fusion::check_activation_dq(g, dq, k, q).empty()) return false;
  s = Sink{k, {}, {}};
  std::string cur = dq.outputs[0];
  for (;;) {
    const int r = only_reader(g, cur);
    if (r < 0 || !is_data_movement(g.nodes[r].op) || g.nodes[r].outputs.size() != 1 ||
        g.nodes[r].inputs[0] != cur) {
      break;
    }
    s.moves.push_back(r);
    cur = g.nodes[r].outputs[0];
  }
  s.readers = g.consumers(cur);
  if (s.moves.empty() || (s.readers.empty() && !g.is_graph_output(cur))) return false;
  for (int r : s.readers) {
    if (g.nodes[r].op == kQ) return false;  // the data-movement pattern's
  }
  return true;
}

// A dequantize like `dq` reading `from` and writing a new float value `to` (shape of `like`).
Node dequantize_copy(Graph& g, const Node& dq, const std::string& from, const std::string& to,
                     const std::string& like) {
  if (!g.has_value(to)) {
    Value v = g.value(like);
    v.name = to;
    g.add_value(v);
  }
  Node n = dq;
  n.inputs = {from};
  n.outputs = {to};
  return n;
}

std::string describe(const Graph& g, const Sink& s) {
  std::string chain;
  for (int k : s.moves) chain += (chain.empty() ? "" : " -> ") + g.nodes[k].op;
  const std::string end = g.nodes[s.moves.back()].outputs[0];
  std::string line = "moved dq (node " + std::to_string(s.dq) + ") below " + chain + " (" +
                     fusion::node_list(s.moves) + "): they move the int8 values of " +
                     fusion::quoted(g.nodes[s.dq].inputs[0]) + ", " + fusion::quoted(end) +
                     " is dequantized after them";
  const size_t uses = s.readers.size() + (g.is_graph_output(end) ? 1 : 0);
  if (uses > 1) line += " (one dequantize per reader: " + std::to_string(uses) + ")";
  return line;
}

// Rewires the moves of `s` onto int8 values and returns the dequantize nodes to emit after
// the last move: the moved one, writing the chain's float result under its own name, then one
// per further reader (every reader, when that result is also a graph output).
std::vector<Node> sink(Graph& g, const Sink& s) {
  const Node dq = g.nodes[s.dq];
  const std::string end = g.nodes[s.moves.back()].outputs[0];
  std::vector<std::string> dead = {dq.outputs[0]};
  std::string int8 = dq.inputs[0];
  for (int k : s.moves) {
    Node& m = g.nodes[k];
    Value v = g.value(m.outputs[0]);
    if (v.name != end) dead.push_back(v.name);
    v.name = g.unique_name(v.name + "_int8");
    v.dtype = g.value(int8).dtype;
    g.add_value(v);
    m.inputs[0] = int8;
    m.outputs[0] = v.name;
    int8 = v.name;
  }
  for (const std::string& v : dead) g.remove_value(v);
  std::vector<Node> out = {dequantize_copy(g, dq, int8, end, end)};
  const bool output = g.is_graph_output(end);
  for (size_t r = output ? 0 : 1; r < s.readers.size(); ++r) {
    const std::string own = g.unique_name(end);
    out.push_back(dequantize_copy(g, dq, int8, own, end));
    std::vector<std::string>& inputs = g.nodes[s.readers[r]].inputs;
    std::replace(inputs.begin(), inputs.end(), end, own);
  }
  return out;
}

}  // namespace

PassReport sink_dequantize(Graph& g) {
  PassReport report{"sink_dequantize", {}};
  std::vector<Sink> sinks;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    Sink s;
    if (find_sink(g, static_cast<int>(k), s)) sinks.push_back(s);
  }
  std::map<int, std::vector<Node>> emit_after;
  std::set<int> moved;
  for (const Sink& s : sinks) {
    report.lines.push_back(describe(g, s));
    emit_after[s.moves.back()] = sink(g, s);
    moved.insert(s.dq);
  }
  std::vector<Node> nodes;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const int i = static_cast<int>(k);
    if (moved.count(i)) continue;
    nodes.push_back(std::move(g.nodes[k]));
    auto it = emit_after.find(i);
    if (it != emit_after.end()) nodes.insert(nodes.end(), it->second.begin(), it->second.end());
  }
  g.nodes = std::move(nodes);
  return report;
}

}  // namespace vkd::compiler
