// Applying the matches to the graph once every anchor was tried, then dropping the weight
// dequantize nodes they made unread.
#include <algorithm>
#include <map>
#include <set>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/PassSteps.h"

namespace vkd::compiler::fusion {
namespace {

bool unused(const Graph& g, const std::string& v) {
  return g.consumers(v).empty() && !g.is_graph_output(v) && !g.is_graph_input(v);
}

// A dequantize of a constant whose output some fused node stopped reading.
bool is_folded_weight_dq(const Graph& g, const Node& n, const std::set<std::string>& folded) {
  return (n.op == kDq || n.op == kDqChannel) && !n.inputs.empty() && !n.inputs[0].empty() &&
         g.value(n.inputs[0]).is_constant() && n.outputs.size() == 1 && folded.count(n.outputs[0]);
}

void report_weight_dqs(FuseState& state, const std::vector<int>& removed,
                       const std::vector<int>& kept) {
  if (!removed.empty()) {
    state.note("folded " + std::to_string(removed.size()) + " weight dequantize node(s) (" +
               node_list(removed) + ")");
  }
  if (!kept.empty()) {
    state.note("kept weight dequantize " + node_list(kept) +
               ": its output is also read by unfused nodes or is a graph output");
  }
}

}  // namespace

std::vector<int> apply_fusions(FuseState& state) {
  Graph& g = state.graph;
  std::map<int, size_t> emit_at;
  for (size_t k = 0; k < state.fusions.size(); ++k) {
    const std::vector<int>& nodes = state.fusions[k].nodes;
    emit_at[*std::max_element(nodes.begin(), nodes.end())] = k;
  }
  std::vector<Node> nodes;
  std::vector<int> origin;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto it = emit_at.find(static_cast<int>(i));
    if (it != emit_at.end()) {
      nodes.push_back(state.fusions[it->second].node);
      origin.push_back(static_cast<int>(i));
    } else if (!state.claimed[i]) {
      nodes.push_back(std::move(g.nodes[i]));
      origin.push_back(static_cast<int>(i));
    }
  }
  g.nodes = std::move(nodes);
  for (const auto& f : state.fusions) {
    for (const auto& v : f.dead) {
      if (g.has_value(v)) g.remove_value(v);
    }
  }
  return origin;
}

void fold_weight_dqs(FuseState& state, std::vector<int>& origin) {
  Graph& g = state.graph;
  std::set<std::string> folded;
  for (const auto& f : state.fusions) folded.insert(f.folded.begin(), f.folded.end());
  std::vector<Node> nodes;
  std::vector<int> kept_origin, removed, kept;
  std::vector<std::string> removed_inputs, removed_outputs;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    const bool weight_dq = is_folded_weight_dq(g, n, folded);
    if (weight_dq && unused(g, n.outputs[0])) {
      removed.push_back(origin[i]);
      removed_outputs.push_back(n.outputs[0]);
      for (const auto& in : n.inputs) {
        if (!in.empty()) removed_inputs.push_back(in);
      }
      continue;
    }
    if (weight_dq) kept.push_back(origin[i]);
    nodes.push_back(std::move(n));
    kept_origin.push_back(origin[i]);
  }
  g.nodes = std::move(nodes);
  origin = std::move(kept_origin);
  for (const auto& v : removed_outputs) g.remove_value(v);
  for (const auto& v : removed_inputs) {
    if (g.has_value(v) && g.value(v).is_constant() && unused(g, v)) g.remove_value(v);
  }
  report_weight_dqs(state, removed, kept);
}

}  // namespace vkd::compiler::fusion
