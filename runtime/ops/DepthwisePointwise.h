// Fused depthwise -> 1x1 convolution: q8ta_conv2d_dw_pw, q8ta_conv2d_dw_pw_add.
// A depthwise q8ta_conv2d (groups == C == C_out, weights [C, 1, KH, KW]) whose int8 output "mid"
// nothing but a 1x1 q8ta_conv2d (stride 1, no padding, groups 1, weights [N, C, 1, 1]) reads,
// as one op: the bytes of the two in turn, each with Conv2d.h's arithmetic (mid requantized with
// its own scale, zero point and activation range, exactly as the depthwise's output would be);
// with `residual` (q8ta_conv2d_dw_pw_add) the 1x1's int8 value is then q8ta_add's a, as in
// q8ta_conv2d_add's store. Two forms, the same bytes:
//   Fused: one dispatch (shaders/q8ta_conv2d_dw_pw.glsl), mid only in shared memory: the
//     inverted-residual blocks of MobileNet-style models lose a dispatch and mid's round trip
//     through memory each.
//   Split: the depthwise into an intermediate tensor, then the 1x1, each through
//     add_q8ta_conv2d_node's own route (two dispatches).
//   Auto: Split on CPU devices (their 1x1 runs the CPU GEMM, and a dispatch costs them little)
//     and for more than 32 output channels (measured slower fused; DepthwisePointwise.cpp),
//     else Fused.
// q8ta_conv2d_pw_dw_pw / _add: the same after a 1x1 expansion q8ta_conv2d (weights [C, C_in, 1,
// 1], stride 1, no padding, groups 1) whose int8 output only the depthwise reads (a MobileNetV2
// inverted-residual block). Fused: one dispatch, the expansion computed into shared memory for
// each workgroup's output row (its halo recomputed); Split: the expansion into an intermediate
// tensor, then the depthwise -> 1x1 op by its own rule; Auto: Fused where the depthwise -> 1x1
// would be, the expansion small (C_in x C <= 32 x 192, measured) and the window fits the device's
// shared memory, else Split.
#pragma once

#include <cstdint>
#include <optional>

#include "partitioner_schema/ConvRoutes.h"  // kMaxDepthwisePointwiseChannels
#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Conv2d.h"

namespace vkd::ops {

using DepthwisePointwiseForm = FusionForm;

// The 1x1 expansion before the depthwise (q8ta_conv2d_pw_dw_pw): its weights [C, C_in, 1, 1] and
// its int8 output's quantization and activation range (the depthwise's input).
struct DepthwiseExpansion {
  Conv2dWeights weights;
  QuantParams output;
  int32_t activation_min = -128;
  int32_t activation_max = 127;
};

struct DepthwisePointwiseParams {
  QuantParams input;                            // the int8 input's scale and zero point
  std::optional<DepthwiseExpansion> expansion;  // q8ta_conv2d_pw_dw_pw
  Conv2dGeometry geometry;  // the depthwise's stride, padding and dilation (groups = C)
  QuantParams mid;          // the depthwise's int8 output: quantization and activation range
  int32_t mid_activation_min = -128;
  int32_t mid_activation_max = 127;
  QuantParams output;  // the 1x1's int8 value: quantization and activation range
  int32_t activation_min = -128;
  int32_t activation_max = 127;
  std::optional<ResidualAdd> residual;  // q8ta_conv2d_dw_pw_add: that value plus `other`
  DepthwisePointwiseForm form = DepthwisePointwiseForm::Auto;
  // Fused: output tiles (4 widths each) per workgroup, 1..64 (0 = chosen); for tests and tuning.
  int32_t tiles_per_workgroup = 0;
  // Fused with an expansion: output rows per workgroup, each of tiles_per_workgroup tiles, which
  // share the expansion's window rows, 1..4 (0 = chosen); for tests and tuning.
  int32_t rows_per_workgroup = 0;
  // Fused: invocations per workgroup, 64, 128 or 256 (0 = chosen); for tests and tuning.
  int32_t workgroup_size = 0;
};

// `input`: int8x4 4W4C buffer [N, C, H, W] (rank 3 = N 1; [N, C_in, H, W] with an expansion);
// `output`: int8x4 4W4C buffer
// [N, N_out, H_out, W_out] with the depthwise's H_out, W_out. p.residual: its `other` an int8x4
// tensor of the output's sizes and layout. InvalidArgument naming the op for anything else;
// Unsupported past kMaxDepthwisePointwiseChannels. Returns the form taken.
DepthwisePointwiseForm add_q8ta_conv2d_dw_pw_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                                  const Conv2dWeights& depthwise,
                                                  const Conv2dWeights& pointwise,
                                                  graph::ValueRef output,
                                                  const DepthwisePointwiseParams& p);

}  // namespace vkd::ops
