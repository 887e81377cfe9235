// `vkd run MODEL.vkd --check GRAPH.json [--weights W]`: compares, tensor by tensor in op order,
// every tensor the model writes that the original graph also names (the compiler keeps the
// names of the values it does not fuse away), then the model's outputs, with the CPU reference
// interpreter. Each tensor's reference is computed from the DEVICE's own inputs to the op (or
// the fused ops) that made it (CheckCompare.h), so a difference is blamed on the op where it
// arises instead of on every op after it; int8 results 1 off at a rounding tie are counted
// apart. How a user bisects a wrong answer on a new GPU.
#pragma once

#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "vkdelegate/Delegate.hpp"

namespace vkd::cli {

struct CheckInput {
  std::string name;  // the model's input name (the graph input of the same name)
  ConstTensorView view;
};

struct CheckOutput {
  std::string name;  // the model's output name
  HostDType dtype;
  const std::vector<uint8_t>* data;  // what the normal run produced
};

// The --check graph (and its weights), read and parsed before anything runs or is written:
// a file that cannot be read or an invalid graph is CliError(2) "--check: ...".
struct CheckGraph {
  std::string path;
  std::string weights_path;  // "" for none
  compiler::Graph graph;     // as parsed (what compiler::graph_ir_hash() hashes)
};
CheckGraph read_check_graph(const std::string& graph_path, const std::string& weights_path);

// Refuses, before anything runs, a --check graph the model was not compiled from: CliError(2),
// one line. With the graph IR hash the blob records (every blob `vkd compile` writes since blob
// header version 2): "--check: M.vkd was compiled from a different graph: ...". For a blob
// that records none (older, or written by a test's GraphBuilder): when a model input or output
// is not a value of the graph with the same shape, as only then can it be compared.
void check_graph_is_the_models(const CheckGraph& graph, const std::vector<uint8_t>& blob,
                               const std::string& model_path, const Delegate& model);

// One error for each model input that is not an input of the graph (checked before the run).
void check_graph_inputs(const CheckGraph& graph, const std::vector<std::string>& model_inputs,
                        std::vector<std::string>& errors);

// Loads the model a second time with DelegateOptions::expose_intermediates (so intermediates
// keep their own memory) and runs it on `inputs`; recomputes each exposed tensor on the CPU
// from the exposed tensors it depends on; prints the comparison table, the end-to-end drift of
// the outputs against the interpreter run from the graph inputs alone (for information) and
// the first tensor that really differs. `outputs` are the normal run's results, compared as
// well (a difference only there points at memory sharing). Returns 0 when at least one model
// output was compared and nothing really differs, 1 otherwise.
int check_against_graph(const std::vector<uint8_t>& blob, const std::string& model_path,
                        DelegateOptions options, const std::vector<CheckInput>& inputs,
                        const std::vector<CheckOutput>& outputs, const CheckGraph& graph);

}  // namespace vkd::cli
