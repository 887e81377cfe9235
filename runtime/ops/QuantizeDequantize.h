// q8ta_quantize (float32 -> int8x4) and q8ta_dequantize (int8x4 -> float32), per-tensor.
#pragma once

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// q = clamp(roundEven(x * inv_scale) + zero_point, quant_min, quant_max), inv_scale =
// float32(1/scale). `input`: float32, any storage/layout; `output`: int8x4, any packed layout,
// same sizes. Padding of the output holds the zero point.
void add_q8ta_quantize_node(graph::ComputeGraph& graph, graph::ValueRef input,
                            graph::ValueRef output, const QuantParams& q);

// x = float(q - zero_point) * scale. `input`: int8x4 any packed layout; `output`: float32.
void add_q8ta_dequantize_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const QuantParams& q);

}  // namespace vkd::ops
