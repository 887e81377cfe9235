// q8ta_max_pool2d: PyTorch max_pool2d (kernel, stride, padding, dilation, ceil_mode) over a
// channels-packed int8x4 tensor (INT8_LAYOUT: 4W4C or 4C1W; output in the same layout). Each
// output lane is the max of the int8 values in its window, byte lane by byte lane: the
// dequantization is monotone (non-decreasing), so the max of the dequantized window is the
// dequantized max of the int8 values.
// REQUANT 0: input and output share scale and zero point; the max is the output byte.
// REQUANT 1: the output's quantization differs; the max is requantized once, per lane, as the
//   data-movement kernels requantize a moved value (requantize_moved, int8x4_chunk.glslh):
//   y = float32(q - zp_in) * s_in;  q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)
//   (inv_s_out = float32(1 / s_out)). Being non-decreasing too, requantizing after the max
//   equals quantizing the max of the dequantized window, which is what dq -> max_pool2d -> q
//   computes.
// Padding never wins (window positions outside the input are skipped); a window with no input
// position (possible only with dilation) gives -128 in both variants, as -inf quantizes to it.
//
// Each invocation computes one output word (4 channels at one (n, oh, ow)); consecutive
// invocations write consecutive words (the output's memory order). Words of the output that
// lie outside the tensor (4W4C widths past OW) and lanes past C hold the output zero point.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "int8x4_chunk.glslh"  // MovedRequant, requantize_moved, pad_lanes

layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = 1) readonly buffer InWords { int in_words[]; };

layout(push_constant) uniform Params {
  ivec4 in_sizes;   // N, C, H, W
  ivec4 out_sizes;  // N, C, OH, OW
  ivec2 kernel;     // (h, w) everywhere below
  ivec2 stride;
  ivec2 padding;
  ivec2 dilation;
  int word_count;   // words of the output
  MovedRequant requant;  // int8x4_chunk.glslh; requant.out_zp pads in both variants
} p;

int in_word(int n, int c4, int h, int w) {
  const int C4 = div_up(p.in_sizes.y, 4), H = p.in_sizes.z, W = p.in_sizes.w;
#if INT8_LAYOUT == LAYOUT_4W4C
  return in_words[4 * (((n * H + h) * div_up(W, 4) + w / 4) * C4 + c4) + w % 4];
#else
  return in_words[((n * H + h) * C4 + c4) * W + w];
#endif
}

void main() {
  const int i = int(linear_invocation_id());
  if (i >= p.word_count) return;
  const int C = p.out_sizes.y, OH = p.out_sizes.z, OW = p.out_sizes.w;
  const int C4 = div_up(C, 4);
#if INT8_LAYOUT == LAYOUT_4W4C
  // word 4*(((n*OH + oh)*OW4 + ow4)*C4 + c4) + ow%4
  int q = i / 4;
  const int c4 = q % C4; q /= C4;
  const int ow = 4 * (q % div_up(OW, 4)) + i % 4; q /= div_up(OW, 4);
  if (ow >= OW) {
    out_words[i] = splat_byte(p.requant.out_zp);
    return;
  }
#else
  // word ((n*OH + oh)*C4 + c4)*OW + ow
  const int ow = i % OW;
  int q = i / OW;
  const int c4 = q % C4; q /= C4;
#endif
  const int oh = q % OH, n = q / OH;

  const int H = p.in_sizes.z, W = p.in_sizes.w;
  const ivec2 start = ivec2(oh, ow) * p.stride - p.padding;
  ivec4 m = ivec4(-128);
  bool any_position = false;
  for (int kh = 0; kh < p.kernel.x; ++kh) {
    const int h = start.x + kh * p.dilation.x;
    if (h < 0 || h >= H) continue;
    for (int kw = 0; kw < p.kernel.y; ++kw) {
      const int w = start.y + kw * p.dilation.y;
      if (w < 0 || w >= W) continue;
      const int v = in_word(n, c4, h, w);
      m = max(m, ivec4(lane_of(v, 0), lane_of(v, 1), lane_of(v, 2), lane_of(v, 3)));
      any_position = true;
    }
  }
#if REQUANT
  // An empty window stays -128 (-inf quantized), not the requantized -128 of the input.
  if (any_position) {
    for (int j = 0; j < 4; ++j) m[j] = requantize_moved(m[j], p.requant);
  }
#endif
  out_words[i] = pad_lanes(pack_lanes(m), C - 4 * c4, p.requant.out_zp);
}
