// int8 upsampling: q8ta_upsample_nearest2d and q8ta_upsample_bilinear2d (torch.nn.Upsample,
// F.interpolate with mode 'nearest' / 'bilinear'), NCHW rank 3 or 4 ([N,] C, H, W) ->
// [N,] C, H_out, W_out, any packed int8 layout (input and output share it).
//
// Where each output row and column reads is PyTorch 2.14's rule
// (partitioner_schema/Interpolation.h: nearest source index; bilinear taps i0, i1 and the weight w1
// of i1 in units of 2^-20, from PyTorch's float32 lambda1), computed on the CPU when the node is
// built.
//
// Arithmetic per element, defined so that a CPU reference reproduces it bit for bit:
//   nearest, input and output with the same scale and zero point: the byte itself;
//   nearest, otherwise: y = float32(q - zp_in) * s_in, then the store below;
//   bilinear: with d = q - zp_in at the taps (row a, column b), in integers (exact, int32 and one
//     64-bit product):  acc = sum_ab W_a W_b d_ab = x_0 * 2^20 + w1_h * (x_1 - x_0),
//     x_a = d_a0 * 2^20 + w1_w * (d_a1 - d_a0),  W_1 = w1, W_0 = 2^20 - w1  (|acc| < 2^48);
//     f = float32(acc) (correctly rounded), y = f * (float32(s_in) * 2^-40)  (exact scaling);
//   store: clamp(roundEven(float32(y * inv_s_out)) + zp_out, -128, 127), inv_s_out =
//   float32(1 / s_out) (q8ta_quantize's rounding). One requantization: the only roundings are
//   the weights' (to 2^-20) and these float32 steps.
// The result differs from PyTorch's float op on the dequantized input only by the weights'
// rounding (each within 2^-21 of PyTorch's lambda), so by at most 2^-19 * (largest |d| of the
// taps) * s_in + the float32 steps: 255 * 2^-19 * s_in / s_out + 3 * 2^-24 * |t| < 6e-4 output
// steps when s_in == s_out, so the quantized results can differ only at rounding ties.
// Padding lanes and rows hold the output zero point.
#pragma once

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

enum class UpsampleMode { Nearest, Bilinear };

struct UpsampleParams {
  UpsampleMode mode = UpsampleMode::Nearest;
  QuantParams input, output;   // the output uses the full int8 range
  double scale_h = 0.0;        // ATen's scale factors (scales_h / scales_w); <= 0: none,
  double scale_w = 0.0;        // the step is then in / out
  bool align_corners = false;  // bilinear only
};

// `input`, `output`: int8x4 buffers in the same packed layout (4W4C, 4H4W or 4C1W), sizes
// [N, C, H, W] and [N, C, H_out, W_out] (or both rank 3); any output size >= 1.
void add_q8ta_upsample_node(graph::ComputeGraph& graph, graph::ValueRef input,
                            graph::ValueRef output, const UpsampleParams& p);

}  // namespace vkd::ops
