#include "compiler/ShapeInference.h"

#include <algorithm>
#include <string>

#include "compiler/ops/EdgeOp.h"
#include "compiler/ops/ShapeContext.h"
#include "core/Error.h"

namespace vkd::compiler {

namespace {

std::string typed_str(DType dtype, const std::vector<int64_t>& shape) {
  return std::string(to_string(dtype)) + " " + shape_str(shape);
}

// A node whose op has no descriptor: nothing to infer, but its outputs must have been
// declared (the graph IR's "values") for later nodes and the host plan to know their types.
void check_unknown_op_outputs(const Graph& graph, const Node& node) {
  for (const std::string& name : node.outputs) {
    VKD_CHECK(graph.has_value(name), ErrorCode::InvalidArgument, node.origin, ": op: unknown op '",
              node.op, "' for shape inference: output '", name,
              "' is not declared; declare its dtype and shape in 'values'");
  }
}

// Whether `node` reads a value of a dtype no device tensor has (Value::foreign_dtype).
bool reads_foreign_dtype(const Graph& graph, const Node& node) {
  return std::any_of(node.inputs.begin(), node.inputs.end(), [&](const std::string& in) {
    return !in.empty() && graph.has_value(in) && !graph.value(in).foreign_dtype.empty();
  });
}

}  // namespace

void infer_shapes(Graph& graph) {
  for (size_t index = 0; index < graph.nodes.size(); ++index) infer_node_shapes(graph, index);
}

void infer_node_shapes(Graph& graph, size_t index) {
  VKD_CHECK(index < graph.nodes.size(), ErrorCode::Internal, "infer_node_shapes: node ", index,
            " out of range (", graph.nodes.size(), " nodes)");
  Node node = graph.nodes[index];  // a copy: add_value below may not disturb it
  if (node.origin.empty()) node.origin = "node " + std::to_string(index) + " (" + node.op + ")";
  const EdgeOp* op = find_edge_op(node.op);
  // An op's rule expects device dtypes; a node reading another is never lowered (Partition.h):
  // its outputs are typed as declared, as an unknown op's are.
  if (op == nullptr || reads_foreign_dtype(graph, node)) {
    return check_unknown_op_outputs(graph, node);
  }
  const ShapeContext ctx(graph, node, *op);
  ctx.max_inputs();
  const std::vector<TypedShape> inferred = op->infer(ctx);
  if (node.outputs.size() != inferred.size()) {
    ctx.fail("outputs", "expected ", inferred.size(), " output(s), got ", node.outputs.size());
  }
  for (size_t k = 0; k < inferred.size(); ++k) {
    const std::string& name = node.outputs[k];
    const TypedShape& t = inferred[k];
    if (name.empty()) ctx.fail("outputs", "output ", k, " has an empty name");
    if (t.shape.size() > kMaxGraphRank) {
      ctx.fail("output '" + name + "'", "inferred rank ", t.shape.size(),
               " is above the supported ", kMaxGraphRank, ": ", shape_str(t.shape));
    }
    if (!graph.has_value(name)) {
      Value v;
      v.name = name;
      v.dtype = t.dtype;
      v.shape = t.shape;
      graph.add_value(std::move(v));
      continue;
    }
    const Value& existing = graph.value(name);
    const bool is_input =
        std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end();
    if (existing.is_constant() || is_input) {
      ctx.fail("output '" + name + "'", "is already defined as a ",
               is_input ? "graph input" : "constant");
    }
    if (existing.dtype != t.dtype || existing.shape != t.shape) {
      ctx.fail("output '" + name + "'", "declared ", typed_str(existing.dtype, existing.shape),
               ", inferred ", typed_str(t.dtype, t.shape));
    }
  }
}

}  // namespace vkd::compiler
