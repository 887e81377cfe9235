// The ahead-of-time compiler as a library: graph IR in, delegate blob out, with a report of
// what each pass decided. Passes, in order: parse + validate + shape inference, fusion and
// lowering to backend ops, the backend-support check, layout propagation, identity folding,
// serialization (validated by reading it back).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/LayoutPropagation.h"
#include "compiler/Partition.h"
#include "compiler/PassReport.h"

namespace vkd::compiler {

struct CompileOptions {
  LayoutOptions layout;
  // Fusions into a conv / linear epilogue (FuseOptions::fuse_epilogues; the CLI's
  // --no-fuse-epilogue turns them off).
  bool fuse_epilogues = true;
};

struct CompileResult {
  std::vector<uint8_t> blob;             // empty when `unsupported` is not
  std::vector<PassReport> reports;       // one per pass that ran, in order
  Graph graph;                           // the compiled graph (backend ops, placements decided)
  std::vector<std::string> unsupported;  // "node 4 (aten.max_pool2d): not yet supported ..."
  bool ok() const { return unsupported.empty(); }
  // Throws Unsupported listing every unsupported node with its reason (no-op when ok()).
  void throw_if_unsupported() const;
};

// `g` as parsed (shapes of node outputs are inferred here). Invalid graphs throw
// InvalidArgument; nodes the backend cannot run do not throw: they are listed in
// `unsupported`, the passes still run as far as they can (so the report shows the layouts the
// graph would get) and no blob is written.
CompileResult compile_graph(Graph g, const CompileOptions& options);
// Reads GRAPH.json (+ the safetensors file, "" for none) and compiles it.
CompileResult compile_file(const std::string& graph_path, const std::string& weights_path,
                           const CompileOptions& options);

// `vkd compile --partition`: fusion only into ops with kernels, then one compiled blob per
// partition (compiler/Partition.h); the host nodes keep their edge ops.
struct PartitionedResult {
  std::vector<PassReport> before_fusion;  // sink_dequantize's, when it moved anything
  PassReport fusion;
  Graph lowered;  // after fusion, before placement
  PartitionPlan plan;
  std::vector<CompileResult> parts;  // one per plan.partitions entry, each ok()
};
PartitionedResult compile_partitioned(Graph g, const CompileOptions& options);

// The host's execution plan as JSON: steps in order (delegate blobs named by `blob_files`,
// host nodes with their op, args and origin) and every boundary tensor's dtype, shape and
// quantization as the host sees it (int8x4 tensors are int8 on the host).
std::string partition_plan_json(const PartitionedResult& result,
                                const std::vector<std::string>& blob_files);

// Every node of a lowered graph the backend cannot run, with its reason ("node 3 (aten.gelu):
// not supported by the backend (...)"), then every value beyond a device tensor's rank that no
// node touches.
std::vector<std::string> unsupported_nodes(const Graph& g);

// `vkd compile --report`: every pass's lines, then each tensor's final placement.
std::string format_report(const CompileResult& result);

}  // namespace vkd::compiler
