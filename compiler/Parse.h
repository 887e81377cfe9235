// The graph IR reader: JSON (compiler/README.md, "Graph IR") plus an optional
// safetensors file -> compiler::Graph with every value typed and shaped.
#pragma once

#include <string>

#include "compiler/GraphIR.h"
#include "compiler/Safetensors.h"

namespace vkd::compiler {

// Parses and validates a graph IR document and infers shapes (infer_node_shapes() on each
// node as it is read), so every node output of the returned graph has its dtype and shape.
// `source_name` (usually the file path) prefixes every message; `weights` may be null when no value
// has `data`.
//
// What the graph holds: graph inputs (in `inputs` order), then constants (in `values` order;
// an int64 constant is narrowed to int32), then node outputs in node order. Node inputs are
// padded with "" to the op's full tensor arity; absent optional args that have a plain default
// in the README table are filled in with it; node.origin is "node <index> (<op>)", index
// counted from 0 in `nodes`. A node whose op has no descriptor (not in the table) is kept as
// written: inputs unpadded, args as literals, outputs typed as declared in "values" (each must
// be declared). Values have rank at most kMaxGraphRank (6).
//
// Errors: vkd::Error(InvalidArgument) whose message names the node (or value) and the field.
Graph parse_graph(const std::string& json_text, const std::string& source_name,
                  const SafetensorsFile* weights);

// Reads `json_path` and, when `weights_path` is not empty, the safetensors file; then
// parse_graph(). A missing or unreadable file: InvalidArgument naming the path.
Graph parse_graph_file(const std::string& json_path, const std::string& weights_path);

// The edge ops the parser accepts (the README table), in table order.
const std::vector<std::string>& accepted_edge_ops();

}  // namespace vkd::compiler
