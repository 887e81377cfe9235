// q8ta_conv2d_dw_pw / _add: a depthwise q8ta_conv2d and the 1x1 q8ta_conv2d that reads its int8
// output ("mid"), in one dispatch: mid lives only in shared memory, never in device memory.
// The bytes are those of the two convolutions in turn (runtime/ops/DepthwisePointwise.h).
// Workgroup = TP output tiles, tile = 4 consecutive widths of one output row (the 4W4C block
// structure, tiles numbered (n, oy, ox / 4) row-major), with all channels:
//   phase 1: invocation u computes the depthwise tile (tile u / C4, channel block u % C4) and
//     then those WG apart: 4 widths x 4 channels, one masked int8 dot product per tap and width
//     (each product x[i] * w[i] lands in lane i's accumulator), requantized as q8ta_conv2d
//     requantizes the depthwise's output, one ivec4 (4 widths) into mid[tile][c4];
//     neighbouring invocations take neighbouring channel blocks, so their 16-byte input tiles
//     are contiguous.
//   barrier
//   phase 2: invocation u computes the output tile (tile u / N4, output channel block u % N4)
//     and then those WG apart: for each of the C4 mid words of its tile, 16 dot products
//     (4 widths x 4 output channels), then the 1x1's requantization [+ the residual add] and
//     one 16-byte store.
// The depthwise output of a width past W_out (the last tile's padding widths) is computed from
// padding and never read: those output words are the padding word. Lanes of mid past C hold
// whatever the requantization gives: the 1x1's weights are zero there.
// EXPAND = 1 (q8ta_conv2d_pw_dw_pw / _add) also runs the 1x1 expansion that writes the
// depthwise's input (an inverted-residual block in one dispatch): a workgroup then takes TP
// tiles of each of ROWS consecutive output rows (x: the rows' tile blocks, y: image and row
// group), and first
//   phase 0: invocation u computes the expansion's int8 output (requantized exactly as that
//     q8ta_conv2d's output) for 4 widths x 4 channels (window row, width block, channel block;
//     then those WG apart) of the input rows x WIN_W widths the rows' depthwise taps read,
//     into window[]; a width or row outside the input is the expansion output's zero point (the
//     depthwise's padding). Window widths are recomputed by neighbouring workgroups (the halo)
//     and rows by the next row groups: the price of never writing the expanded tensor (at
//     stride 1 and 3x3, KH rows per output row with ROWS 1, (ROWS + 2) / ROWS with more).
//   barrier; phase 1 reads its taps from window[] instead of memory; phase 2 as above.
// Bindings: 0 output (int8 4W4C), 1 input (int8 4W4C), 2 depthwise weights (int word
// (c4 * KH + ky) * KW + kx, byte lane = channel), 3 the 1x1's channel constants
// (quant_epilogue.glslh), 4 the 1x1's weights (ivec4 n4 * C4 + c4, component j = output channel
// 4 n4 + j, byte lane i = mid channel 4 c4 + i), 5 the depthwise's channel constants; with
// EXPAND 6 the expansion's weights (ivec4 c4 * C4_in + ci4, component j = channel 4 c4 + j, byte
// lane i = input channel 4 ci4 + i) and 7 its channel constants; then the residual
// (EPILOGUE_ADD).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"
#include "int8_dot.glslh"

#ifndef EXPAND
#define EXPAND 0
#endif
#define RESIDUAL_BINDING (6 + 2 * EXPAND)
#include "requant.glslh"

layout(std430, binding = 0) writeonly buffer Out { ivec4 out_tiles[]; };
layout(std430, binding = 1) readonly buffer In { ivec4 in_tiles[]; };
layout(std430, binding = 2) readonly buffer DwWeights { int dw_words[]; };
layout(std430, binding = 4) readonly buffer PwWeights { ivec4 pw_blocks[]; };
layout(std430, binding = 5) readonly buffer DwCh { ivec4 dw_ch[]; };

layout(push_constant) uniform Params {
  int batches, h_in, w_in;  // the input [N, C, H, W] (C: C4 words)
  int h_out, w_out;         // the output's (the depthwise's and the 1x1's)
  int c_out, c4_out;        // the 1x1's output channels
  int pad_top;              // the left padding is specialization constant PL
  int x_zp;                 // the depthwise input's zero point (what padding reads)
  float mid_inv_scale;      // mid's int8 value: float32(1 / scale), activation range; zero
  int mid_act_min;          // point in_zp
  int mid_act_max;
  // The 1x1's epilogue, as quant_epilogue.glslh reads it: its input (mid) zero point, its
  // constants' channels and its output.
  int in_zp;
  int n_pad;
  int out_zp;
  float inv_out_scale;
  int act_min;
  int act_max;
#if EXPAND
  int c4_x;           // the input's channel blocks (the expansion's K / 4)
  int x_in_zp;        // the input's zero point
  float e_inv_scale;  // the expansion's int8 output: float32(1 / scale), activation range;
  int e_act_min;      // zero point x_zp
  int e_act_max;
#endif
#if EPILOGUE_ADD
  BinaryQuant add;  // a = the 1x1's int8 value, b = the residual
#endif
} p;

#include "quant_epilogue.glslh"

// Specialization constants 4.. (3 is the epilogue's).
layout(constant_id = 4) const int KH = 3;  // the depthwise kernel, strides, dilations
layout(constant_id = 5) const int KW = 3;
layout(constant_id = 6) const int SH = 1;
layout(constant_id = 7) const int SW = 1;
layout(constant_id = 8) const int DH = 1;
layout(constant_id = 9) const int DW = 1;
layout(constant_id = 10) const int PL = 1;  // left padding
layout(constant_id = 11) const int C4 = 1;  // mid channel blocks (the input's)
layout(constant_id = 12) const int TP = 1;  // tiles per workgroup (per output row with EXPAND)
// With EXPAND: consecutive output rows of one image per workgroup, each TP tiles, which share
// the window rows their taps read (1 without EXPAND).
layout(constant_id = 13) const int ROWS = 1;

// Input words one depthwise tile reads along a row: widths ox0 SW - PL + w SW + kx DW, w < 4,
// kx < KW; ox0 SW is a multiple of 4, so the first sits OFF words into its 4W4C tile.
const int SPAN = 3 * SW + (KW - 1) * DW + 1;
const int OFF = (4 - PL % 4) % 4;
const int TILES = (OFF + SPAN + 3) / 4;

shared ivec4 mid[ROWS * TP * C4];

// Tile t (< ROWS TP) of this workgroup: its image, output row and first width; false past the
// output. With EXPAND tile t is tile t % TP of the workgroup's row t / TP.
bool tile_position(int t, out int n, out int oy, out int ox0) {
  const int w4 = div_up(p.w_out, 4);
#if EXPAND
  const int groups_h = div_up(p.h_out, ROWS);
  const int ox4 = TP * int(gl_WorkGroupID.x) + t % TP;
  n = int(gl_WorkGroupID.y) / groups_h;
  oy = ROWS * (int(gl_WorkGroupID.y) % groups_h) + t / TP;
  if (ox4 >= w4 || n >= p.batches || oy >= p.h_out) return false;
  ox0 = 4 * ox4;
#else
  const int tile = TP * int(gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y) + t;
  if (tile >= p.batches * p.h_out * w4) return false;
  ox0 = 4 * (tile % w4);
  oy = (tile / w4) % p.h_out;
  n = tile / (w4 * p.h_out);
#endif
  return true;
}

#if EXPAND
layout(std430, binding = 6) readonly buffer ExpandWeights { ivec4 e_blocks[]; };
layout(std430, binding = 7) readonly buffer ExpandCh { ivec4 e_ch[]; };

// The depthwise input one workgroup's ROWS rows of TP tiles read: WIN_ROWS input rows from the
// first output row's top tap (row r = input row oy0 SH - pad_top + r), of WIN_W widths from the
// first tile's ox0 SW - PL, C4 words each. Rows no tap reads (between dilated kernel rows) are
// left uncomputed.
const int WIN_W = (4 * TP - 1) * SW + (KW - 1) * DW + 1;
const int WIN_BLOCKS = (WIN_W + 3) / 4;
const int WIN_ROWS = (ROWS - 1) * SH + (KH - 1) * DH + 1;
shared int window[WIN_ROWS * WIN_W * C4];

// Whether some output row rr < ROWS reads window row r through some kernel row.
bool window_row_read(int r) {
  bool read = false;
  [[unroll]] for (int rr = 0; rr < ROWS; ++rr) {
    [[unroll]] for (int ky = 0; ky < KH; ++ky) read = read || rr * SH + ky * DH == r;
  }
  return read;
}

// Phase 0 for window row wr (input row iy), window widths 4 jb .. + 3 and channel block c4 of
// the row (first width ix0): the expansion's int8 words there, or its zero point outside the
// input.
void expand_block(int n, int iy, int ix0, int wr, int jb, int c4) {
  const int w4 = div_up(p.w_in, 4);
  const bool row_in = iy >= 0 && iy < p.h_in;
  bool inside[4];
  int at[4];  // the input tile of each width (clamped: an outside width's result is unused)
  [[unroll]] for (int w = 0; w < 4; ++w) {
    const int ix = ix0 + 4 * jb + w;
    inside[w] = row_in && ix >= 0 && ix < p.w_in;
    at[w] = inside[w] ? ((n * p.h_in + iy) * w4 + ix / 4) * p.c4_x : 0;
  }
  ivec4 acc[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  for (int ci4 = 0; ci4 < p.c4_x; ++ci4) {
    const ivec4 wv = e_blocks[c4 * p.c4_x + ci4];
    [[unroll]] for (int w = 0; w < 4; ++w) {
      const int x = in_tiles[at[w] + ci4][(ix0 + 4 * jb + w) & 3];
      acc[w] += dot_int8x4_each(x, wv);
    }
  }
  const ChannelWord k = channel_word(e_ch[c4], e_ch[C4 + c4], e_ch[2 * C4 + c4], p.x_in_zp);
  const RequantTo q = RequantTo(p.e_inv_scale, p.x_zp, p.e_act_min, p.e_act_max);
  [[unroll]] for (int w = 0; w < 4; ++w) {
    const int j = 4 * jb + w;
    if (j < WIN_W) {
      window[(wr * WIN_W + j) * C4 + c4] =
          inside[w] ? requantize_word(acc[w], k, q) : splat_byte(p.x_zp);
    }
  }
}
#endif

// The depthwise's requantized int8 output at widths ox0 .. ox0 + 3 of row oy (this workgroup's
// tile t), channels 4 c4 .. + 3: one word per width (q8ta_conv2d_dw.glsl's products and store,
// unfused). Its input words come from memory, or with EXPAND from the workgroup's window (the
// rows of output row t / TP, the widths of tile t % TP).
ivec4 depthwise_tile(int n, int oy, int ox0, int t, int c4) {
  ivec4 acc[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  [[unroll]] for (int ky = 0; ky < KH; ++ky) {
#if EXPAND
    // win[OFF + j] = window width 4 (t % TP) SW + j of the row kernel row ky reads.
    const int wr = (t / TP) * SH + ky * DH;
    int win[OFF + SPAN];
    [[unroll]] for (int j = 0; j < SPAN; ++j) {
      win[OFF + j] = window[(wr * WIN_W + 4 * (t % TP) * SW + j) * C4 + c4];
    }
#else
    const int zp = splat_byte(p.x_zp);
    const int w4 = div_up(p.w_in, 4);
    const int tile0 = (ox0 * SW - PL - OFF) / 4;  // exact: ox0 SW - PL - OFF is a multiple of 4
    const int iy = oy * SH - p.pad_top + ky * DH;
    const bool row_in = iy >= 0 && iy < p.h_in;
    int win[4 * TILES];
    [[unroll]] for (int k = 0; k < TILES; ++k) {
      const int tile = tile0 + k;
      const bool inside = row_in && tile >= 0 && tile < w4;
      const ivec4 v = inside ? in_tiles[((n * p.h_in + iy) * w4 + tile) * C4 + c4] : ivec4(zp);
      [[unroll]] for (int j = 0; j < 4; ++j) win[4 * k + j] = 4 * tile + j < p.w_in ? v[j] : zp;
    }
#endif
    [[unroll]] for (int kx = 0; kx < KW; ++kx) {
      const int wk = dw_words[(c4 * KH + ky) * KW + kx];
      const ivec4 m = ivec4(wk & 0xFF, wk & 0xFF00, wk & 0xFF0000, wk & int(0xFF000000));
      [[unroll]] for (int w = 0; w < 4; ++w) {
        const int x = win[OFF + w * SW + kx * DW];
        acc[w] += dot_int8x4_each(x, m);
      }
    }
  }
  const ChannelWord k = channel_word(dw_ch[c4], dw_ch[C4 + c4], dw_ch[2 * C4 + c4], p.x_zp);
  const RequantTo q = RequantTo(p.mid_inv_scale, p.in_zp, p.mid_act_min, p.mid_act_max);
  return ivec4(requantize_word(acc[0], k, q), requantize_word(acc[1], k, q),
               requantize_word(acc[2], k, q), requantize_word(acc[3], k, q));
}

void main() {
  const int WG = int(gl_WorkGroupSize.x);
  const int lid = int(gl_LocalInvocationID.x);
  int n, oy, ox0;

#if EXPAND
  if (tile_position(0, n, oy, ox0)) {
    const int ix0 = ox0 * SW - PL;
    for (int u = lid; u < WIN_ROWS * WIN_BLOCKS * C4; u += WG) {
      const int c4 = u % C4, jb = (u / C4) % WIN_BLOCKS, wr = u / (C4 * WIN_BLOCKS);
      if (window_row_read(wr)) expand_block(n, oy * SH - p.pad_top + wr, ix0, wr, jb, c4);
    }
  }
  barrier();
#endif

  for (int u = lid; u < ROWS * TP * C4; u += WG) {
    const int t = u / C4;
    if (tile_position(t, n, oy, ox0)) mid[u] = depthwise_tile(n, oy, ox0, t, u % C4);
  }
  barrier();

  for (int u = lid; u < ROWS * TP * p.c4_out; u += WG) {
    const int t = u / p.c4_out, n4 = u % p.c4_out;
    if (!tile_position(t, n, oy, ox0)) continue;
    ivec4 acc[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
    for (int c4 = 0; c4 < C4; ++c4) {
      const ivec4 x = mid[t * C4 + c4];
      const ivec4 wv = pw_blocks[n4 * C4 + c4];
      [[unroll]] for (int w = 0; w < 4; ++w) {
        acc[w] += dot_int8x4_each(x[w], wv);
      }
    }
    const ChannelWord k = load_channel_word(n4);
    const int index = 4 * (((n * p.h_out + oy) * div_up(p.w_out, 4) + ox0 / 4) * p.c4_out + n4);
    const int real = min(p.c_out - 4 * n4, 4);
    ivec4 words;
    [[unroll]] for (int w = 0; w < 4; ++w) {
      words[w] = ox0 + w < p.w_out ? epilogue_word(acc[w], k, real, index + w) : padding_word();
    }
    out_tiles[index / 4] = words;
  }
}
