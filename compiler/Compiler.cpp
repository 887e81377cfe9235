#include "compiler/Compiler.h"

#include <algorithm>
#include <sstream>

#include "compiler/Emit.h"
#include "compiler/Fold.h"
#include "compiler/Fuse.h"
#include "compiler/Parse.h"
#include "compiler/ShapeInference.h"
#include "partitioner_schema/OpSchema.h"
#include "runtime/core/Error.h"

namespace vkd::compiler {

std::vector<std::string> unsupported_nodes(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& node : g.nodes) {
    const schema::OpSchema* schema = schema::find_op_schema(node.op);
    if (schema == nullptr) {
      // Every edge op the parser accepts is planned for the backend (README table).
      const auto& planned = accepted_edge_ops();
      const bool later = std::find(planned.begin(), planned.end(), node.op) != planned.end();
      out.push_back(node.origin + (later ? ": not yet supported by the backend" : ": not supported by the backend") +
                    " (no fusion pattern or backend op for '" + node.op + "')");
    } else if (!schema->runnable()) {
      out.push_back(node.origin + ": not yet supported by the backend (backend op '" +
                    schema->name + "' has no kernel yet)");
    }
  }
  return out;
}

void CompileResult::throw_if_unsupported() const {
  if (unsupported.empty()) return;
  std::string list;
  for (const auto& u : unsupported) list += "\n  " + u;
  VKD_THROW(ErrorCode::Unsupported, unsupported.size(), " node(s) cannot be compiled:", list);
}

namespace {

// Layout propagation, identity folding and emission of a lowered graph (when every node is a
// backend op; the blob only when every node can run).
void place_and_emit(Graph g, const CompileOptions& options, CompileResult& result) {
  result.unsupported = unsupported_nodes(g);
  const bool all_backend_ops = std::all_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) {
    return schema::find_op_schema(n.op) != nullptr;
  });
  if (all_backend_ops) {
    result.reports.push_back(propagate_layouts(g, options.layout));
    result.reports.push_back(fold_identities(g));
  }
  if (result.ok()) result.blob = emit_blob(g);
  result.graph = std::move(g);
}

}  // namespace

CompileResult compile_graph(Graph g, const CompileOptions& options) {
  CompileResult result;
  infer_shapes(g);
  result.reports.push_back(fuse_and_lower(g));
  place_and_emit(std::move(g), options, result);
  return result;
}

PartitionedResult compile_partitioned(Graph g, const CompileOptions& options) {
  PartitionedResult result;
  infer_shapes(g);
  result.fusion = fuse_and_lower(g, FuseOptions{true});
  result.plan = partition_graph(g);
  for (const auto& part : result.plan.partitions) {
    CompileResult r;
    place_and_emit(part.graph, options, r);
    r.throw_if_unsupported();  // a partition holds only runnable nodes
    result.parts.push_back(std::move(r));
  }
  result.lowered = std::move(g);
  return result;
}

CompileResult compile_file(const std::string& graph_path, const std::string& weights_path,
                           const CompileOptions& options) {
  return compile_graph(parse_graph_file(graph_path, weights_path), options);
}

std::string format_report(const CompileResult& result) {
  std::ostringstream os;
  for (const auto& r : result.reports) {
    os << "[" << r.pass << "]" << (r.lines.empty() ? " no changes" : "") << "\n";
    for (const auto& line : r.lines) os << "  " << line << "\n";
  }
  const Graph& g = result.graph;
  os << "[final] " << g.nodes.size() << " nodes, "
     << (result.ok() ? std::to_string(result.blob.size()) + " blob bytes" : "no blob") << "\n";
  for (const auto& node : g.nodes) {
    os << "  " << node.op << "(";
    for (size_t i = 0; i < node.inputs.size(); ++i) os << (i ? ", " : "") << node.inputs[i];
    os << ") -> ";
    for (size_t i = 0; i < node.outputs.size(); ++i) os << (i ? ", " : "") << node.outputs[i];
    os << "\n";
  }
  os << "[placements]\n";
  for (const auto& name : g.value_names()) {
    const Value& v = g.value(name);
    os << "  " << name << ": " << to_string(v.dtype);
    if (v.storage && v.layout) os << " " << to_string(*v.storage) << " " << to_string(*v.layout);
    os << (v.is_constant() ? " (constant)" : "") << "\n";
  }
  for (const auto& u : result.unsupported) os << "[unsupported] " << u << "\n";
  return os.str();
}

}  // namespace vkd::compiler
