// q8ta_conv2d, depthwise route (groups == C_in == C_out): each output channel sees only its own
// input channel, so the 4 channels of a packed word stay in their byte lanes. Invocation = one
// output tile (conv_common.glslh: 4 widths x 4 channels; channel blocks fastest, so a subgroup's
// 16-byte 4W4C tile loads are contiguous).
// Per kernel row it loads the SPAN input words the tile's 4 widths read once into `win`
// (4W4C: TILES whole 16-byte tiles; 4C1W: SPAN words), then for every tap and width adds
// dot(x, mask_i) = x[i] * w[i] to lane i's accumulator, mask_i being the tap's weight word with
// only lane i kept: 4 packed dot products instead of 4 byte extracts and multiplies each.
// The horizontal geometry is specialization constants (KW, SW, DW, PL) so those loops unroll
// and every `win` index is a constant (no local-memory array); vertical geometry stays in the
// push constants. Measured on an H100, 1x96x1024x1024 3x3: 376 us with one scalar load per tap
// and width, before this window.
// Weights: int word (c4 * KH + ky) * KW + kx, byte lane i = channel 4 c4 + i (zero past C).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"
#include "int8_dot.glslh"
#include "conv_common.glslh"

layout(std430, binding = 2) readonly buffer W { int w_words[]; };

layout(constant_id = 3) const int KW = 3;  // kernel width
layout(constant_id = 4) const int SW = 1;  // stride along W
layout(constant_id = 5) const int DW = 1;  // dilation along W
layout(constant_id = 6) const int PL = 1;  // left padding
// Input words one row of the tile reads: widths ox0 SW - PL + w SW + kx DW for w < 4, kx < KW.
const int SPAN = 3 * SW + (KW - 1) * DW + 1;
// ox0 SW is a multiple of 4, so the first of them sits OFF words into its 4W4C tile.
const int OFF = (4 - PL % 4) % 4;
const int TILES = (OFF + SPAN + 3) / 4;

void compute_tile(OutTile t) {
  const int ix_min = t.ox0 * SW - PL;  // the window's first word; win[OFF + j] = word ix_min + j
  const int zp = splat_byte(p.in_zp);
  ivec4 acc[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  for (int ky = 0; ky < p.kh; ++ky) {
    const int iy = t.oy * p.stride_h - p.pad_top + ky * p.dilation_h;
    const bool row_in = iy >= 0 && iy < p.h_in;
    int win[4 * TILES];
#if IN_LAYOUT == LAYOUT_4W4C
    const int tile0 = (ix_min - OFF) / 4;  // exact: ix_min - OFF is a multiple of 4
    const int w4 = div_up(p.w_in, 4);
    const int row_tiles = (t.n * p.h_in + iy) * w4;
    [[unroll]] for (int k = 0; k < TILES; ++k) {
      const int tile = tile0 + k;
      const bool inside = row_in && tile >= 0 && tile < w4;
      const ivec4 v = inside ? in_tiles[(row_tiles + tile) * p.c4_in + t.c4] : ivec4(zp);
      [[unroll]] for (int j = 0; j < 4; ++j) win[4 * k + j] = 4 * tile + j < p.w_in ? v[j] : zp;
    }
#else
    [[unroll]] for (int j = 0; j < SPAN; ++j) {
      win[OFF + j] = row_in ? load_input_word(t.n, t.c4, iy, ix_min + j) : zp;
    }
#endif
    [[unroll]] for (int kx = 0; kx < KW; ++kx) {
      const int wv = w_words[(t.c4 * p.kh + ky) * KW + kx];
      const ivec4 masks = ivec4(wv & 0xFF, wv & 0xFF00, wv & 0xFF0000, wv & int(0xFF000000));
      [[unroll]] for (int w = 0; w < 4; ++w) {
        const int x = win[OFF + w * SW + kx * DW];
        acc[w] += ivec4(dot_int8x4(x, masks.x), dot_int8x4(x, masks.y), dot_int8x4(x, masks.z),
                        dot_int8x4(x, masks.w));
      }
    }
  }
  store_tile(t, acc);
}

// Output rows per invocation (the op picks 4 for large outputs, else 1): consecutive rows share
// KH - 1 input rows (stride 1), which this invocation then finds in L1 instead of another
// fetching them from L2. H100, 1x96x1024x1024 3x3 4W4C: 248-296 us with 1 row, 221-233 with 4;
// but 1x32x112x112 went from 7.9 to 11.6 us (too few invocations left to fill the GPU).
layout(constant_id = 7) const int ROWS = 1;

void main() {
  OutTile first;
  if (!out_tile(first, ROWS)) return;
  for (int r = 0; r < ROWS && first.oy + r < p.h_out; ++r) {
    OutTile t = first;
    t.oy += r;
    compute_tile(t);
  }
}
