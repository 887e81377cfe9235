// A graph IR with a dynamic sequence length (issue 35): written at its maximum length, with a
// "dynamic" section listing the value dimensions and node args that follow the length L as
// a * L + b (compiler/README.md, "Dynamic length"). compile_graph() compiles it at the maximum,
// compiles it again at other lengths and compares the blobs: each size or int of the blob that
// differs must follow a * L + b and everything else (ops, layouts, constants, floats) must be
// equal at every length checked, so the runtime, building the blob's graph at a length with those
// sizes, builds what a blob compiled for that length holds. The blob records the entries
// (serialization/DynamicLength.h).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "compiler/Compiler.h"
#include "compiler/GraphIR.h"

namespace vkd::compiler {

// The IR's "dynamic" section read into g.dynamic and checked against `g` (parsed at the maximum):
// every value and node named exists, each dim or arg item holds a * max + b, 1 <= min < max.
// InvalidArgument naming the field otherwise.
void read_dynamic_section(const nlohmann::ordered_json& section, Graph& g);

// `g` (with g.dynamic) at `length`: every listed value dimension and node arg set to a * length
// + b; g.dynamic cleared.
Graph graph_at_length(const Graph& g, int64_t length);

// The lengths compile_dynamic checks besides the maximum: every length when there are at most 64,
// else the 16 shortest, the 16 longest and 32 spread evenly between.
std::vector<int64_t> checked_lengths(int64_t min, int64_t max);

// Compiles `g` (with g.dynamic) through `compile_static` at the maximum and at checked_lengths();
// the result is the maximum's with the blob's dynamic length table. Unsupported naming the
// length, the value and what differs when the blob does not follow the length.
CompileResult compile_dynamic(const Graph& g,
                              const std::function<CompileResult(Graph)>& compile_static);

}  // namespace vkd::compiler
