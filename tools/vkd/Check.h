// `vkd run MODEL.vkd --check GRAPH.json [--weights W]`: runs the CPU reference interpreter on the
// original graph beside the device and compares, tensor by tensor in op order, every tensor the
// model writes that the graph also names (the compiler keeps the names of the values it does not
// fuse away), then the model's outputs. How a user bisects a wrong answer on a new GPU.
#pragma once

#include <string>
#include <vector>

#include "vkdelegate/Delegate.hpp"

namespace vkd::cli {

struct CheckInput {
  std::string name;  // the model's input name (the graph input of the same name)
  ConstTensorView view;
};

struct CheckOutput {
  std::string name;             // the model's output name
  HostDType dtype;
  const std::vector<uint8_t>* data;  // what the normal run produced
};

// Loads the model a second time with DelegateOptions::expose_intermediates (so intermediates
// keep their own memory), runs it on `inputs`, prints the comparison table and the first tensor
// that differs. `outputs` are the normal run's results, compared as well (a difference only
// there points at memory sharing). Returns 0 when everything matches, 1 otherwise; a graph that
// does not fit the model (inputs missing, unparseable) is CliError(2).
int check_against_graph(const std::vector<uint8_t>& blob, const std::string& model_path,
                        DelegateOptions options, const std::vector<CheckInput>& inputs,
                        const std::vector<CheckOutput>& outputs, const std::string& graph_path,
                        const std::string& weights_path);

}  // namespace vkd::cli
