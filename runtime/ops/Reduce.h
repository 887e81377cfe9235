// float_sum / float_vector_norm: a float32 reduction over one dim (sentence-embedding pooling);
// float_masked_mean / q8ta_masked_mean [_normalize]: that whole pooling in one dispatch.
#pragma once

#include <optional>

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

// What the masked mean divides and normalizes by, and an int8 input's quantization.
struct MaskedMeanParams {
  float mask_min = 0.0f;             // the token count's lower bound
  std::optional<float> eps;          // set: L2-normalise each row, its norm clamped to >= eps
  std::optional<QuantParams> input;  // set: `input` is int8, dequantized with these
};

// output[b, c] = (sum_t x[b, t, c] * mask[b, t]) / max(sum_t mask[b, t], mask_min), then with
// `eps` divided by max(||output[b, :]||_2, eps) (shaders/float_masked_mean.glsl): the CPU
// reference interpreter's bits for the unfused ops. `input` [B, T, C] a float32 buffer or int8
// (any packed layout, `params.input` set), C at most 4096; `mask` float32 [B, T] or [B, T, 1];
// `output` float32 [B, C]; float tensors in buffers.
void add_masked_mean_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef mask,
                          graph::ValueRef output, const MaskedMeanParams& params);

}  // namespace vkd::ops
