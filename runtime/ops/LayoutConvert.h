// Layout conversions: q8ta_convert (int8x4 layout -> int8x4 layout, every pair including the
// identity), q8ta_view (an int8x4 reshape, any layout pair) and float_convert (float32
// storage/layout -> float32 storage/layout).
#pragma once

#include "runtime/graph/ComputeGraph.h"

namespace vkd::ops {

// Same sizes and quantization; `zero_point` fills the output's padding.
void add_q8ta_convert_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           graph::ValueRef output, int32_t zero_point);

// A reshape: `output` holds `input`'s elements in the same NCHW order under its own sizes (the
// same element count), in any int8x4 layout on either side; `zero_point` fills the output's
// padding. One invocation per output tile (shaders/q8ta_view.glsl).
void add_q8ta_view_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                        int32_t zero_point);

void add_float_convert_node(graph::ComputeGraph& graph, graph::ValueRef input,
                            graph::ValueRef output);

}  // namespace vkd::ops
