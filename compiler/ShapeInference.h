// Shape and dtype inference for edge-dialect graphs (the ops of compiler/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/GraphIR.h"

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

// The formulas, exposed for passes and tests.
// Convolution output extent: floor((in + 2*pad - dil*(k-1) - 1) / stride) + 1 (may be < 1).
int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);
// Pooling output extent as PyTorch computes it: like conv_output_size, rounded up with
// ceil_mode, where the last window must then start inside the input or its left padding.
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                         bool ceil_mode);
// PyTorch broadcasting of two shapes; false when they do not broadcast.
bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                      std::vector<int64_t>* out);

}  // namespace vkd::compiler
