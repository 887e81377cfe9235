// float_sum / float_vector_norm: a float32 reduction over one dim (sentence-embedding pooling).
#pragma once

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// output = the sum (norm: sqrt of the sum of squares) over dim `dim` of `input`
// (shaders/float_reduce.glsl): per output element, from +0.0, in order along the dim, each
// float32 product and sum rounded on its own, the square root correctly rounded: the CPU
// reference's bits. `input` a float32 buffer of rank 1 to 4 (any float layout); `output` one of
// its sizes with dim `dim` 1 (keepdim) or dropped, at most 2^31 - 1 elements each.
void add_float_reduce_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           graph::ValueRef output, int64_t dim, bool norm);

}  // namespace vkd::ops
