// q8ta_conv2d, direct route: any kernel size, stride, padding, dilation and groups
// (runtime/ops/Conv2d.h defines the arithmetic). Invocation = one output tile (conv_common.glslh:
// 4 widths x 4 output channels, 16 int32 accumulators — few enough registers that a 2-core CPU
// and an H100 both keep many invocations resident). For every tap (ky, kx) and input channel
// block ci4 of the tile's groups it loads 4 input words (one per width: 4 input channels each)
// and one weight block (4 output x 4 input channels) and does 16 packed int8 dot products.
// Weights: ivec4 block ((co4 * KH + ky) * KW + kx) * C4_in + ci4, component j = output channel
// 4 co4 + j, byte lane i = input channel 4 ci4 + i; zero outside the channel's group and past
// C_in / C_out, so a block that straddles groups or the padding adds nothing.
// The int8 output can be written pixel-shuffled (q8ta_conv2d_ps / _add; specialization
// constants 4, 5) and added to a residual tensor (OUTPUT 3 / 4): conv_common.glslh.
// A float32 NCHW input (IN_LAYOUT LAYOUT_WIDTH_PACKED, q8ta_conv2d_fq) is quantized as
// q8ta_quantize would have quantized it, once per workgroup into shared memory (main below);
// there an invocation is one output pixel x CO4 output channel blocks, so each quantized word
// is dotted with all those channels.
// Variants: IN_LAYOUT (int8 4W4C / 4C1W) x OUTPUT (int8 4W4C / 4C1W, float, int8 4W4C / 4C1W +
// residual, float of the int8) x INT8_DOT_FALLBACK; family q8ta_conv2d_fq: the float input x
// OUTPUT int8 4W4C / 4C1W x INT8_DOT_FALLBACK.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"
#include "int8_dot.glslh"
#define CONV_SHUFFLED_STORE
#include "conv_common.glslh"

layout(std430, binding = 2) readonly buffer W { ivec4 w_blocks[]; };

#if IN_FLOAT
// Output channel blocks per invocation (Conv2d.cpp: kFqChannelBlocks*); 4 and 5 are the store's.
layout(constant_id = 6) const int CO4 = 8;
// The kernel's geometry and the input's channel words: every loop unrolls and the window a
// workgroup reads has a constant size.
layout(constant_id = 7) const int FQ_KH = 3;
layout(constant_id = 8) const int FQ_KW = 3;
layout(constant_id = 9) const int FQ_C4_IN = 1;
layout(constant_id = 10) const int FQ_SH = 1;
layout(constant_id = 11) const int FQ_SW = 1;
layout(constant_id = 12) const int FQ_DH = 1;
layout(constant_id = 13) const int FQ_DW = 1;

// Workgroup (64 invocations, Conv2d.cpp) = FQ_TH x FQ_TW output pixels of one image x one
// chunk of CO4 channel blocks; invocation = one of those pixels (row lid / FQ_TW, column
// lid % FQ_TW: neighbouring invocations take neighbouring widths; in 4W4C the padding widths of
// the last tile too, which get the padding word). The workgroup first quantizes the input
// window its pixels read into shared memory, each float once (coalesced loads along the rows),
// as the words q8ta_quantize writes ([channel word][row][column]; the zero point outside the
// image); then each invocation dots its pixel's taps from there with every block's weights.
// H100, refinenet_lite's 1x3x256x144 -> 24 3x3 s2 stem (PERF): 15.1-15.7 us when every
// invocation loaded and quantized its own taps' floats and dotted them with 6 channel blocks;
// the same 15.4 with this window; 10.0 with this window and one channel block per invocation
// (the int8-input direct kernel: 7.5).
const int FQ_TH = 4;
const int FQ_TW = 16;
const int WIN_H = (FQ_TH - 1) * FQ_SH + (FQ_KH - 1) * FQ_DH + 1;
const int WIN_W = (FQ_TW - 1) * FQ_SW + (FQ_KW - 1) * FQ_DW + 1;
const int WIN_WORDS = FQ_C4_IN * WIN_H * WIN_W;
shared int win_words[WIN_WORDS];

void main() {
  const int lid = int(gl_LocalInvocationIndex);
  const int w_grid = OUT_LAYOUT == LAYOUT_4C1W ? p.w_out : 4 * div_up(p.w_out, 4);
  const int tiles_w = div_up(w_grid, FQ_TW), chunks = div_up(p.c4_out, CO4);
  const int tiles_h = div_up(p.h_out, FQ_TH);
  const int chunk = int(gl_WorkGroupID.x) % chunks, tx = int(gl_WorkGroupID.x) / chunks;
  const int ty = int(gl_WorkGroupID.y) % tiles_h, n = int(gl_WorkGroupID.y) / tiles_h;
  const int oy0 = ty * FQ_TH, ox0 = tx * FQ_TW;
  const int iy0 = oy0 * FQ_SH - p.pad_top, ix0 = ox0 * FQ_SW - p.pad_left;
  // The window: word (c4, r, q) = input pixel (iy0 + r, ix0 + q), channels 4 c4 .. + 3.
  for (int idx = lid; idx < WIN_WORDS; idx += FQ_TH * FQ_TW) {
    const int q = idx % WIN_W, r = (idx / WIN_W) % WIN_H, c4 = idx / (WIN_W * WIN_H);
    win_words[idx] = load_input_word(n, c4, iy0 + r, ix0 + q);
  }
  barrier();
  const int oy = oy0 + lid / FQ_TW, ox = ox0 + lid % FQ_TW;
  if (oy >= p.h_out || ox >= w_grid) return;
  const int co4_0 = chunk * CO4;
  ivec4 acc[CO4];
  [[unroll]] for (int j = 0; j < CO4; ++j) acc[j] = ivec4(0);
  if (ox < p.w_out) {
    [[unroll]] for (int ky = 0; ky < FQ_KH; ++ky) {
      const int r = (lid / FQ_TW) * FQ_SH + ky * FQ_DH;
      [[unroll]] for (int kx = 0; kx < FQ_KW; ++kx) {
        const int q = (lid % FQ_TW) * FQ_SW + kx * FQ_DW;
        [[unroll]] for (int ci4 = 0; ci4 < FQ_C4_IN; ++ci4) {
          const int x = win_words[(ci4 * WIN_H + r) * WIN_W + q];
          [[unroll]] for (int j = 0; j < CO4; ++j) {
            if (co4_0 + j >= p.c4_out) break;
            const ivec4 wb = w_blocks[(((co4_0 + j) * FQ_KH + ky) * FQ_KW + kx) * FQ_C4_IN + ci4];
            acc[j] += dot_int8x4_each(x, wb);
          }
        }
      }
    }
  }
  [[unroll]] for (int j = 0; j < CO4; ++j) {
    if (co4_0 + j >= p.c4_out) break;
    store_pixel(OutTile(n, oy, ox - ox % 4, co4_0 + j), ox % 4, acc[j]);
  }
}
#else
void main() {
  OutTile t;
  if (!out_tile(t, 1, false)) return;
  // Input channel blocks that the tile's output channels (their groups) read.
  const int c_last = min(4 * t.c4 + 3, p.c_out - 1);
  const int g_first = (4 * t.c4) / p.cout_per_group, g_last = c_last / p.cout_per_group;
  const int ci4_begin = (g_first * p.cin_per_group) / 4;
  const int ci4_end = div_up((g_last + 1) * p.cin_per_group, 4);

  ivec4 acc[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  for (int ky = 0; ky < p.kh; ++ky) {
    const int iy = t.oy * p.stride_h - p.pad_top + ky * p.dilation_h;
    for (int kx = 0; kx < p.kw; ++kx) {
      const int ix0 = t.ox0 * p.stride_w - p.pad_left + kx * p.dilation_w;
      const int tap_block = ((t.c4 * p.kh + ky) * p.kw + kx) * p.c4_in;
      for (int ci4 = ci4_begin; ci4 < ci4_end; ++ci4) {
        const ivec4 wb = w_blocks[tap_block + ci4];
        for (int w = 0; w < 4; ++w) {
          const int x = load_input_word(t.n, ci4, iy, ix0 + w * p.stride_w);
          acc[w] += dot_int8x4_each(x, wb);
        }
      }
    }
  }
  store_tile(t, acc);
}
#endif
