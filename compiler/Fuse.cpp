// The driver of fuse_and_lower: each edge op's fusion pattern and direct lowering come from its
// descriptor (compiler/ops/<Family>.cpp, pointing into compiler/fusion/); the steps around them
// are fusion/PassSteps.h, run in the order the report lists their lines.
#include "compiler/Fuse.h"

#include <map>
#include <string>
#include <vector>

#include "compiler/Interpreter.h"
#include "compiler/Partition.h"
#include "compiler/fusion/FuseState.h"
#include "compiler/fusion/PassSteps.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/ops/EdgeOp.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler {
namespace {

using fusion::FuseState;

// The nodes (graph as given) that read or write a tensor of a rank no device tensor has: they
// stay edge ops (host nodes under --partition). A pattern's values have its anchor's shapes
// (dq, activations and q are elementwise), so keeping the anchor keeps the whole pattern;
// a pattern that takes such anchors (EdgeOp::fuses_beyond_device) makes a 4-D op of them.
std::vector<bool> host_only_nodes(const Graph& g) {
  std::vector<bool> host_only(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    host_only[i] = tensor_beyond_device(g, g.nodes[i]) != nullptr;
  }
  return host_only;
}

// Reports the host-only nodes no pattern took.
void note_host_only(FuseState& state, const std::vector<bool>& host_only) {
  const Graph& g = state.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!host_only[i] || state.claimed[i]) continue;
    if (find_edge_op(g.nodes[i].op) == nullptr) continue;  // unknown: never lowered anyway
    state.note("kept node " + std::to_string(i) + " (" + g.nodes[i].op +
               ") as an edge op: " + beyond_device_reason(*tensor_beyond_device(g, g.nodes[i])));
  }
}

// Tries every pattern anchored at a node not yet taken by an earlier match, in node order; an
// anchor beyond the device's rank only where its pattern says it takes such nodes. The patterns
// that take nodes a smaller pattern would take first (EdgeOp::fuses_before_its_producers) come in
// a first pass; those that join the match of a later node (EdgeOp::fuses_after_its_consumers) in
// a last pass, once those matches exist.
void match_patterns(FuseState& state, const std::vector<bool>& host_only) {
  enum Pass { kFirst, kInOrder, kLast };
  for (const Pass pass : {kFirst, kInOrder, kLast}) {
    for (size_t i = 0; i < state.graph.nodes.size(); ++i) {
      if (state.claimed[i]) continue;
      const EdgeOp* op = find_edge_op(state.graph.nodes[i].op);
      if (op == nullptr || op->fuse == nullptr) continue;
      const Pass its = op->fuses_before_its_producers  ? kFirst
                       : op->fuses_after_its_consumers ? kLast
                                                       : kInOrder;
      if (its != pass) continue;
      if (host_only[i] && !op->fuses_beyond_device) continue;
      op->fuse(state, static_cast<int>(i));
    }
  }
}

// "lowered <n> node(s): 2 identity, 1 q8ta_quantize" / "left <n> node(s) as edge ops: ...".
void report_lowering(FuseState& state, const std::map<std::string, int>& counts,
                     const std::vector<std::string>& left) {
  if (!counts.empty()) {
    int total = 0;
    std::string parts;
    for (const auto& kv : counts) {
      total += kv.second;
      parts += (parts.empty() ? "" : ", ") + std::to_string(kv.second) + " " + kv.first;
    }
    state.note("lowered " + std::to_string(total) + " node(s): " + parts);
  }
  if (!left.empty()) {
    std::string parts;
    for (const auto& s : left) parts += (parts.empty() ? "" : ", ") + s;
    state.note("left " + std::to_string(left.size()) + " node(s) as edge ops: " + parts);
  }
}

// Lowers the edge ops left after fusion that have a direct backend op; `origin` holds each
// node's index in the graph as given (what messages name).
void lower_remaining(FuseState& state, const std::vector<int>& origin,
                     const std::vector<bool>& host_only) {
  std::map<std::string, int> counts;
  std::vector<std::string> left;
  for (size_t i = 0; i < state.graph.nodes.size(); ++i) {
    Node& n = state.graph.nodes[i];
    if (schema::find_op_schema(n.op) != nullptr) continue;  // fused above
    const EdgeOp* op = find_edge_op(n.op);
    const bool lowerable = op && op->lower && !host_only[origin[i]];
    const std::string backend = lowerable ? op->lower(state, n, origin[i]) : "";
    if (backend.empty()) {
      left.push_back(n.op + " (node " + std::to_string(origin[i]) + ")");
    } else {
      ++counts[backend];
    }
  }
  report_lowering(state, counts, left);
}

}  // namespace

PassReport fuse_and_lower(Graph& g, const FuseOptions& options) {
  FuseState state(g, options, &interpret);
  const std::vector<bool> host_only = host_only_nodes(g);
  match_patterns(state, host_only);
  fusion::join_depthwise_pointwise(state);
  fusion::join_shuffled_head(state);
  fusion::join_qkv_linears(state);
  note_host_only(state, host_only);
  std::vector<int> origin = fusion::apply_fusions(state);
  fusion::fold_weight_dqs(state, origin);
  lower_remaining(state, origin, host_only);
  fusion::assign_int8x4(state);
  for (const auto& n : g.nodes) fusion::check_against_schema(g, n);
  return std::move(state.report);
}

}  // namespace vkd::compiler
