// float_add / float_mul / float_div / float_affine_scalar / float_clamp / float_gelu: float32
// element-wise ops over float buffers of any layout, the binary ones broadcasting their operands.
#pragma once

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

enum class FloatBinaryOp { Add, Mul, Div };

// output = a + alpha * b | a * b | a / b (shaders/float_elementwise.glsl), each float32 operation
// rounded on its own, the division correctly rounded: the CPU reference's bits. a and b broadcast
// to the output's sizes (numpy rules, right-aligned: each dim equal or 1); all three float32
// buffers of rank 1 to 4 (any float layout), at most 2^31 - 1 elements each.
void add_float_binary_node(graph::ComputeGraph& graph, FloatBinaryOp op, graph::ValueRef a,
                           graph::ValueRef b, graph::ValueRef output, float alpha = 1.0f);

// output = input * multiplier + addend (two roundings): aten.mul.Scalar with addend -0.0 (which
// leaves every product as it is), aten.rsub.Scalar(x, other, alpha) with multiplier -alpha and
// addend other; a broadcast copy (aten.expand_as) with multiplier 1 and addend -0.0. The input
// broadcasts to the output's sizes as a binary op's operands do.
void add_float_affine_scalar_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                  graph::ValueRef output, float multiplier, float addend);

// output = clamp(input, lo, hi) as the reference computes it: x < lo ? lo : x, then > hi ? hi
// (lo > hi gives hi), NaN passes; an absent bound is -inf / +inf. Same sizes in and out, or the
// input broadcast.
void add_float_clamp_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                          float lo, float hi);

enum class GeluApproximate { Erf, Tanh };

// output = gelu(input), PyTorch's erf form (approximate 'none') or tanh form, through
// shaders/common/gelu.glslh: not the reference's bits (it evaluates in double, rounded once) but
// within 1e-6 |x| of them (shaders/float_elementwise.glsl derives the bound). Same sizes in and
// out, or the input broadcast.
void add_float_gelu_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                         GeluApproximate approximate);

}  // namespace vkd::ops
