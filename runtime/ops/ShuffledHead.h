// Fused shuffled head: q8ta_conv2d_ps_pw_q_dq.
// A 1x1 q8ta_conv2d_ps (stride 1, no padding, groups 1, weights [C r^2, C_in, 1, 1], its int8
// output "mid" [N, C, H r, W r] pixel-shuffled by r) whose mid nothing but a 1x1
// q8ta_conv2d_q_dq (weights [N_out, C, 1, 1]) reads, as one op: the floats of the two in turn,
// each with Conv2d.h's arithmetic (mid requantized with its own scale, zero point and
// activation range exactly as the shuffled convolution's store writes it; the head's int8
// value dequantized as q8ta_dequantize). A segmentation network's last upsampling stage and its
// classifier: the head's dispatch and mid's round trip through memory go. Two forms, the same
// floats:
//   Fused: one dispatch (shaders/q8ta_conv2d_ps_pw.glsl), one invocation per output pixel, mid
//     in registers; C a multiple of 4 (as the shuffled store needs anyway) and C_in, C at most
//     kMaxShuffledHeadChannels.
//   Split: the shuffled convolution into an intermediate tensor, then the head, each through
//     add_q8ta_conv2d_node's own route (two dispatches).
//   Auto: Fused where it fits, else Split; Split on CPU devices (lavapipe: the fused kernel's
//     first-dispatch compile costs more than the dispatch it saves).
#pragma once

#include <cstdint>

#include "partitioner_schema/ConvRoutes.h"  // kMaxShuffledHeadChannels
#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/Conv2d.h"

namespace vkd::ops {

using ShuffledHeadForm = FusionForm;

struct ShuffledHeadParams {
  QuantParams input;    // the int8 input's scale and zero point
  int32_t upscale = 2;  // r, >= 2
  QuantParams mid;      // the shuffled convolution's int8 output and activation range
  int32_t mid_activation_min = -128;
  int32_t mid_activation_max = 127;
  QuantParams output;  // the head's int8 value (then dequantized) and activation range
  int32_t activation_min = -128;
  int32_t activation_max = 127;
  ShuffledHeadForm form = ShuffledHeadForm::Auto;
};

// `input`: int8x4 4W4C buffer [N, C_in, H, W] (rank 3 = N 1); `shuffle`: [C r^2, C_in, 1, 1];
// `head`: [N_out, C, 1, 1]; `output`: float32 width-packed buffer [N, N_out, H r, W r] of the
// input's rank. InvalidArgument naming the op for anything else; a Fused form asked for a pair
// it does not fit is Unsupported. Returns the form taken.
ShuffledHeadForm add_q8ta_conv2d_ps_pw_q_dq_node(graph::ComputeGraph& graph, graph::ValueRef input,
                                                 const Conv2dWeights& shuffle,
                                                 const Conv2dWeights& head, graph::ValueRef output,
                                                 const ShuffledHeadParams& p);

}  // namespace vkd::ops
