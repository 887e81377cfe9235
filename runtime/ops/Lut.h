// q8ta_lut: an element-wise function of one int8x4 tensor between fixed quantizations, computed
// ahead of time into a 256-entry table (the smooth activations: hardswish, sigmoid, gelu, ...).
#pragma once

#include <array>
#include <cstdint>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

struct LutParams {
  QuantParams input;   // what the table was computed for (the input pads with its zero point)
  QuantParams output;  // output padding holds its zero point
  std::array<int8_t, 256> table{};  // table[v + 128]: the output of int8 input v
};

// out[i] = table[in[i] + 128] per element (shaders/q8ta_lut.glsl): no arithmetic, the table is
// the function. input and output: int8x4 of the same sizes in one packed layout (any). Output
// padding holds zp_out. The table becomes a constant of the graph named after `output`.
void add_q8ta_lut_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                       const LutParams& params);

}  // namespace vkd::ops
