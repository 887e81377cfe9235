#include "compiler/Fold.h"

#include <algorithm>

#include "core/Error.h"

namespace vkd::compiler {
namespace {

bool same_placement(const Value& a, const Value& b) {
  return a.storage == b.storage && a.layout == b.layout;
}

bool is_conversion(const Node& n) { return n.op == "q8ta_convert" || n.op == "float_convert"; }

// A value the graph's interface or constants pin down: it cannot be renamed away.
bool is_fixed(const Graph& g, const std::string& v) {
  return g.is_graph_input(v) || g.value(v).is_constant() || g.is_graph_output(v);
}

// Every reference to `drop` now names `keep`; `drop` disappears.
void merge_values(Graph& g, const std::string& keep, const std::string& drop) {
  for (auto& n : g.nodes) {
    std::replace(n.inputs.begin(), n.inputs.end(), drop, keep);
    std::replace(n.outputs.begin(), n.outputs.end(), drop, keep);
  }
  std::replace(g.inputs.begin(), g.inputs.end(), drop, keep);
  std::replace(g.outputs.begin(), g.outputs.end(), drop, keep);
  g.remove_value(drop);
}

// Removes node `k` that passes `in` through to `out` unchanged. Returns false when it must stay.
bool bypass(Graph& g, size_t k, PassReport& report, const std::string& why) {
  const std::string in = g.nodes[k].inputs.at(0), out = g.nodes[k].outputs.at(0);
  const bool in_fixed = is_fixed(g, in);
  const bool out_fixed = g.is_graph_output(out);
  if (in_fixed && out_fixed) return false;
  const std::string origin = g.nodes[k].origin;
  g.nodes.erase(g.nodes.begin() + static_cast<long>(k));
  // Keep the name the user sees: a graph output's name survives, else the input's.
  if (out_fixed) {
    merge_values(g, out, in);
  } else {
    merge_values(g, in, out);
  }
  report.lines.push_back("folded " + origin + " (" + why + ")");
  return true;
}

}  // namespace

PassReport fold_identities(Graph& g) {
  PassReport report{"fold", {}};
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t k = 0; k < g.nodes.size() && !changed; ++k) {
      Node& n = g.nodes[k];
      if (n.op != "identity" && !is_conversion(n)) continue;
      const Value& in = g.value(n.inputs.at(0));
      const Value& out = g.value(n.outputs.at(0));
      if (same_placement(in, out)) {
        if (bypass(g, k, report, "input and output share " + std::string(to_string(*in.layout)))) {
          changed = true;
        } else if (n.op == "identity") {
          // Graph input straight to graph output: a real copy in the same layout.
          n.op = in.dtype == DType::Int8x4 ? "q8ta_convert" : "float_convert";
          n.args.clear();
          if (in.dtype == DType::Int8x4) {
            n.args["zero_point"] = in.quant ? in.quant->zero_point : int64_t{0};
          }
          report.lines.push_back("kept " + n.origin + " as a copy (graph input to graph output)");
        }
        continue;
      }
      if (!is_conversion(n)) continue;
      // A -> B here, B -> A' later with A' in A's placement and B read by nothing else.
      const std::string mid = n.outputs[0];
      const auto readers = g.consumers(mid);
      if (readers.size() != 1 || g.is_graph_output(mid)) continue;
      Node& next = g.nodes[readers[0]];
      if (!is_conversion(next) || !same_placement(in, g.value(next.outputs[0]))) continue;
      const std::string a = n.inputs[0], a2 = next.outputs[0];
      const bool a_fixed = is_fixed(g, a);
      if (a_fixed && g.is_graph_output(a2)) continue;  // an op must still write the output
      const std::string origins = n.origin + " and " + next.origin;
      // Remove the second conversion first (higher index), then the first.
      const size_t second = static_cast<size_t>(readers[0]);
      g.nodes.erase(g.nodes.begin() + static_cast<long>(std::max(k, second)));
      g.nodes.erase(g.nodes.begin() + static_cast<long>(std::min(k, second)));
      g.remove_value(mid);
      if (g.is_graph_output(a2)) {
        merge_values(g, a2, a);
      } else {
        merge_values(g, a, a2);
      }
      report.lines.push_back("removed conversions that cancel: " + origins);
      changed = true;
    }
  }
  return report;
}

}  // namespace vkd::compiler
