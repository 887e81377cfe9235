// q8ta_conv2d_ps_pw_q_dq: a 1x1 q8ta_conv2d written pixel-shuffled by R (its int8 output "mid",
// [N, C, H R, W R]) and the 1x1 q8ta_conv2d_q_dq reading mid, in one dispatch: mid is never
// written. The bytes (here the floats) of the two ops in turn (runtime/ops/ShuffledHead.h):
// mid requantized with its own scale, zero point and activation range exactly as the shuffled
// convolution's store would, then the head's requantized int8 dequantized as q8ta_dequantize.
// Invocation = one output pixel (n, oy, ox) of the [N, N_out, H R, W R] float32 NCHW output,
// neighbouring invocations neighbouring widths (their float stores contiguous along each output
// row). Its mid pixel is the shuffled convolution's sub-pixel phase (oy % R, ox % R) at input
// pixel (oy / R, ox / R): the invocation loads that pixel's C4_IN words, computes its C mid
// channels (C4 words: 4 x C4_IN dot products each, requantized), then the head's N4 words of 4
// output channels from them (4 x C4 dot products each) and stores the dequantized floats. The
// R x R invocations of one input pixel read the same input words (cached) and each its own
// phase's weights; nothing is shared through memory, so there is no barrier.
// Bindings: 0 output (float32 NCHW), 1 input (int8 4W4C tiles), 2 the shuffled convolution's
// weights in phase-major order (ivec4 (phase * C4 + m4) * C4_IN + ci4, component j = mid channel
// 4 m4 + j of that phase, byte lane i = input channel 4 ci4 + i), 3 the head's channel constants
// (quant_epilogue.glslh), 4 the head's weights (ivec4 h4 * C4 + m4, component j = output channel
// 4 h4 + j, byte lane i = mid channel 4 m4 + i), 5 the shuffled convolution's channel constants
// (its R^2 C channels in phase-major order).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"
#include "int8_dot.glslh"
#include "requant.glslh"

layout(std430, binding = 0) writeonly buffer Out { float out_floats[]; };
layout(std430, binding = 1) readonly buffer In { ivec4 in_tiles[]; };
layout(std430, binding = 2) readonly buffer PsWeights { ivec4 ps_blocks[]; };
layout(std430, binding = 4) readonly buffer HeadWeights { ivec4 head_blocks[]; };
layout(std430, binding = 5) readonly buffer PsCh { ivec4 ps_ch[]; };

layout(push_constant) uniform Params {
  int batches, h_in, w_in;  // the input [N, C_in, H, W]
  int c_out;                // the head's output channels (the output is [N, c_out, H R, W R])
  int x_zp;                 // the input's zero point
  float mid_inv_scale;      // mid's int8 value: float32(1 / scale), activation range; zero
  int mid_act_min;          // point in_zp
  int mid_act_max;
  // The head's epilogue, as quant_epilogue.glslh reads it: its input (mid) zero point, its
  // constants' channels and its int8 output, then that output's scale for the dequantize.
  int in_zp;
  int n_pad;
  int out_zp;
  float inv_out_scale;
  int act_min;
  int act_max;
  float out_scale;
} p;

#include "quant_epilogue.glslh"  // ChannelWord, requantize_word (spec constant 3)

// The geometry's constants, so that every loop unrolls and mid stays in registers.
layout(constant_id = 4) const int R = 2;      // upscale factor
layout(constant_id = 5) const int C4_IN = 1;  // input channel words
layout(constant_id = 6) const int C4 = 1;     // mid channel words (C = 4 C4)
layout(constant_id = 7) const int N4 = 1;     // head output channel words

void main() {
  const int h_out = p.h_in * R, w_out = p.w_in * R;
  const int id = int(linear_invocation_id());
  if (id >= p.batches * h_out * w_out) return;
  const int ox = id % w_out, oy = (id / w_out) % h_out, n = id / (w_out * h_out);
  const int iy = oy / R, ix = ox / R, phase = (oy % R) * R + ox % R;

  int x[C4_IN];
  const int tile = ((n * p.h_in + iy) * div_up(p.w_in, 4) + ix / 4) * C4_IN;
  [[unroll]] for (int ci4 = 0; ci4 < C4_IN; ++ci4) x[ci4] = in_tiles[tile + ci4][ix % 4];

  // mid: this phase's C channels, each word requantized as the shuffled convolution's store does.
  const int ps_words = R * R * C4;
  const RequantTo to_mid = RequantTo(p.mid_inv_scale, p.in_zp, p.mid_act_min, p.mid_act_max);
  int mid[C4];
  [[unroll]] for (int m4 = 0; m4 < C4; ++m4) {
    const int g4 = phase * C4 + m4;
    ivec4 acc = ivec4(0);
    [[unroll]] for (int ci4 = 0; ci4 < C4_IN; ++ci4) {
      acc += dot_int8x4_each(x[ci4], ps_blocks[g4 * C4_IN + ci4]);
    }
    const ChannelWord k =
        channel_word(ps_ch[g4], ps_ch[ps_words + g4], ps_ch[2 * ps_words + g4], p.x_zp);
    mid[m4] = requantize_word(acc, k, to_mid);
  }

  // The head: 4 output channels at a time, requantized, then dequantized into the floats.
  const int plane = h_out * w_out, pixel = oy * w_out + ox;
  [[unroll]] for (int h4 = 0; h4 < N4; ++h4) {
    ivec4 acc = ivec4(0);
    [[unroll]] for (int m4 = 0; m4 < C4; ++m4) {
      acc += dot_int8x4_each(mid[m4], head_blocks[h4 * C4 + m4]);
    }
    const int word = requantize_word(acc, load_channel_word(h4));
    [[unroll]] for (int j = 0; j < 4; ++j) {
      const int c = 4 * h4 + j;
      if (c < p.c_out) {
        out_floats[(n * p.c_out + c) * plane + pixel] = dequantized_lane(word, j, p.out_zp, p.out_scale);
      }
    }
  }
}
