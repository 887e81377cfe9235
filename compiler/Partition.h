// Splits a lowered graph into the parts the backend can run and the nodes left to the host
// (`vkd compile --partition`). A node runs on the backend when its op is a backend op with a
// kernel (or an identity); every other node is a host node.
//
// Partitions are maximal: backend nodes joined by a tensor share a partition unless merging
// them would make the partitions depend on each other in a cycle (a path that leaves the
// partition through a host node and comes back). Built greedily in node order: a node joins
// its producers' partitions where that keeps the partition graph acyclic.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"

namespace vkd::compiler {

bool runs_on_backend(const Node& node);

// Device tensors are at most 4-D (core/TensorSpec.h); the graph IR allows up to
// kMaxGraphRank, so a node reading or writing a higher-rank tensor can only run on the host:
// fuse_and_lower keeps it an edge op, the compile without --partition lists it as unsupported.
constexpr size_t kMaxDeviceRank = 4;
// Whether a device tensor can hold `v`: rank at most kMaxDeviceRank, a device dtype.
bool fits_device(const Value& v);
// The first tensor `node` reads or writes that no device tensor can hold, or nullptr.
const Value* tensor_beyond_device(const Graph& g, const Node& node);
// "value 'x' has rank 5 ([1, 2, 3, 4, 5]); device tensors are at most 4-D", or "value 'm' is
// bool; device tensors are float32, float16, int8 or int32".
std::string beyond_device_reason(const Value& v);

struct Partition {
  // The subgraph: its inputs are the tensors it reads from outside (graph inputs, host node or
  // other partition outputs), its outputs what the graph or a later step reads. Constants it
  // reads are copied in. Placements are not decided yet.
  Graph graph;
  std::vector<int> nodes;  // indices into the partitioned graph
};

struct PartitionStep {
  bool delegate = false;  // true: partitions[index]; false: the host node nodes[index]
  size_t index = 0;
};

struct PartitionPlan {
  std::vector<Partition> partitions;  // numbered in execution order
  std::vector<PartitionStep> steps;   // a valid execution order of partitions and host nodes
};

// `g`: after fusion and lowering, in node order. Deterministic. `on_backend` decides which
// nodes the backend runs (tests pass their own).
PartitionPlan partition_graph(const Graph& g,
                              const std::function<bool(const Node&)>& on_backend = runs_on_backend);

}  // namespace vkd::compiler
