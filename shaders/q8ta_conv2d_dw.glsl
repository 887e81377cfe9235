// q8ta_conv2d, depthwise route (groups == C_in == C_out): each output channel sees only its own
// input channel, so the 4 channels of a packed word stay in their byte lanes. Invocation = one
// output tile (conv_common.glslh: 4 widths x 4 channels). Per tap it loads one weight word (the
// 4 channels' weights) and splits it into 4 single-lane masks; per width it loads one input word
// and adds dot(x, mask_i) = x[i] * w[i] to lane i's accumulator — 4 packed dot products instead
// of 4 byte extracts and multiplies each.
// Weights: int word (c4 * KH + ky) * KW + kx, byte lane i = channel 4 c4 + i (zero past C).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "int8_dot.glslh"
#include "conv_common.glslh"

layout(std430, binding = 2) readonly buffer W { int w_words[]; };

void main() {
  OutTile t;
  if (!out_tile(t)) return;
  ivec4 acc[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  for (int ky = 0; ky < p.kh; ++ky) {
    const int iy = t.oy * p.stride_h - p.pad_top + ky * p.dilation_h;
    for (int kx = 0; kx < p.kw; ++kx) {
      const int ix0 = t.ox0 * p.stride_w - p.pad_left + kx * p.dilation_w;
      const int wv = w_words[(t.c4 * p.kh + ky) * p.kw + kx];
      const ivec4 masks = ivec4(wv & 0xFF, wv & 0xFF00, wv & 0xFF0000, wv & int(0xFF000000));
      for (int w = 0; w < 4; ++w) {
        const int x = load_input_word(t.n, t.c4, iy, ix0 + w * p.stride_w);
        acc[w] += ivec4(dot_int8x4(x, masks.x), dot_int8x4(x, masks.y), dot_int8x4(x, masks.z),
                        dot_int8x4(x, masks.w));
      }
    }
  }
  store_tile(t, acc);
}
