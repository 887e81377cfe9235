// Shape and dtype inference for edge-dialect graphs (the ops of compiler/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/ops/ShapeFormulas.h"  // the formulas, exposed for passes and tests

namespace vkd::compiler {

// The highest rank a value of the graph IR may have (ExecuTorch exporters produce up to 6-D
// tensors around the ops they leave to the host). Device tensors are at most 4-D
// (Partition.h, kMaxDeviceRank); op shape rules that need less check it themselves.
constexpr size_t kMaxGraphRank = 6;

// Walks the nodes in order and computes the dtype and shape of every node output from the
// op's semantics, checking the inputs' dtypes and shapes and the args' values on the way.
// An output value that is absent from the graph is added; one that is already there (declared
// in the graph file, or inferred by an earlier run) must match what is inferred. Errors are
// vkd::Error(InvalidArgument) naming the node (its origin) and the field, expected vs got.
// An op without a descriptor (compiler/ops/) is not inferred: its outputs must already be in
// the graph (declared in "values"); one that is not throws, naming the node and the output.
void infer_shapes(Graph& graph);
// The same for graph.nodes[index] alone (its inputs must already be typed).
void infer_node_shapes(Graph& graph, size_t index);

}  // namespace vkd::compiler
