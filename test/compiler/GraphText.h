// Pieces of graph IR JSON for the compiler tests that write their graphs as text, and the op
// list of a compiled graph to check them against.
#pragma once

#include <string>
#include <vector>

#include "compiler/GraphIR.h"

namespace vkd::compiler::graph_text {

// The ops of `g`'s nodes, in order.
inline std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n.op);
  return ops;
}

// The args of a per-tensor int8 quantize / dequantize.
inline std::string q_args(double scale, int zp) {
  return "{\"scale\": " + std::to_string(scale) + ", \"zero_point\": " + std::to_string(zp) +
         ", \"quant_min\": -128, \"quant_max\": 127, \"dtype\": \"int8\"}";
}

// A node with one input and one output.
inline std::string node(const std::string& op, const std::string& in, const std::string& args,
                        const std::string& out) {
  return "{\"op\": \"" + op + "\", \"inputs\": [\"" + in + "\"], \"args\": " + args +
         ", \"outputs\": [\"" + out + "\"]}";
}

}  // namespace vkd::compiler::graph_text
