// q8ta_conv2d, im2col route, step 1 of 2 (runtime/ops/Conv2d.cpp): gathers the input windows
// of every output pixel into the int8x4 matrix the linear kernels multiply (step 2,
// add_q8ta_linear_rows_node), rows = output pixels, K = the taps' input channels.
//
// Output (binding 0): 16-byte blocks (rb, k4) at rb * K4 + k4, block = 4 rows x 4 K values
// (component r = row, byte lane = K), i.e. a 4W4C tensor [N, K, H_out, W_out]:
//   row block rb = (n * H_out + oy) * W4_out + ox0 / 4, rows = output pixels ox0 .. ox0 + 3 of
//   output row oy of image n (padded past W_out, as the conv's 4W4C output is);
//   k4 = (ky * KW + kx) * C4_in + ci4, K lane i = input channel 4 ci4 + i of tap (ky, kx).
// With this K order one word of the block is one input word: the 4 channels 4 ci4 .. + 3 of
// input pixel (iy, ix) = (oy * stride_h - pad_top + ky * dilation_h, ox * stride_w - pad_left
// + kx * dilation_w), copied without any byte shuffling. A tap outside the input, and a padded
// row (ox >= W_out), holds the input zero point in every lane: a real zero, which the GEMM's
// zp_x * wsum term cancels. Input lanes past C_in are copied as they are; the GEMM's weights
// are zero there, so they add nothing.
//
// Invocation = one output block: id = rb * K4 + k4, so neighbouring invocations write
// neighbouring 16-byte blocks (one ivec4 store each, fully coalesced) and read neighbouring
// channel blocks of the same input pixels (4W4C: neighbouring 16-byte input tiles).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"

layout(std430, binding = 0) writeonly buffer Out { ivec4 out_blocks[]; };
#if IN_LAYOUT == LAYOUT_4W4C
// 16-byte tiles of 4 widths x 4 channels (a 4W4C buffer is whole tiles).
layout(std430, binding = 1) readonly buffer In { ivec4 in_tiles[]; };
#else
layout(std430, binding = 1) readonly buffer In { int in_words[]; };
#endif

// Mirrors Im2colPush in runtime/ops/Conv2d.cpp.
layout(push_constant) uniform Params {
  int blocks;  // output blocks: N * H_out * W4_out * K4
  int k4;      // K4 = KH * KW * C4_in
  int c4_in, h_in, w_in;
  int h_out, w_out;
  int kw;
  int stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  int in_zp;
} p;

// The 4 channels 4 c4 .. + 3 of input pixel (iy, ix) of image n, or the zero point in every
// lane outside the image (conv_common.glslh's load_input_word, which reads the direct
// kernels' push constants).
int input_word(int n, int c4, int iy, int ix) {
  if (iy < 0 || iy >= p.h_in || ix < 0 || ix >= p.w_in) return splat_byte(p.in_zp);
#if IN_LAYOUT == LAYOUT_4W4C
  return in_tiles[((n * p.h_in + iy) * div_up(p.w_in, 4) + ix / 4) * p.c4_in + c4][ix % 4];
#else
  return in_words[((n * p.h_in + iy) * p.c4_in + c4) * p.w_in + ix];
#endif
}

void main() {
  const int id = int(linear_invocation_id());
  if (id >= p.blocks) return;
  const int k4 = id % p.k4, rb = id / p.k4;
  const int w4_out = div_up(p.w_out, 4);
  const int ox0 = 4 * (rb % w4_out), row = rb / w4_out;  // row = n * H_out + oy
  const int oy = row % p.h_out, n = row / p.h_out;
  const int tap = k4 / p.c4_in, ci4 = k4 % p.c4_in;
  const int ky = tap / p.kw, kx = tap % p.kw;
  const int iy = oy * p.stride_h - p.pad_top + ky * p.dilation_h;
  const int ix0 = ox0 * p.stride_w - p.pad_left + kx * p.dilation_w;

  ivec4 block;
#if IN_LAYOUT == LAYOUT_4W4C
  // Stride 1 with the 4 pixels (all real) inside the input: they are 4 consecutive widths, so
  // one or two whole input tiles hold them (the 3x3 stride-1 layers take this path for all but
  // the border blocks) instead of 4 word loads.
  if (p.stride_w == 1 && iy >= 0 && iy < p.h_in && ix0 >= 0 && ix0 + 3 < p.w_in &&
      ox0 + 3 < p.w_out) {
    const int tile = ((n * p.h_in + iy) * div_up(p.w_in, 4) + ix0 / 4) * p.c4_in + ci4;
    const int shift = ix0 % 4;
    const ivec4 a = in_tiles[tile];
    if (shift == 0) {
      block = a;
    } else {
      // ix0 + 3 < W_in, so the next tile of the row exists.
      const ivec4 b = in_tiles[tile + p.c4_in];
      for (int r = 0; r < 4; ++r) block[r] = shift + r < 4 ? a[shift + r] : b[shift + r - 4];
    }
    out_blocks[id] = block;
    return;
  }
#endif
  for (int r = 0; r < 4; ++r) {
    block[r] = ox0 + r < p.w_out ? input_word(n, ci4, iy, ix0 + r * p.stride_w)
                                 : splat_byte(p.in_zp);
  }
  out_blocks[id] = block;
}
