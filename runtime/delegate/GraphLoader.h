// Blob -> ComputeGraph: one GPU tensor per tensor value the graph uses (constants through
// their packers, uploaded once at prepare()), each op call through its registered builder
// (runtime/ops/OpRegistry.h), then the graph inputs and outputs. Checks the data flow first:
// every tensor an op reads is a constant, a graph input or written by an earlier op; every
// tensor it writes is written only there and is neither a constant nor an input.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "serialization/Deserializer.h"

namespace vkd::delegate {

struct GraphIO {
  std::string name;    // the blob's name, else the tensor's
  bool named = false;  // the blob gave a name
  graph::ValueRef ref = -1;
  TensorSpec spec;
};

// One op call of the blob and the dispatch nodes it became.
struct LoadedOp {
  std::string name;
  std::vector<std::string> args;  // "input=x_q", "scale=0.02", ...
  size_t first_node = 0, node_count = 0;
};

struct LoadedGraph {
  std::unique_ptr<graph::ComputeGraph> graph;
  std::vector<GraphIO> inputs, outputs;
  std::vector<LoadedOp> ops;
  std::vector<std::string> ops_without_resize;  // op names whose kernels take fixed shapes
};

// Deserializes (validating against the op registry's signatures), builds and prepares.
// With `expose_intermediates`, every tensor an op writes is also a graph output (after the
// blob's outputs, in op order), so a debugger can read it after execute(); those tensors then
// get their own memory instead of sharing it. `timestamps`: ComputeGraph::set_timestamps.
LoadedGraph load_graph(vk::Context& context, const uint8_t* blob, size_t size,
                       uint64_t constant_batch_bytes, bool expose_intermediates = false,
                       bool timestamps = true);
// The same from a graph read already (read_blob), e.g. a dynamic-length blob's graph at one
// length (serialization/GraphAtLength.h); its constant views must outlive the call. `shared`:
// the memory it shares with the model's other graphs (ComputeGraph::set_shared_memory).
LoadedGraph load_graph(vk::Context& context, const serialization::DeserializedGraph& g,
                       uint64_t constant_batch_bytes, bool expose_intermediates = false,
                       bool timestamps = true,
                       std::shared_ptr<graph::SharedGraphMemory> shared = nullptr);
// deserialize() against the op registry's signatures.
serialization::DeserializedGraph read_blob(const uint8_t* blob, size_t size);

}  // namespace vkd::delegate
