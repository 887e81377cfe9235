// Data movement of packed int8x4 tensors: q8ta_channel_shuffle (ShuffleNet's channel shuffle)
// and q8ta_permute (any order of the 4 dims). Sizes are the tensors' 4-D sizes (rank <= 4,
// padded with leading 1s).
//
// Arithmetic per element: input and output with the same scale and zero point move the byte
// itself (no arithmetic); otherwise, in float32 with every operation rounded on its own (no
// fused multiply-add):
//   y = float(q_in - zp_in) * s_in
//   q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127),  inv_s_out = float32(1 / s_out)
// i.e. q8ta_dequantize followed by q8ta_quantize, bit for bit. Output padding holds zp_out.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// `input`, `output`: int8x4 of the same sizes [N, C, H, W] in one packed layout (any);
// output channel c = input channel (c % groups) * (C / groups) + c / groups (groups >= 1
// divides C). One invocation per 16-byte output chunk (shaders/q8ta_channel_shuffle.glsl).
// `out_q` uses the full int8 range.
void add_q8ta_channel_shuffle_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                   const QuantParams& in_q, int64_t groups, graph::ValueRef output,
                                   const QuantParams& out_q);

// `output` dim k is `input` dim dims[k] (dims: a permutation of 0..3): out[i0, i1, i2, i3] =
// in[j] with j[dims[k]] = ik. Any packed int8x4 layout on either side. One invocation per
// output tile (shaders/q8ta_permute.glsl). `out_q` uses the full int8 range.
void add_q8ta_permute_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           const QuantParams& in_q, const std::vector<int64_t>& dims,
                           graph::ValueRef output, const QuantParams& out_q);

}  // namespace vkd::ops
