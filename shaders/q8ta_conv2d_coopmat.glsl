// q8ta_conv2d straight from its 4W4C input on int8 cooperative matrices: the Im2col route's
// "window" form (runtime/ops/Conv2d.cpp). The GEMM is the im2col forms' own (rows = output
// pixels in 4W4C order, row r of image row R = n H_out + oy being width r % (4 W4_out); K word
// k4 = (ky KW + kx) C4_in + ci4; the im2col weight matrix, linear_common.glslh's bindings,
// push constants with p.conv, and epilogue), but the input is never gathered block by block:
// per kernel row the workgroup copies the input pixels its output pixels read into shared
// memory once, as [pixel][channel word], and each tap's A fragments are strided loads at that
// tap's offset into this window (row m of fragment i = window pixel (16 i + m) SW + kx DW). A
// pixel's channels are read from memory once per kernel row instead of once per tap, with no
// per-block index arithmetic.
//
// Workgroup: WARPS_M x WARPS_N = 2 x 2 subgroups of 32. The output pixels of every image row
// (its 4 W4_out padded widths) are cut into segments of TM = 16 FM = 64 pixels; workgroup y
// takes segments 2 y and 2 y + 1 in raster order (image row, segment), workgroup x the
// channels 64 x .. 64 x + 63. Subgroup (sm, sn) multiplies segment sm with channels
// 32 sn .. + 31: FM x FN = 4 x 2 accumulator fragments (64 registers).
// K is walked in chunks (ky, channel chunk cc of CW = 8 words, tap group g of WIN_KW taps):
// window = input row iy = oy SH - pad_top + ky DH, pixels ix_min + q for q < SEG with
// ix_min = ox0 SW - pad_left + g WIN_KW DW (the zero point outside the image, exactly the
// im2col matrix's padding), and the chunk's weights [tap][channel][word] (zero past C_in and
// past KW). Chunks c + 1 and c + 2 are in flight (shared buffer and registers) while chunk c
// is multiplied out of shared memory, one barrier per chunk.
// SW, DW and WIN_KW = min(KW, 3) are specialization constants (SEG, the window's size, is
// then a constant: registers and shared memory sized exactly); everything else is a push
// constant.
// Variants: OUT_DTYPE (0 int8, 2 int8 + residual add; linear_common.glslh), 4W4C input only.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define VKD_FIXED_LOCAL_SIZE

#define WARPS_M 2
#define WARPS_N 2
#define FM 4
#define FN 2
#define NT (32 * WARPS_M * WARPS_N)  // invocations
layout(local_size_x = NT, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "coopmat_nv.glslh"
#include "linear_common.glslh"  // with IM2COL_IN = LAYOUT_4W4C: im2col_tiles, p.conv

layout(constant_id = 7) const int WIN_SW = 1;  // stride_w
layout(constant_id = 8) const int WIN_DW = 1;  // dilation_w
layout(constant_id = 9) const int WIN_KW = 3;  // taps per group: min(KW, 3)

const int TM = 16 * FM;      // pixels per segment
const int BN = 32 * WARPS_N; // channels per workgroup
const int CW = 8;            // channel words per chunk: one 32-deep step per tap
const int PIX = CW + 4;      // shared words per pixel: 16-byte aligned, and the +4 spreads the
                             // rows of a fragment read over the banks
// Window pixels a segment's taps of one group read, and the 4W4C tiles they can touch.
const int SEG = (TM - 1) * WIN_SW + (WIN_KW - 1) * WIN_DW + 1;
const int SEG_TILES = (SEG + 3) / 4 + 1;
const int IN_PER = (SEG_TILES * CW + NT - 1) / NT;  // 16-byte loads per segment and invocation
const int W_TOTAL = WIN_KW * (BN / 4) * CW;
const int W_PER = (W_TOTAL + NT - 1) / NT;
const int WIN_WORDS = WARPS_M * SEG * PIX;  // one buffer of each
const int W_WORDS = WIN_KW * BN * PIX;

// Two buffers of [segment][pixel][word] and of [tap][channel][word]: chunk c is multiplied out
// of buffer c % 2 while chunk c + 1 is stored into the other (one barrier per chunk, as in
// q8ta_linear_coopmat.glsl). The windows double as the epilogue's scratch (256 words per
// subgroup).
shared uvec4 win_sh[2 * WIN_WORDS / 4];
shared uvec4 w_sh[2 * W_WORDS / 4];
#define SH(arr, w) arr[(w) >> 2][(w) & 3]
#define EPILOGUE_SCRATCH win_sh
#include "coopmat_epilogue.glslh"

// Where a segment of the workgroup lies: image n, output row oy (image row = n H_out + oy),
// first pixel ox0; `valid` false past the last segment.
struct Segment {
  int n, oy, ox0;
  bool valid;
};
Segment segment(int s) {
  const int w4_out = div_up(p.conv.w_out, 4), per_row = div_up(4 * w4_out, TM);
  const int row = s / per_row;
  return Segment(row / p.conv.h_out, row % p.conv.h_out, TM * (s % per_row),
                 row < p.row_blocks / w4_out);
}

// Chunk c of K: (ky, channel chunk, tap group), tap groups fastest.
struct Chunk {
  int ky, cc, g;
};
Chunk chunk(int c, int groups, int chunks_c) {
  return Chunk(c / (groups * chunks_c), (c / groups) % chunks_c, c % groups);
}

// The two chunks in flight (set c % 2): their 16-byte loads, held until store_chunk.
ivec4 in_loads[2][WARPS_M][IN_PER];
ivec4 w_loads[2][W_PER];

// This subgroup's segment (segment sm of the workgroup), for the epilogue's output_place: set
// once by main, not indexed out of segs[] by the subgroup id.
Segment own_segment;

// The first input width of segment `s`'s window for chunk `k`.
int window_x(Segment s, Chunk k) {
  return s.ox0 * WIN_SW - p.conv.pad_left + k.g * WIN_KW * WIN_DW;
}

// Load i of a segment's window for invocation lid: window tile (idx / CW, counted from the
// first tile the window touches) x channel word idx % CW (CW consecutive 16-byte tiles).
// Weight load idx: tap, channel group, word.
void load_chunk(int set, Chunk k, Segment segs[WARPS_M], int n4_0, int lid) {
  const int w4_in = div_up(p.conv.w_in, 4), c4_in = p.conv.c4_in;
  const int zw = splat_byte(p.in_zp);
  const int iy_k = k.ky * p.conv.dilation_h - p.conv.pad_top;
  [[unroll]] for (int m = 0; m < WARPS_M; ++m) {
    const Segment s = segs[m];
    const int iy = s.oy * p.conv.stride_h + iy_k;
    const bool row_in = s.valid && iy >= 0 && iy < p.conv.h_in;
    const int row_tiles = (s.n * p.conv.h_in + iy) * w4_in;
    [[unroll]] for (int i = 0; i < IN_PER; ++i) {
      const int idx = lid + NT * i;
      const int tile = (window_x(s, k) >> 2) + idx / CW, ci4 = k.cc * CW + idx % CW;  // floor
      const bool load = row_in && idx < SEG_TILES * CW && tile >= 0 && tile < w4_in &&
                        ci4 < c4_in;
      in_loads[set][m][i] = load ? im2col_tiles[(row_tiles + tile) * c4_in + ci4] : ivec4(zw);
    }
  }
  [[unroll]] for (int i = 0; i < W_PER; ++i) {
    const int idx = lid + NT * i;
    const int tap = idx / ((BN / 4) * CW), n4 = n4_0 + (idx / CW) % (BN / 4);
    const int kx = k.g * WIN_KW + tap, ci4 = k.cc * CW + idx % CW;
    const bool load = (W_TOTAL % NT == 0 || idx < W_TOTAL) && kx < p.conv.kw && ci4 < c4_in;
    w_loads[set][i] = load ? load_weight(n4, (k.ky * p.conv.kw + kx) * c4_in + ci4) : ivec4(0);
  }
}

// Stores load set `set` into shared buffer `set`: a tile's 4 words are 4 window pixels (those
// inside the window; pixels outside the image's widths hold the zero point), a weight block's
// 4 words 4 channels.
void store_chunk(int set, Chunk k, Segment segs[WARPS_M], int lid) {
  const int zw = splat_byte(p.in_zp);
  [[unroll]] for (int m = 0; m < WARPS_M; ++m) {
    const int x0 = window_x(segs[m], k);
    [[unroll]] for (int i = 0; i < IN_PER; ++i) {
      const int idx = lid + NT * i;
      if (SEG_TILES * CW % NT != 0 && idx >= SEG_TILES * CW) continue;
      const int first = 4 * ((x0 >> 2) + idx / CW);  // the tile's first width
      [[unroll]] for (int j = 0; j < 4; ++j) {
        const int q = first + j - x0;
        const bool inside = first + j >= 0 && first + j < p.conv.w_in;
        if (q >= 0 && q < SEG) {
          SH(win_sh, set * WIN_WORDS + (m * SEG + q) * PIX + idx % CW) =
              inside ? in_loads[set][m][i][j] : zw;
        }
      }
    }
  }
  [[unroll]] for (int i = 0; i < W_PER; ++i) {
    const int idx = lid + NT * i;
    if (W_TOTAL % NT != 0 && idx >= W_TOTAL) continue;
    const int tap = idx / ((BN / 4) * CW), c0 = 4 * ((idx / CW) % (BN / 4)), word = idx % CW;
    [[unroll]] for (int c = 0; c < 4; ++c) {
      SH(w_sh, set * W_WORDS + (tap * BN + c0 + c) * PIX + word) = w_loads[set][i][c];
    }
  }
}

// The products of the chunk in buffer `set` for subgroup (sm, sn): one 32-deep step per tap of
// the group that exists.
void multiply_chunk(int set, Chunk k, int sm, int sn) {
  [[unroll]] for (int tap = 0; tap < WIN_KW; ++tap) {
    if (k.g * WIN_KW + tap >= p.conv.kw) break;
    MatA fa[FM];
    MatB fb[FN];
    [[unroll]] for (int i = 0; i < FM; ++i) {
      const int pixel = 16 * i * WIN_SW + tap * WIN_DW;
      coopMatLoadNV(fa[i], win_sh, (set * WIN_WORDS + (sm * SEG + pixel) * PIX) / 4,
                    WIN_SW * PIX / 4, false);
    }
    [[unroll]] for (int j = 0; j < FN; ++j) {
      // B is K x N; [channel][word] is its column-major form.
      coopMatLoadNV(fb[j], w_sh, (set * W_WORDS + (tap * BN + 32 * sn + 16 * j) * PIX) / 4,
                    PIX / 4, true);
    }
    [[unroll]] for (int i = 0; i < FM; ++i) {
      [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
  }
}

void main() {
  const int lid = int(gl_LocalInvocationIndex);
  const int sg = int(gl_SubgroupID);
  const int sm = sg % WARPS_M, sn = sg / WARPS_M;
  const int n4_0 = int(gl_WorkGroupID.x) * (BN / 4);
  Segment segs[WARPS_M];
  [[unroll]] for (int m = 0; m < WARPS_M; ++m) segs[m] = segment(WARPS_M * int(gl_WorkGroupID.y) + m);
  own_segment = segment(WARPS_M * int(gl_WorkGroupID.y) + sm);

  [[unroll]] for (int i = 0; i < FM; ++i) {
    [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = MatC(0);
  }

  const int groups = div_up(p.conv.kw, WIN_KW), chunks_c = div_up(p.conv.c4_in, CW);
  const int chunks = (p.k4 / (p.conv.kw * p.conv.c4_in)) * chunks_c * groups;  // KH of them
  load_chunk(0, chunk(0, groups, chunks_c), segs, n4_0, lid);
  if (chunks > 1) load_chunk(1, chunk(1, groups, chunks_c), segs, n4_0, lid);
  for (int c = 0; c < chunks; c += 2) {
    // The barrier after storing chunk c also orders every read of its buffer (chunk c - 2)
    // before the stores: each invocation multiplied chunk c - 2 before the last barrier.
    const Chunk even = chunk(c, groups, chunks_c);
    store_chunk(0, even, segs, lid);
    barrier();
    if (c + 2 < chunks) load_chunk(0, chunk(c + 2, groups, chunks_c), segs, n4_0, lid);
    multiply_chunk(0, even, sm, sn);
    if (c + 1 >= chunks) break;
    const Chunk odd = chunk(c + 1, groups, chunks_c);
    store_chunk(1, odd, segs, lid);
    barrier();
    if (c + 3 < chunks) load_chunk(1, chunk(c + 3, groups, chunks_c), segs, n4_0, lid);
    multiply_chunk(1, odd, sm, sn);
  }

  STORE_ACCUMULATORS();
}

// Fragment (i, j) of subgroup (sm, sn): pixels ox0 + 16 i .. of segment sm, channels 32 sn +
// 16 j ..; pixels past the padded width (the last segment of a row) are not stored, padded
// widths get the zero point (store_output).
ivec2 output_place(int i, int j, ivec2 slot) {
  const int sn = int(gl_SubgroupID) / WARPS_M;
  const Segment s = own_segment;
  const int w4_out = div_up(p.conv.w_out, 4), ox = s.ox0 + 16 * i + slot.x;
  const int g4 = int(gl_WorkGroupID.x) * (BN / 4) + (32 * sn + 16 * j + slot.y) / 4;
  const bool stored = s.valid && ox < 4 * w4_out;
  return ivec2(stored ? (s.n * p.conv.h_out + s.oy) * 4 * w4_out + ox : -1, g4);
}
