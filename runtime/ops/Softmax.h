// q8ta_softmax / q8ta_softmax_dq: softmax or log_softmax over the last dim of a dequantized
// int8x4 tensor, requantized or float32.
#pragma once

#include <optional>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

struct SoftmaxParams {
  QuantParams input;
  bool log = false;                   // log_softmax
  std::optional<QuantParams> output;  // int8 output (q8ta_softmax); none: float32 (_dq)
};

// Per row of the last dim (W of [N, C, H, W]), with d = q - max(q) of the row (shaders/
// q8ta_softmax.glsl):
//   e = exp(float32(d) * s_in);  sum = float32 sum of the row's e
//   softmax: y = e * (1 / sum);  log_softmax: y = float32(d) * s_in - log(sum)
//   int8 output: q = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)
// exp, log and the summation order are the device's, so results agree with an exact softmax
// within a few float32 ulps (not bit for bit). `input`: int8x4, any packed layout; `output`:
// int8x4 in the input's layout (padding = zp_out) or a float32 buffer of any float layout, of the
// input's sizes.
void add_q8ta_softmax_node(graph::ComputeGraph& graph, graph::ValueRef input,
                           graph::ValueRef output, const SoftmaxParams& params);

}  // namespace vkd::ops
