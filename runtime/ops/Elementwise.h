// Element-wise int8 ops: q8ta_add (int8x4 + int8x4 -> int8x4, each with its own per-tensor
// quantization, fused relu/clamp) and q8ta_clamp (a requantizing relu / clamp of one int8x4
// tensor).
#pragma once

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

struct AddParams {
  QuantParams a;
  QuantParams b;
  QuantParams output;
  int32_t activation_min = -128;  // fused relu / clamp, in output int8 units
  int32_t activation_max = 127;
};

// Per element, each float32 operation rounded on its own (shaders/q8ta_add.glsl):
//   y = float32(qa - zp_a) * s_a + float32(qb - zp_b) * s_b
//   q = clamp(roundEven(y * inv_s_out) + zp_out, activation_min, activation_max)
// inv_s_out = float32(1/s_out). a, b and output: int8x4 in one packed layout (any); output has
// the sizes of the larger operand [N, C, H, W]; the other has the same sizes or is broadcast:
// [N or 1, C, 1, 1] or [1, 1, 1, 1]. Output padding holds zp_out.
void add_q8ta_add_node(graph::ComputeGraph& graph, graph::ValueRef a, graph::ValueRef b,
                       graph::ValueRef output, const AddParams& params);

struct ClampParams {
  QuantParams input;
  QuantParams output;
  int32_t activation_min = -128;  // the relu / clamp range, in output int8 units
  int32_t activation_max = 127;
};

// A standalone relu / hardtanh / clamp between int8 ops, per element, each float32 operation
// rounded on its own (shaders/q8ta_clamp.glsl):
//   y = float32(q - zp_in) * s_in
//   q_out = clamp(roundEven(y * inv_s_out) + zp_out, activation_min, activation_max)
// inv_s_out = float32(1/s_out). input and output: int8x4 of the same sizes in one packed layout
// (any). Output padding holds zp_out.
void add_q8ta_clamp_node(graph::ComputeGraph& graph, graph::ValueRef input,
                         graph::ValueRef output, const ClampParams& params);

}  // namespace vkd::ops
