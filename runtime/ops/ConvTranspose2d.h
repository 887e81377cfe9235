// Quantized transposed 2-D convolution: q8ta_conv_transpose2d (int8x4 activations x int8
// per-output-channel weights, int32 accumulation, requantized int8 output with a fused
// relu / clamp), built on q8ta_conv2d.
//
// Arithmetic (PyTorch's conv_transpose2d on the dequantized values, in integers; the same
// requantization as q8ta_conv2d, runtime/ops/Conv2d.h):
//   acc[n][co][oy][ox] = sum over the group's input channels ci and the taps (ky, kx) and input
//                        pixels (iy, ix) with oy = iy * stride_h - pad_h + ky * dilation_h (ox
//                        likewise) of (qx[n][ci][iy][ix] - zp_x) * qw[co][ci - g * Cin_g][ky][kx]
//   y = float32(float32(acc) * float32(s_x * s_w[co])) + bias[co];
//   q = clamp(roundEven(float32(y * inv_y)) + zp_y, act_min, act_max)
//   H_out = (H - 1) * stride_h - 2 * pad_h + dilation_h * (KH - 1) + output_padding_h + 1.
// Weights are in q8ta_conv2d's order [C_out, C_in / groups, KH, KW] (PyTorch's transposed
// weight [C_in, C_out / groups, KH, KW] with the two channel dims swapped per group).
//
// How (sub-pixel decomposition): output row oy is phase r = (oy + pad_h) % stride_h of coarse
// row a = (oy + pad_h) / stride_h, and reads input rows a - t for the taps ky with
// ky * dilation_h % stride_h == r, t = ky * dilation_h / stride_h < T_h = dilation_h * (KH - 1)
// / stride_h + 1. So one ordinary stride-1 convolution of the input with a T_h x T_w kernel
// (the taps flipped, padding T - 1 before) computes every phase at once as its own output
// channels: Z[n][(g * P + phase) * Cout_g4 + j][a][b], P = stride_h * stride_w phases, phase =
// r_y * stride_w + r_x, j < Cout_g real channels of group g (Cout_g4 = Cout_g rounded up to 4;
// the rest zero weights). q8ta_conv2d runs it (any of its routes; the zero taps of a phase
// add nothing, so acc is exact and requantized by the same epilogue), then q8ta_phase_shuffle
// (shaders/q8ta_phase_shuffle.glsl) moves each output word from Z: a whole word when the
// group's channels are whole words (groups 1, or Cout_g % 4 == 0), else byte by byte. Z's
// multiply-adds equal the transposed convolution's when stride divides KH * dilation (kernel 2
// or 4 at stride 2); kernel 3 at stride 2 does 16 / 9 of them.
#pragma once

#include <cstdint>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Conv2d.h"
#include "runtime/ops/Linear.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

struct ConvTranspose2dGeometry {
  int32_t stride_h = 1, stride_w = 1;
  int32_t pad_h = 0, pad_w = 0;
  int32_t output_pad_h = 0, output_pad_w = 0;  // each < max(stride, dilation), as PyTorch
  int32_t dilation_h = 1, dilation_w = 1;
  int32_t groups = 1;
};

struct ConvTranspose2dParams {
  QuantParams input;              // scale and zero point of the int8 input
  QuantParams output;             // the requantized int8 output
  int32_t activation_min = -128;  // fused relu / relu6 / clamp
  int32_t activation_max = 127;
  ConvTranspose2dGeometry geometry;
  // The route of the phase convolution (Conv2dRoute; Auto: q8ta_conv2d's own choice) and of
  // its GEMM where it has one (Pointwise, Im2col); for tests and tuning.
  Conv2dRoute route = Conv2dRoute::Auto;
  LinearRoute gemm = LinearRoute::Auto;
};

// `input`: int8x4 buffer in 4W4C or 4C1W, [N, C_in, H, W] (rank 3: N = 1). `output`: int8x4
// buffer in 4W4C or 4C1W, [N, C_out, H_out, W_out]; padding lanes hold its zero point. Returns
// the route the phase convolution took.
Conv2dRoute add_q8ta_conv_transpose2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                           const Conv2dWeights& weights, graph::ValueRef output,
                                           const ConvTranspose2dParams& p);

}  // namespace vkd::ops
