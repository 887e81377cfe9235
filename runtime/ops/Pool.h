// Pooling over channels-packed int8x4 tensors: q8ta_max_pool2d, q8ta_avg_pool2d and
// q8ta_adaptive_avg_pool2d (windows, requantized), q8ta_mean (global average over H and W).
#pragma once

#include <array>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

// PyTorch max_pool2d's parameters, (h, w) each, and the input's and output's quantization.
struct MaxPool2dParams {
  std::array<int32_t, 2> kernel{1, 1};
  std::array<int32_t, 2> stride{1, 1};
  std::array<int32_t, 2> padding{0, 0};
  std::array<int32_t, 2> dilation{1, 1};
  bool ceil_mode = false;
  QuantParams input;
  QuantParams output;  // the full int8 range
};

// PyTorch's pooling output size: floor (or ceil) of (in + 2 pad - dil (k - 1) - 1) / stride + 1;
// with ceil_mode, a last window that would start in the right/bottom padding is dropped.
int64_t max_pool_output_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride,
                             int64_t dilation, bool ceil_mode);

// m = max of input[n, c, oh*s - p + i*d, ow*s - p + j*d] over the window positions inside the
// input (int8 values). out[n, c, oh, ow] = m when input and output share scale and zero point,
// else m requantized as the data-movement ops requantize a moved value (float32, each
// operation rounded on its own):
//   q_out = clamp(roundEven(float32(float32(m - zp_in) * s_in) * inv_s_out) + zp_out, -128, 127)
// with inv_s_out = float32(1/s_out): both maps are non-decreasing, so this is
// quantize(max(dequantize(window))), dq -> max_pool2d -> q. A window with no input position
// gives -128 (what -inf quantizes to). `input`, `output`: int8x4 in one channels-packed layout
// (4W4C or 4C1W), rank 3 or 4, output sizes per max_pool_output_size; 0 <= padding <=
// kernel / 2 (as PyTorch requires); the output over the full int8 range.
void add_q8ta_max_pool2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const MaxPool2dParams& params);

// PyTorch avg_pool2d's parameters, (h, w) each, and the input's and output's quantization.
struct AvgPool2dParams {
  std::array<int32_t, 2> kernel{1, 1};
  std::array<int32_t, 2> stride{1, 1};
  std::array<int32_t, 2> padding{0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;
  int32_t divisor_override = 0;  // 0: none (PyTorch refuses 0 as a divisor)
  QuantParams input;
  QuantParams output;
};

// Average pooling, requantized, per output (shaders/q8ta_avg_pool2d.glsl):
//   acc = sum over the window's input positions of (q - zp_in)           (int32, exact)
//   m = float32(double(s_in) / divisor)                                   (on the host)
//   q_out = clamp(roundEven(float32(float32(acc) * m) * inv_s_out) + zp_out, -128, 127)
// inv_s_out = float32(1/s_out); mathematically zp_out + round(acc * s_in / (divisor * s_out)).
// Windows are PyTorch's: along each dim, start = o * stride - padding, end = min(start + kernel,
// size + padding); divisor = divisor_override, else (count_include_pad) the product of the two
// (end - start), else the number of input positions in the window (start and end clipped to the
// input); output size per max_pool_output_size with dilation 1 (ceil_mode drops a last window
// that would start in the right padding). `input`, `output`: int8x4 in one channels-packed
// layout (4W4C or 4C1W), rank 3 or 4; 0 <= padding <= kernel / 2; kernel_h * kernel_w <= 16448
// (255 times that converts to float32 exactly in the kernel's arithmetic).
void add_q8ta_avg_pool2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                              graph::ValueRef output, const AvgPool2dParams& params);

// adaptive_avg_pool2d to the sizes of `output` (any OH, OW >= 1), requantized as
// q8ta_avg_pool2d: output o of a dim of input size `in` and output size `out` averages input
// positions [floor(o * in / out), ceil((o + 1) * in / out)), divisor = the window's element
// count. Tensors as q8ta_avg_pool2d's; the largest window has at most 16448 positions.
void add_q8ta_adaptive_avg_pool2d_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                       graph::ValueRef output, const QuantParams& in_q,
                                       const QuantParams& out_q);

// Mean over H and W, keepdim ([N, C, H, W] -> [N, C, 1, 1]), per channel, each float32
// operation rounded on its own (shaders/q8ta_mean.glsl):
//   acc = sum(q) - H*W * zp_in (int32);  m = float32(double(s_in) / (H*W))
//   q_out = clamp(roundEven(float32(acc) * m * inv_s_out) + zp_out, -128, 127)
// (the two products rounded in that order), inv_s_out = float32(1/s_out). `input`: int8x4 in a
// channels-packed layout, rank 3 or 4; `output`: [N, C, 1, 1] in the input's layout, or [N, C]
// in 4H4W (keepdim = False / flattened: q8ta_mean_flat, the rows a q8ta_linear reads);
// H*W*255 < 2^24 (the float32 sum is exact).
void add_q8ta_mean_node(graph::ComputeGraph& graph, graph::ValueRef input, graph::ValueRef output,
                        const QuantParams& in_q, const QuantParams& out_q);

}  // namespace vkd::ops
