// pixel_shuffle (float) and q8ta_pixel_shuffle (packed int8x4), torch.nn.PixelShuffle:
// (N, C * r^2, H, W) -> (N, C, H * r, W * r); output (n, c, oh, ow) is input channel
// c * r^2 + (oh % r) * r + (ow % r) at (oh / r, ow / r). Rank 3 or 4 (rank 3 = one image).
//
// q8ta_pixel_shuffle arithmetic, per element:
//   input and output with the same scale and zero point: the byte itself (no arithmetic);
//   otherwise, in float32 with every operation rounded on its own (no fused multiply-add):
//     y = float(q_in - zp_in) * s_in
//     q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127),  inv_s_out = float32(1 / s_out)
//   i.e. q8ta_dequantize followed by q8ta_quantize, bit for bit (the byte path equals it too:
//   |q - zp| <= 255 keeps y * inv_s within far less than 0.5 of q - zp when the scales agree).
// Padding lanes (channels >= C, widths past W of a 4W4C output) hold the output zero point.
#pragma once

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// `input`: int8x4 in 4W4C or 4C1W, quantized with `in_q`; `output`: int8x4 in 4W4C or 4C1W
// (either: the layouts may differ), quantized with `out_q` (full int8 range).
void add_q8ta_pixel_shuffle_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                 const QuantParams& in_q, int64_t upscale_factor,
                                 graph::ValueRef output, const QuantParams& out_q);

// `input`, `output`: float32 or float16 (the same), any storage and width/height/channels-packed
// layout on either side. float16 buffers need 16-bit storage on the device.
void add_pixel_shuffle_node(graph::ComputeGraph& graph, graph::ValueRef input,
                            int64_t upscale_factor, graph::ValueRef output);

}  // namespace vkd::ops
