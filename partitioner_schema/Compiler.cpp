#include "partitioner_schema/Compiler.h"

#include <sstream>

#include "partitioner_schema/Emit.h"
#include "partitioner_schema/Fold.h"
#include "partitioner_schema/Fuse.h"
#include "partitioner_schema/OpSchema.h"
#include "partitioner_schema/Parse.h"
#include "partitioner_schema/ShapeInference.h"
#include "runtime/common/Error.h"

namespace vkd::compiler {

void check_backend_support(const Graph& g) {
  std::string problems;
  size_t count = 0;
  for (const auto& node : g.nodes) {
    const OpSchema* schema = find_op_schema(node.op);
    std::string why;
    if (schema == nullptr) {
      why = "not supported by the backend (no fusion pattern or backend op for '" + node.op + "')";
    } else if (!schema->has_kernel && !schema->identity) {
      why = "not yet supported by the backend (backend op '" + schema->name +
            "' has no kernel yet)";
    }
    if (why.empty()) continue;
    ++count;
    problems += "\n  " + node.origin + ": " + why;
  }
  VKD_CHECK(count == 0, ErrorCode::Unsupported, count, " node(s) cannot be compiled:", problems);
}

CompileResult compile_graph(Graph g, const CompileOptions& options) {
  CompileResult result;
  infer_shapes(g);
  result.reports.push_back(fuse_and_lower(g));
  check_backend_support(g);
  result.reports.push_back(propagate_layouts(g, options.layout));
  result.reports.push_back(fold_identities(g));
  result.blob = emit_blob(g);
  result.graph = std::move(g);
  return result;
}

CompileResult compile_file(const std::string& graph_path, const std::string& weights_path,
                           const CompileOptions& options) {
  return compile_graph(parse_graph_file(graph_path, weights_path), options);
}

std::string format_report(const CompileResult& result) {
  std::ostringstream os;
  for (const auto& r : result.reports) {
    os << "[" << r.pass << "] " << (r.lines.empty() ? "no changes" : "") << "\n";
    for (const auto& line : r.lines) os << "  " << line << "\n";
  }
  const Graph& g = result.graph;
  os << "[final] " << g.nodes.size() << " nodes, " << result.blob.size() << " blob bytes\n";
  for (const auto& node : g.nodes) {
    os << "  " << node.op << "(";
    for (size_t i = 0; i < node.inputs.size(); ++i) os << (i ? ", " : "") << node.inputs[i];
    os << ") -> ";
    for (size_t i = 0; i < node.outputs.size(); ++i) os << (i ? ", " : "") << node.outputs[i];
    os << "\n";
  }
  os << "[layouts]\n";
  for (const auto& name : g.value_names()) {
    const Value& v = g.value(name);
    os << "  " << name << ": " << to_string(v.dtype) << " " << to_string(*v.storage) << " "
       << to_string(*v.layout) << (v.is_constant() ? " (constant)" : "") << "\n";
  }
  return os.str();
}

}  // namespace vkd::compiler
