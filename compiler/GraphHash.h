// The graph IR hash a blob records (serialization/Blob.h, header field source_graph_hash), so
// `vkd run MODEL.vkd --check GRAPH.json` can refuse a graph the model was not compiled from
// before comparing anything.
#pragma once

#include <cstdint>

#include "compiler/GraphIR.h"

namespace vkd::compiler {

// XXH64 of the graph as parse_graph() returns it (before any pass): its inputs and outputs in
// order; every value in name order with its dtype, shape and constant bytes (the weights); every
// node in order with its op, inputs, outputs and arguments. The JSON's formatting and key
// order, the fields the parser ignores, and the safetensors file's layout and tensor names do
// not change it; any other change of the graph or of a weight does (up to XXH64 collisions).
uint64_t graph_ir_hash(const Graph& parsed);

}  // namespace vkd::compiler
