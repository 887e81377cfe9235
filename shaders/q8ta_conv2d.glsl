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
// q8ta_quantize would have quantized it, word by word as each invocation loads it; there an
// invocation is one output pixel x CO4 output channel blocks (main below), so each float is
// loaded and quantized once per tap for all those channels instead of once per 4 of them
// (H100, the 1x3x256x144 -> 24 3x3 s2 stem: 17.0 us in refinenet_lite's profile with the
// 4-width x 4-channel tiles, 15.7 us so (PERF); the int8-input direct kernel takes 7.5 us, so
// the float loads, not the products, are what is left).
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
// Output channel blocks per invocation (Conv2d.cpp: min(C4_out, 8)); 4 and 5 are the store's.
layout(constant_id = 6) const int CO4 = 8;

// Invocation = output pixel (n, oy, ox) x channel blocks chunk CO4 .. + CO4 - 1; neighbouring
// invocations take neighbouring widths (4W4C: the padding widths of the last tile too, which
// get the padding word). Per tap and input channel block one quantized input word, dotted
// with every block's weights (a block outside that input block's groups has zero weights).
void main() {
  const int id = int(linear_invocation_id());
  const int w_grid = OUT_LAYOUT == LAYOUT_4C1W ? p.w_out : 4 * div_up(p.w_out, 4);
  const int chunks = div_up(p.c4_out, CO4);
  if (id >= p.batches * chunks * p.h_out * w_grid) return;
  const int ox = id % w_grid, oy = (id / w_grid) % p.h_out;
  const int chunk = (id / (w_grid * p.h_out)) % chunks, n = id / (w_grid * p.h_out * chunks);
  const int co4_0 = chunk * CO4;
  ivec4 acc[CO4];
  [[unroll]] for (int j = 0; j < CO4; ++j) acc[j] = ivec4(0);
  if (ox < p.w_out) {
    for (int ky = 0; ky < p.kh; ++ky) {
      const int iy = oy * p.stride_h - p.pad_top + ky * p.dilation_h;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int ix = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
        for (int ci4 = 0; ci4 < p.c4_in; ++ci4) {
          const int x = load_input_word(n, ci4, iy, ix);
          [[unroll]] for (int j = 0; j < CO4; ++j) {
            if (co4_0 + j >= p.c4_out) break;
            const ivec4 wb = w_blocks[(((co4_0 + j) * p.kh + ky) * p.kw + kx) * p.c4_in + ci4];
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
