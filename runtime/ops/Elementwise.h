// Element-wise int8 ops: q8ta_add and q8ta_mul (int8x4 op int8x4 -> int8x4, each with its own
// per-tensor quantization, fused relu/clamp), q8ta_clamp (a requantizing relu / clamp of one
// int8x4 tensor), q8ta_mul_scalar (a requantizing multiplication by a constant) and
// q8ta_batch_norm (a requantizing per-channel affine map: an inference batch norm).
#pragma once

#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// The operands' and the output's quantization of q8ta_add / q8ta_mul.
struct BinaryParams {
  QuantParams a;
  QuantParams b;
  QuantParams output;
  int32_t activation_min = -128;  // fused relu / clamp, in output int8 units
  int32_t activation_max = 127;
};
using AddParams = BinaryParams;
using MulParams = BinaryParams;

// Per element, each float32 operation rounded on its own (shaders/q8ta_binary.glsl):
//   fa = float32(qa - zp_a) * s_a;  fb = float32(qb - zp_b) * s_b
//   y = fa + fb (q8ta_add) | fa * fb (q8ta_mul)
//   q = clamp(roundEven(y * inv_s_out) + zp_out, activation_min, activation_max)
// inv_s_out = float32(1/s_out). a, b and output: int8x4 in one packed layout (any); output has
// the sizes of the larger operand [N, C, H, W]; the other has the same sizes or is broadcast:
// [N or 1, C, 1, 1] or [1, 1, 1, 1]. Output padding holds zp_out.
void add_q8ta_add_node(graph::ComputeGraph& graph, graph::ValueRef a, graph::ValueRef b,
                       graph::ValueRef output, const AddParams& params);
void add_q8ta_mul_node(graph::ComputeGraph& graph, graph::ValueRef a, graph::ValueRef b,
                       graph::ValueRef output, const MulParams& params);

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
void add_q8ta_clamp_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                         const ClampParams& params);

struct MulScalarParams {
  QuantParams input;
  QuantParams output;
  float scalar = 1.0f;            // m, any finite float32 (negative and 0 included)
  int32_t activation_min = -128;  // a relu / clamp after the product, in output int8 units
  int32_t activation_max = 127;
};

// A multiplication by a scalar constant between int8 ops (aten.mul by a number or a one-element
// constant), per element, each float32 operation rounded on its own (the q8ta_clamp kernel):
//   y = float32(float32(q - zp_in) * s_in) * m
//   q_out = clamp(roundEven(y * inv_s_out) + zp_out, activation_min, activation_max)
// (mathematically q_out = zp_out + round((q - zp_in) * s_in * m / s_out), computed as that
// float32 chain: the interpreter's dq -> mul -> q). Tensors as for q8ta_clamp.
void add_q8ta_mul_scalar_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const MulScalarParams& params);

struct BatchNormParams {
  QuantParams input;
  QuantParams output;
  std::vector<float> scale, shift;  // one per channel (dim 1 of the 4-D tensor), finite
  int32_t activation_min = -128;    // a relu / clamp after the affine map, in output int8 units
  int32_t activation_max = 127;
};

// An inference batch norm between int8 ops (the compiler folded its weight, bias, running mean
// and variance into scale and shift), per element of channel c, in the q8ta_clamp kernel:
//   x = float32(q - zp_in) * s_in
//   y = fma(x, scale[c], shift[c])   rounded once: PyTorch's CPU batch norm contracts the two
//                                    (shaders/common/exact_fma.glslh computes it exactly)
//   q_out = clamp(roundEven(y * inv_s_out) + zp_out, activation_min, activation_max)
// inv_s_out = float32(1/s_out). Tensors as for q8ta_clamp; exact where x * scale[c] and
// shift[c] are 0 or within 2^-64 .. 2^64 in magnitude (no subnormal intermediate; the compiler
// fuses only such batch norms).
void add_q8ta_batch_norm_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const BatchNormParams& params);

}  // namespace vkd::ops
