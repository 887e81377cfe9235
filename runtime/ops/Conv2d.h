// Quantized 2-D convolution: q8ta_conv2d (int8x4 activations x int8 per-output-channel weights,
// int32 accumulation with the packed int8 dot product, requantized int8 or float32 output).
//
// Arithmetic, defined so that a CPU reference reproduces it bit for bit (the same epilogue as
// q8ta_linear, runtime/ops/Linear.h):
//   acc[n][co][oy][ox] = sum over the group's input channels ci and taps (ky, kx) of
//                        (qx[n][ci][iy][ix] - zp_x) * qw[co][ci - g * Cin_g][ky][kx]      (int32)
//   with iy = oy * stride_h - pad_top + ky * dilation_h (ix likewise); a tap outside the input
//   reads zp_x, i.e. a real zero (padding contributes nothing). Computed as
//   sum qx' * qw - zp_x * wsum[co], qx' = zp_x outside, wsum = the sum of all the channel's
//   weights. scale[co] = float32(s_x * s_w[co]); y = float32(float32(acc) * scale[co]) + bias[co];
//   float output: y. int8 output: clamp(roundEven(float32(y * inv_y)) + zp_y, act_min, act_max).
// q8ta_conv2d_ps: that int8 output pixel-shuffled by r (aten.pixel_shuffle: output (n, c, h r + i,
// w r + j) = conv channel c r^2 + i r + j at (h, w)), written by the convolution's own store:
// no other arithmetic, so the bytes equal q8ta_conv2d followed by the byte-moving
// q8ta_pixel_shuffle.
// q8ta_conv2d_add: that int8 output (pixel-shuffled or not) plus a residual tensor, q8ta_add's
// arithmetic in the same store (ResidualAdd, runtime/ops/Linear.h): the bytes of q8ta_conv2d
// [-> q8ta_pixel_shuffle] -> q8ta_add.
// q8ta_conv2d_q_dq: that int8 output q (not pixel-shuffled, not added to) dequantized in the same
// store, float32(q - zp_y) * s_y as q8ta_dequantize computes it, into a float32 NCHW output: the
// floats of q8ta_conv2d -> q8ta_dequantize (unlike q8ta_conv2d_dq's y, which skips the int8).
// q8ta_conv2d_fq: q8ta_quantize then q8ta_conv2d in one kernel: the input is float32 NCHW, each
// element quantized on load with the input's scale, zero point and range exactly as
// q8ta_quantize computes it (clamp(roundEven(x * float32(1 / s_x)) + zp_x, quant_min,
// quant_max)); padding reads the zero point as for an int8 input. The bytes of q8ta_quantize ->
// q8ta_conv2d; the direct kernel only, int8 output only (not pixel-shuffled, added to or
// dequantized).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Linear.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// Host weights: int8 [C_out, C_in / groups, KH, KW] (PyTorch's order), per-output-channel
// symmetric scales [C_out], optional bias [C_out] (nullptr = zeros). The pointers must stay
// valid until the graph's prepare() returns (the weights are packed on the CPU then).
struct Conv2dWeights {
  const int8_t* weight = nullptr;
  const float* scales = nullptr;
  const float* bias = nullptr;
  int64_t out_channels = 0, in_per_group = 0, kh = 0, kw = 0;
  // Keeps alive what the pointers point into when the caller made those arrays (the graph
  // loader's aligned copies of the blob's scales and bias); copied into the packers.
  std::shared_ptr<const void> owner;
};

// Stride, padding (each side on its own: asymmetric padding is a pad op folded in), dilation,
// groups. The output's sizes must be the ones these give:
// H_out = (H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) / stride_h + 1 (W likewise).
struct Conv2dGeometry {
  int32_t stride_h = 1, stride_w = 1;
  int32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int32_t dilation_h = 1, dilation_w = 1;
  int32_t groups = 1;
};

// Which kernel runs a q8ta_conv2d (chosen when the graph is built; `vkd inspect` shows it).
// Direct: one kernel for any shape, groups and layouts (shaders/q8ta_conv2d.glsl).
// Pointwise: 1x1 / stride 1 / no padding / groups 1 with int8 4W4C in and out: the linear
// kernels over pixels (GEMV, dot-product GEMM or cooperative matrices).
// Depthwise: groups == C_in == C_out, output not pixel-shuffled, added to nor dequantized
// (shaders/q8ta_conv2d_dw.glsl).
// Im2col: groups 1 with an int8 4W4C output, any input layout, kernel, stride, padding and
// dilation: the same linear kernels multiply the int8x4 matrix [output pixels,
// KH * KW * C4_in * 4] of the input windows (shaders/common/im2col_gather.glslh), in one of two
// forms (Im2colForm): implicit, each GEMM stage gathering its blocks from the input (one
// dispatch), or explicit, q8ta_im2col writing the whole matrix into an intermediate tensor
// first (two dispatches); the route (either form) only while that matrix would stay under a
// size cap (ConvPlan.h: ConvTuning::im2col_max_bytes).
// Auto: Pointwise where it fits, then Depthwise, then Im2col where it fits and an output sums
// at least 64 products (C_in / groups * KH * KW; measured, ConvPlan.h:
// ConvTuning::im2col_min_products), else Direct; a float input quantized on load (q8ta_conv2d_fq):
// Direct. Asking for a route the shape or layouts do not fit is an InvalidArgument error that says
// why.
enum class Conv2dRoute { Auto, Direct, Pointwise, Depthwise, Im2col };
std::string to_string(Conv2dRoute route);

// The Im2col route's form. Implicit: the cooperative-matrix / GEMM / split-K kernel's
// "_im2col" variant gathers the matrix inside its loads; Explicit: q8ta_im2col writes the
// matrix, then the linear kernel reads it. Auto: Implicit where the linear kernel the route
// takes has that variant (not GEMV, not the CPU GEMM of CPU devices) and it measured no slower
// (ConvPlan.cpp: prefer_implicit_im2col), else Explicit. Window: no im2col matrix at all, the
// convolution on cooperative matrices with each kernel row's input pixels staged in shared
// memory once (q8ta_conv2d_coopmat.glsl; a 4W4C input, the cooperative-matrix route, stride
// and dilation along the width at most 2: Linear.h's conv_window_unfit), which Auto takes
// first where it fits and measured faster (ConvPlan.cpp: prefer_window). Asking for a form the
// linear kernel or the convolution does not have is an InvalidArgument error; the bytes are
// the same either way.
enum class Im2colForm { Auto, Implicit, Explicit, Window };
std::string to_string(Im2colForm form);

struct Conv2dParams {
  QuantParams input;  // scale and zero point of the int8 input (its range: quantize_input's)
  // The input is float32 NCHW (a width-packed buffer), quantized on load with `input`, its
  // quant_min / quant_max included (q8ta_conv2d_fq); the Direct route only.
  bool quantize_input = false;
  std::optional<QuantParams> output;  // requantized int8 output; nullopt = float32 output
  // With `output`: that int8 value is then dequantized in the store, q8ta_dequantize's
  // float(q - zero_point) * scale, into a float32 NCHW output (q8ta_conv2d_q_dq); never the
  // Pointwise or Im2col route (the linear kernels write no such output).
  bool dequantize_output = false;
  int32_t activation_min = -128;  // int8 output only: fused relu / relu6 / clamp
  int32_t activation_max = 127;
  // int8 output only: written pixel-shuffled by this factor (q8ta_conv2d_ps), 1 = not. Needs
  // groups 1 and C_out / upscale^2 a multiple of 4; never the depthwise route.
  int32_t upscale = 1;
  // int8 output only: added to a residual tensor in the store (q8ta_conv2d_add); never the
  // depthwise route.
  std::optional<ResidualAdd> residual;
  Conv2dGeometry geometry;
  Conv2dRoute route = Conv2dRoute::Auto;
  // The GEMM kernel of the Pointwise and Im2col routes (Auto: the linear kernels' choice); for
  // tests and tuning.
  LinearRoute gemm = LinearRoute::Auto;
  int32_t gemm_slices = 0;  // with gemm SplitK: its K slices (0 = chosen)
  int32_t coopmat_tile_n =
      0;  // with the CoopMat kernel: its tile's channels, 32 or 128 (0 = chosen)
  Im2colForm im2col_form = Im2colForm::Auto;  // the Im2col route's form; for tests and tuning
  // Depthwise route: output rows each invocation computes, 1..4, and output tiles of 4 widths
  // along each row, 1 or 2, at most 4 rows x tiles (both 0 = chosen by the output's size; one
  // 0 = 1); for tests and tuning.
  int32_t depthwise_rows = 0;
  int32_t depthwise_tiles_w = 0;
  // Depthwise route: the products as one int8 dot product per tap and channel (LaneMasks) or
  // per kernel row and channel (RowDots: a 4W4C input whose kernel row spans at most 4 widths,
  // (KW - 1) * dilation_w + 1 <= 4); Auto = the device's choice (ConvPlan.cpp:
  // depthwise_row_dots); for tests and tuning.
  enum class DepthwiseProducts { Auto, LaneMasks, RowDots };
  DepthwiseProducts depthwise_products = DepthwiseProducts::Auto;
};

// The Conv2dParams of a convolution reading int8 `in` and writing int8 `out` with the activation
// range [act_min, act_max], route Auto: how the fused convolution ops' Split forms run each of
// their convolutions (DepthwisePointwise.cpp, ShuffledHead.cpp).
Conv2dParams requantizing_conv_params(const QuantParams& in, const QuantParams& out,
                                      int32_t act_min, int32_t act_max);

// The weights of a convolution of `c_in` input channels in `groups` groups (q8ta_conv2d's and
// q8ta_conv_transpose2d's): given, of a positive shape, C_in / groups input channels each, and
// groups dividing C_in and C_out; else InvalidArgument naming `op`.
void check_conv_weights(const std::string& op, int64_t c_in, const Conv2dWeights& w,
                        int32_t groups);

// What the fused depthwise -> 1x1 op (runtime/ops/DepthwisePointwise.cpp) shares with
// q8ta_conv2d. conv_out_size: one output dimension, (in + pads - dilation (k - 1) - 1) / stride
// + 1 (0 where the kernel does not fit). check_conv: the weights, geometry and output sizes [N,
// C_out, H_out, W_out] of a convolution of input `in` (InvalidArgument / Unsupported naming `op`).
int64_t conv_out_size(int64_t in, int32_t pad_a, int32_t pad_b, int32_t dilation, int64_t k,
                      int32_t stride);
void check_conv(const std::string& op, const Dims4& in, const Dims4& out, const Conv2dWeights& w,
                const Conv2dGeometry& g);
// The direct kernel's weight blocks: ivec4 ((co4 * KH + ky) * KW + kx) * C4_in + ci4, component j
// = output channel 4 co4 + j, byte lane i = input channel 4 ci4 + i (zero outside the group or
// past C).
std::vector<uint8_t> pack_direct_weights(const Conv2dWeights& w, int64_t c_in, int64_t groups);
// The weights, scales and bias with the output channels in phase-major order for an output
// pixel-shuffled by r: channel (i r + j) C + c is channel c r^2 + i r + j as given (C = C_out /
// r^2), so the 4 channels of a packed word go to one output word (sub-pixel phase (i, j),
// channels c .. c + 3). The arrays live in the result's owner (with the given owner).
Conv2dWeights phase_major_weights(const Conv2dWeights& w, int32_t r);
// The depthwise kernel's weight words: (c4 * KH + ky) * KW + kx, byte lane i = channel 4 c4 + i.
std::vector<uint8_t> pack_depthwise_weights(const Conv2dWeights& w);
// The weights as the [C_out, C_in / groups * KH * KW] matrix (the channel constants' rows).
LinearWeights as_matrix(const Conv2dWeights& w);
// A blob op's weights `<prefix>weight` [C_out, C_in / groups, KH, KW] with their
// `<prefix>weight_scales` and `<prefix>bias`, and its stride, padding and dilation (groups 1).
Conv2dWeights blob_conv_weights(const OpCall& call, const std::string& prefix);
Conv2dGeometry blob_conv_geometry(const OpCall& call);

// `input`: int8x4 buffer, PackedInt8_4W4C or PackedInt8_4C1W, sizes [N, C_in, H, W] (rank 3 =
// N 1); with p.quantize_input a float32 width-packed buffer of those sizes. `output`: sizes
// [N, C_out, H_out, W_out] ([N, C_out / r^2, H_out r, W_out r] with p.upscale = r); an int8x4
// buffer in 4W4C or 4C1W when p.output is set (padding lanes hold its zero point), else a
// float32 width-packed buffer. p.residual: its `other` an int8x4 tensor of
// the output's sizes and layout. Returns the route taken.
Conv2dRoute add_q8ta_conv2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                 const Conv2dWeights& weights, graph::ValueRef output,
                                 const Conv2dParams& p);

}  // namespace vkd::ops
