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
// q8ta_quantize would have quantized it, word by word as each invocation loads it.
// Variants: IN_LAYOUT (int8 4W4C / 4C1W) x OUTPUT (int8 4W4C / 4C1W, float, int8 4W4C / 4C1W +
// residual, float of the int8) x INT8_DOT_FALLBACK; family q8ta_conv2d_fq: the float input x
// OUTPUT int8 4W4C / 4C1W x INT8_DOT_FALLBACK.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "int8_dot.glslh"
#define CONV_SHUFFLED_STORE
#include "conv_common.glslh"

layout(std430, binding = 2) readonly buffer W { ivec4 w_blocks[]; };

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
          acc[w] += ivec4(dot_int8x4(x, wb.x), dot_int8x4(x, wb.y), dot_int8x4(x, wb.z),
                          dot_int8x4(x, wb.w));
        }
      }
    }
  }
  store_tile(t, acc);
}
