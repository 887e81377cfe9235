// A CPU reference interpreter for the ORIGINAL edge-dialect graph (before fusion): the
// independent oracle of the end-to-end tests and of `vkd run --check`. It shares no code with
// the passes, the shaders or the runtime. Single-threaded, deterministic, float32 arithmetic
// (the reference ops are built with -ffp-contract=off, so no fused multiply-add is ever formed).
//
// Each edge op has one CPU reference function, grouped by op family under compiler/reference/;
// the semantics of every op (rounding, accumulation order, where it can differ from PyTorch)
// and what is not supported are documented above its definition in
// compiler/reference/<Family>.cpp; the op's descriptor (compiler/ops/) points at it. An op the
// interpreter does not know gives vkd::Error Unsupported naming the node.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/reference/HostTensor.h"

namespace vkd::compiler {

// Runs the graph on the CPU. `inputs` must hold exactly the graph's inputs, each with the
// declared dtype and shape (otherwise vkd::Error InvalidArgument naming the input). Returns
// every value: the inputs, the constants (from Value::data) and every node output, so a caller
// can compare node by node. Each computed output is checked against the value's declared dtype
// and shape (InvalidArgument naming the node on a mismatch).
std::map<std::string, HostTensor> interpret(const Graph& g,
                                            const std::map<std::string, HostTensor>& inputs);

// Why the host cannot run `node`, or nullopt when it can. The host (vkd::Model, `vkd run
// MODEL.partition.json`) runs every step the backend does not with this interpreter, so this is
// the one check both `vkd compile --partition` (which then writes nothing) and the model loader
// make: the op needs a CPU reference (an edge op of compiler/ops/, "aten.x" or
// "aten.x.default"), and its descriptor's refused_on_host_when must accept the node's arguments.
// The node's shapes are checked apart, by its shape rule. The reason reads after "the host
// cannot run it: ".
std::optional<std::string> host_refusal(const Node& node);

}  // namespace vkd::compiler
