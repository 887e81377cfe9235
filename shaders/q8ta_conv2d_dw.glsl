// q8ta_conv2d, depthwise route (groups == C_in == C_out): each output channel sees only its own
// input channel, so the 4 channels of a packed word stay in their byte lanes.
// Invocation = one output tile column: 4 TW widths (TW tiles of conv_common.glslh's 4 widths
// x 4 channels) of ROWS consecutive output rows. It walks the input rows those rows read once
// each, top to bottom: per input row it loads the SPAN words the tiles' widths read into `win`
// (4W4C: TILES whole 16-byte tiles; 4C1W: SPAN words), adds that row's taps to every output
// row that reads it, and stores an output row as soon as its last kernel row is in. A product
// is dot(x, mask_i) = x[i] * w[i] into lane i's accumulator, mask_i being the tap's weight word
// with only lane i kept: 4 packed dot products instead of 4 byte extracts and multiplies each.
// The geometry is specialization constants, so every loop unrolls: `win` and `acc` indices
// are constants (registers, no local-memory arrays), only the rows in flight are live
// (KH of them at stride 1), and a row's window is loaded once for all the output rows
// that read it; TW = 2 shares a window's overlap between two tiles (4 tiles loaded for 8
// widths at 3x3 instead of 3 for 4).
// H100, 1x96x1024x1024 3x3 4W4C: 376 us with one scalar load per tap and width; 248-296 us
// with a window per (output row, kernel row); 221-233 us computing 4 output rows per
// invocation that way (each input row loaded 3 times); see docs/BENCHMARKS.md for this one.
// Weights: int word (c4 * KH + ky) * KW + kx, byte lane i = channel 4 c4 + i (zero past C).
//
// ROW_DOTS = 1 (a 4W4C input whose kernel row spans at most 4 widths, (KW - 1) DW + 1 <= 4;
// the host decides, runtime/ops/Conv2d.cpp) takes one dot product per (output width, channel,
// kernel row) instead of one per tap: each 16-byte tile of the window is transposed in
// registers (byte permutes) into 4 words of 4 consecutive widths of one channel, the word a
// width's kernel row reads is funnel-shifted out of two neighbouring ones (one byte picked from
// the untransposed word where a tile contributes only that), and the channel's kernel row is
// packed into one weight word, tap kx in lane kx DW (the other lanes zero). 3x3 stride 1, per
// output and kernel row: 1 dot product and about 1 permute or shift instead of 3 dot products.
// H100, 1x64x256x256 3x3, 2 rows x 2 tiles: 11.20 -> 10.27 us (registers 128 -> 122);
// 1x96x1024x1024: 161.0 -> 140.9 us.
// A 4W4C int8 output tile is stored as one 16-byte word (CONV_TILE_STORE, conv_common.glslh):
// with 4 word stores the same kernels took 0.7-1.0 us more at 1x64x256x256 (2 x 2 row dots
// 12.32) and 20 us more at 1x96x1024x1024 (161.6).
//
// Measured on the way (H100, 1x64x256x256 3x3, 12.9 us with one row and tile): interior
// invocations running a second copy of the body without bounds checks doubled the registers
// (48 -> 86) and took 16.3 us; weights premasked on the host (4 masks per tap loaded as an
// ivec4) on top of that made 4 rows per invocation 6.7x slower (1x96x1024x1024: 1150 us).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"
#include "int8_dot.glslh"
#define CONV_TILE_STORE
#define CONV_STARTED_ACC
#include "conv_common.glslh"

layout(std430, binding = 2) readonly buffer W { int w_words[]; };

// Specialization constants 4.. (3 is the epilogue's, quant_epilogue.glslh).
layout(constant_id = 4) const int KH = 3;     // kernel height and width
layout(constant_id = 5) const int KW = 3;
layout(constant_id = 6) const int SH = 1;     // strides
layout(constant_id = 7) const int SW = 1;
layout(constant_id = 8) const int DH = 1;     // dilations
layout(constant_id = 9) const int DW = 1;
layout(constant_id = 10) const int PL = 1;    // left padding (the top one is a push constant)
layout(constant_id = 11) const int ROWS = 1;  // output rows per invocation
layout(constant_id = 12) const int TW = 1;    // output tiles (4 widths each) per invocation
layout(constant_id = 13) const int ROW_DOTS = 0;  // 1: one dot product per kernel row (above)

const int WIDTHS = 4 * TW;
// Input words one row of the tile reads: widths ox0 SW - PL + w SW + kx DW for w < WIDTHS,
// kx < KW.
const int SPAN = (WIDTHS - 1) * SW + (KW - 1) * DW + 1;
// ox0 SW is a multiple of 4, so the first of them sits OFF words into its 4W4C tile.
const int OFF = (4 - PL % 4) % 4;
const int TILES = (OFF + SPAN + 3) / 4;
// Input rows the ROWS output rows span, from the first row's top tap.
const int IN_ROWS = (ROWS - 1) * SH + (KH - 1) * DH + 1;

// Widths one kernel row spans (ROW_DOTS: at most 4, one word).
const int KSPAN = (KW - 1) * DW + 1;

// The output row (0 .. ROWS - 1) whose kernel row ky reads input row `rel`, or -1.
int row_reading(int rel, int ky) {
  const int d = rel - ky * DH;
  return d >= 0 && d % SH == 0 && d / SH < ROWS ? d / SH : -1;
}


// Byte lane c of word x, in lane 0 of the result.
uint lane_byte(int x, int c) { return (uint(x) >> (8 * c)) & 0xFFu; }

#if IN_LAYOUT == LAYOUT_4W4C
// ROW_DOTS: how many words of window tile k (window words 4 k .. 4 k + 3) the kernel row of
// output width w reads (window words OFF + w SW .. + KSPAN - 1).
int words_read(int k, int w) {
  const int s = OFF + w * SW;
  return max(0, min(s + KSPAN, 4 * k + 4) - max(s, 4 * k));
}
// Whether some width reads two or more words of tile k: such a tile is transposed (below);
// one read word alone (an edge of the window) is picked byte by byte.
bool tile_transposed(int k) {
  bool any = false;
  [[unroll]] for (int w = 0; w < WIDTHS; ++w) any = any || words_read(k, w) >= 2;
  return any;
}
// The 4x4 byte transpose of a 4W4C tile (word j = width j, lane c = channel c): word c holds
// channel c of widths 0 .. 3 in lanes 0 .. 3. Two rounds of pairwise byte and half-word merges
// (8 permutes).
uvec4 transpose_tile(uvec4 v) {
  const uint lo01 = (v.x & 0x00FF00FFu) | ((v.y & 0x00FF00FFu) << 8);  // x0 y0 x2 y2
  const uint hi01 = ((v.x >> 8) & 0x00FF00FFu) | (v.y & 0xFF00FF00u);  // x1 y1 x3 y3
  const uint lo23 = (v.z & 0x00FF00FFu) | ((v.w & 0x00FF00FFu) << 8);
  const uint hi23 = ((v.z >> 8) & 0x00FF00FFu) | (v.w & 0xFF00FF00u);
  return uvec4((lo01 & 0xFFFFu) | (lo23 << 16), (hi01 & 0xFFFFu) | (hi23 << 16),
               (lo01 >> 16) | (lo23 & 0xFFFF0000u), (hi01 >> 16) | (hi23 & 0xFFFF0000u));
}
#endif

void main() {
  OutTile t;
  if (!out_tile(t, ROWS, TW, IN_LAYOUT == LAYOUT_4C1W)) return;
  const int iy0 = t.oy * SH - p.pad_top;  // input row `rel` is iy0 + rel
  const int ix_min = t.ox0 * SW - PL;     // the window's first word; win[OFF + j] = word ix_min + j
  const int zp = splat_byte(p.in_zp);
  // Every tap's 4 single-lane masks, or with ROW_DOTS each channel's kernel rows (tap kx in
  // lane kx DW), made once for all rows and widths; the unused ones fold away.
  ivec4 masks[KH * KW];
  int rows_w[KH][4];
  [[unroll]] for (int ky = 0; ky < KH; ++ky) {
    [[unroll]] for (int c = 0; c < 4; ++c) rows_w[ky][c] = 0;
    [[unroll]] for (int kx = 0; kx < KW; ++kx) {
      const int wk = w_words[(t.c4 * KH + ky) * KW + kx];
      masks[ky * KW + kx] = ivec4(wk & 0xFF, wk & 0xFF00, wk & 0xFF0000, wk & int(0xFF000000));
      [[unroll]] for (int c = 0; c < 4; ++c) {
        rows_w[ky][c] |= int(lane_byte(wk, c) << (8 * kx * DW));
      }
    }
  }
  // Started as store_tile reads them (conv_common.glslh).
  const ivec4 start = accumulator_start(load_channel_word(t.c4));
  ivec4 acc[ROWS][WIDTHS];
  [[unroll]] for (int r = 0; r < ROWS; ++r) {
    [[unroll]] for (int w = 0; w < WIDTHS; ++w) acc[r][w] = start;
  }

  [[unroll]] for (int rel = 0; rel < IN_ROWS; ++rel) {
    bool read = false;  // at stride 2 some rows between the taps are read by no output row
    [[unroll]] for (int ky = 0; ky < KH; ++ky) read = read || row_reading(rel, ky) >= 0;
    if (!read) continue;
    const int iy = iy0 + rel;
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
#if IN_LAYOUT == LAYOUT_4W4C
    if (ROW_DOTS != 0) {
      uvec4 tr[TILES];  // the transposed tiles (tile_transposed), word c = channel c
      [[unroll]] for (int k = 0; k < TILES; ++k) {
        tr[k] = tile_transposed(k) ? transpose_tile(uvec4(win[4 * k], win[4 * k + 1],
                                                          win[4 * k + 2], win[4 * k + 3]))
                                   : uvec4(0);
      }
      [[unroll]] for (int w = 0; w < WIDTHS; ++w) {
        // Window words s .. s + 3 of one channel: the rest of tile k from word s, then the
        // start of tile k + 1 where the kernel row reaches it.
        const int s = OFF + w * SW, k = s / 4, m = s % 4;
        [[unroll]] for (int c = 0; c < 4; ++c) {
          uint x = tile_transposed(k) ? tr[k][c] >> (8 * m) : lane_byte(win[s], c);
          if (m + KSPAN > 4) {
            x |= (tile_transposed(k + 1) ? tr[k + 1][c] : lane_byte(win[4 * k + 4], c))
                 << (32 - 8 * m);
          }
          [[unroll]] for (int ky = 0; ky < KH; ++ky) {
            const int r = row_reading(rel, ky);
            if (r >= 0) acc[r][w][c] += dot_int8x4(int(x), rows_w[ky][c]);
          }
        }
      }
    }
#endif
    [[unroll]] for (int ky = 0; ky < KH; ++ky) {
      const int r = row_reading(rel, ky);
      if (r < 0 || ROW_DOTS != 0) continue;
      [[unroll]] for (int kx = 0; kx < KW; ++kx) {
        const ivec4 m = masks[ky * KW + kx];
        [[unroll]] for (int w = 0; w < WIDTHS; ++w) {
          const int x = win[OFF + w * SW + kx * DW];
          acc[r][w] += dot_int8x4_each(x, m);
        }
      }
    }
    // Output rows whose last kernel row this was are complete: each of their tiles that
    // exists is stored.
    [[unroll]] for (int r = 0; r < ROWS; ++r) {
      if (r * SH + (KH - 1) * DH != rel || t.oy + r >= p.h_out) continue;
      [[unroll]] for (int k = 0; k < TW; ++k) {
        OutTile tile = t;
        tile.oy += r;
        tile.ox0 += 4 * k;
        if (tile.ox0 >= p.w_out) break;
        const ivec4 a[4] = ivec4[4](acc[r][4 * k], acc[r][4 * k + 1], acc[r][4 * k + 2],
                                    acc[r][4 * k + 3]);
        store_tile(tile, a);
      }
    }
  }
}
