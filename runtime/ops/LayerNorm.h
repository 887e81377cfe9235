// q8ta_layer_norm / q8ta_layer_norm_dq / layer_norm / layer_norm_q / layer_norm_dual: layer
// normalization over the last dim of an int8x4 tensor (requantized or float32 out) or of a
// float32 one (float32 out, quantized out, or both).
#pragma once

#include <optional>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

struct LayerNormParams {
  std::optional<QuantParams> input;  // int8x4 input; none: float32 input
  std::vector<float> weight, bias;   // one per element of the last dim each
  double eps = 1e-5;
  std::optional<QuantParams> output;  // int8 output; none: float32 only
};

// Per row of the last dim (W of [N, C, H, W], length L), shaders/q8ta_layer_norm.glsl:
//   int8 input q: S1 = sum q, S2 = sum q^2, D = L S2 - S1^2 (exact integers),
//     y = float32(L q - S1) * inversesqrt(float32(D) + float32(eps L^2 / s_in^2)) * weight + bias
//     (= (x - mean) / sqrt(var + eps) * weight + bias of x = s_in (q - zp): the zero point drops
//     out, the statistics are exact);
//   float32 input x: mean and var = mean((x - mean)^2) in float32 (the kernel's summation order),
//     y = (x - mean) * inversesqrt(var + eps) * weight + bias;
//   int8 output: q = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127); of a float32 input
//     exactly q8ta_quantize's bytes for the y the float32 output gets.
// Each float32 operation is rounded on its own; inversesqrt is the device's, so results agree
// with an exact layer norm within a few float32 ulps. `input`: int8x4 in any packed layout, or a
// float32 buffer of any float layout; `output`: int8x4 when params.output is set (the input's
// layout for an int8 input, any packed layout for a float32 one: layer_norm_q; padding =
// zp_out), else a float32 buffer of any float layout, of the input's sizes. L at most 65536.
void add_q8ta_layer_norm_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const LayerNormParams& params);

// layer_norm_dual: a float32 input normalized once, written both as float32 (`output`, any float
// buffer) and quantized with params.output (`output_q`, int8x4 in any packed layout), what
// layer_norm followed by q8ta_quantize of its output write, in one dispatch. params.input none.
void add_layer_norm_dual_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, graph::ValueRef output_q,
                              const LayerNormParams& params);

}  // namespace vkd::ops
