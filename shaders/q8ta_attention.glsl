// q8ta_attention: scaled dot-product attention of int8 Q [B, Tq, H*D], K and V [B, Tk, H*D]
// (4H4W int8x4, as the linears write them: head h is the columns h*D .. h*D+D-1, so the head
// split is only which words a workgroup reads), with a float32 additive mask broadcast as
// [Bm, 1, Lm, Tk] (Bm 1 or B, Lm 1 or Tq), written as int8 [B, Tq, H*D] (4H4W). The numerics,
// which runtime/ops/Attention.h and the tests' reference state the same way:
//   a[l, j] = sum over the head's D dims of (q - zp_q) * (k - zp_k)       exact int32
//   s[l, j] = float32(a) * (s_q * s_k * scale) + mask[l, j]                 float32
//   online softmax over the key tiles (flash style, max-subtracted): m the running max of s,
//     p[l, j] = exp(s[l, j] - m), each tile rescaling the earlier sums by exp(m_old - m_new)
//     (a key whose s is -inf has p = 0; a row with every s -inf has output 0)
//   y[l, d] = (sum_j p[l, j] * float32(v[j, d] - zp_v)) * (s_v / sum_j p[l, j])
//   q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)   (the project's rounding)
// exp and the summation order are the device's: the int8 result agrees with an exact
// computation within one step where y * inv_s_out lies next to a rounding boundary.
//
// One workgroup of WG invocations per (block of BQ query rows, head, batch): group (x, y, z) =
// (query block, head, batch). It keeps the block's Q words in shared memory and streams the
// head's K and V through shared memory in tiles of TK keys. Per tile:
//   load:    every invocation copies words of the K and V tiles (keys past Tk: zeros); then
//            invocation t < TK sums key t's int8 values (the zero-point correction)
//   scores:  invocation t computes key j = t % TK against rows t / TK, t / TK + WG / TK, ...
//            (int8 dot products of 4 lanes at a time) and stores s in p_tile
//   softmax: invocation t < BQ owns row t: its running max and sum (in registers), turns the
//            row's s into p in place and leaves the rescale factor of its earlier sums
//   P.V:     invocation t owns row t / 4 and the head's words t % 4, t % 4 + 4, ... (4 dims
//            each) of the output: it rescales its accumulators and adds p * (v - zp_v)
// At the end the same invocation requantizes its words and writes them; rows past Tq inside
// the last 4-row group (the layout's padding) get the output zero point.
#version 450
#extension GL_GOOGLE_include_directive : require
#define VKD_FIXED_LOCAL_SIZE
#define WG 64
#define BQ 16      // query rows per workgroup (WG / 4: four invocations per output row)
#define TK 32      // keys per tile
#define MAX_D4 32  // words of one head's row: D <= 128
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "int8_dot.glslh"

layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = 1) readonly buffer QWords { int q_words[]; };
layout(set = 0, binding = 2) readonly buffer KWords { int k_words[]; };
layout(set = 0, binding = 3) readonly buffer VWords { int v_words[]; };
layout(set = 0, binding = 4) readonly buffer Mask { float mask[]; };

layout(push_constant) uniform Params {
  int tq, tk;          // query rows, key rows
  int w4;              // words of a row: H * D / 4
  int d4;              // words of one head's row: D / 4
  int mask_rows;       // 1 (one mask row for every query) or tq
  int mask_batches;    // 1 (one mask for every batch) or B
  int q_zp, k_zp, v_zp, out_zp;
  float qk_scale;      // s_q * s_k * scale
  float v_scale;       // s_v
  float inv_out_scale;
} p;

shared int q_tile[BQ * MAX_D4];
shared int k_tile[TK * MAX_D4];
shared int v_tile[TK * MAX_D4];
shared float p_tile[BQ * TK];  // the tile's scores s, then its p
shared int q_sum[BQ];          // sum of a query row's int8 values (this head)
shared int k_sum[TK];          // sum of a key row's int8 values (this head)
shared float rescale[BQ];      // exp(m_old - m_new) of the tile
shared float row_total[BQ];    // sum of p of the row, after the last tile

// The word of rows [row, row + 4) of a 4H4W tensor of `rows` rows holding width word `w` (of
// p.w4) in batch `b`: lane = width, the word's position in its 16-byte chunk = row % 4.
int word_at(int b, int rows, int row, int w) {
  return 4 * ((b * div_up(rows, 4) + row / 4) * p.w4 + w) + row % 4;
}

const float kNegInf = -1.0 / 0.0;

void main() {
  const int t = int(gl_LocalInvocationIndex);
  const int q0 = int(gl_WorkGroupID.x) * BQ, head = int(gl_WorkGroupID.y);
  const int b = int(gl_WorkGroupID.z);
  const int d4 = p.d4, w0 = head * d4;
  const int ones = 0x01010101;

  // The block's query words (rows past tq: zeros, never written out).
  for (int i = t; i < BQ * d4; i += WG) {
    const int r = i / d4, w = i % d4;
    q_tile[r * MAX_D4 + w] = q0 + r < p.tq ? q_words[word_at(b, p.tq, q0 + r, w0 + w)] : 0;
  }
  barrier();
  if (t < BQ) {
    int s = 0;
    for (int w = 0; w < d4; ++w) s += dot_int8x4(q_tile[t * MAX_D4 + w], ones);
    q_sum[t] = s;
  }

  // Softmax state of row t (t < BQ) and the P.V accumulators of row t / 4.
  float run_max = kNegInf, run_sum = 0.0;
  const int out_row = t / 4, part = t % 4;
  vec4 acc[MAX_D4 / 4];
  for (int i = 0; i < MAX_D4 / 4; ++i) acc[i] = vec4(0.0);
  const int zz = 4 * d4 * p.q_zp * p.k_zp;  // D * zp_q * zp_k

  for (int k0 = 0; k0 < p.tk; k0 += TK) {
    barrier();  // the previous tile's readers are done
    for (int i = t; i < TK * d4; i += WG) {
      const int j = i / d4, w = i % d4;
      const bool inside = k0 + j < p.tk;
      k_tile[j * MAX_D4 + w] = inside ? k_words[word_at(b, p.tk, k0 + j, w0 + w)] : 0;
      v_tile[j * MAX_D4 + w] = inside ? v_words[word_at(b, p.tk, k0 + j, w0 + w)] : 0;
    }
    barrier();
    if (t < TK) {
      int s = 0;
      for (int w = 0; w < d4; ++w) s += dot_int8x4(k_tile[t * MAX_D4 + w], ones);
      k_sum[t] = s;
    }
    barrier();

    // Scores: key j against rows r0, r0 + WG / TK, ...
    {
      const int j = t % TK, key = k0 + j;
      for (int r = t / TK; r < BQ; r += WG / TK) {
        int a = 0;
        for (int w = 0; w < d4; ++w) a += dot_int8x4(q_tile[r * MAX_D4 + w], k_tile[j * MAX_D4 + w]);
        a += zz - p.k_zp * q_sum[r] - p.q_zp * k_sum[j];
        float s = kNegInf;
        if (key < p.tk) {
          const int mrow = p.mask_rows == 1 ? 0 : min(q0 + r, p.tq - 1);
          const int mb = p.mask_batches == 1 ? 0 : b;
          s = float(a) * p.qk_scale + mask[(mb * p.mask_rows + mrow) * p.tk + key];
        }
        p_tile[r * TK + j] = s;
      }
    }
    barrier();

    // Softmax: row t's running max and sum; s -> p in place.
    if (t < BQ) {
      float tile_max = kNegInf;
      for (int j = 0; j < TK; ++j) tile_max = max(tile_max, p_tile[t * TK + j]);
      const float new_max = max(run_max, tile_max);
      float scale_old = 1.0, sum = 0.0;
      if (new_max != kNegInf) {
        scale_old = run_max == kNegInf ? 0.0 : exp(run_max - new_max);
        for (int j = 0; j < TK; ++j) {
          const float s = p_tile[t * TK + j];
          const float e = s == kNegInf ? 0.0 : exp(s - new_max);
          p_tile[t * TK + j] = e;
          sum += e;
        }
      } else {
        for (int j = 0; j < TK; ++j) p_tile[t * TK + j] = 0.0;
      }
      run_sum = run_sum * scale_old + sum;
      run_max = new_max;
      rescale[t] = scale_old;
      row_total[t] = run_sum;
    }
    barrier();

    // P.V: row out_row, words part, part + 4, ...
    const float f = rescale[out_row];
    for (int i = 0; i < MAX_D4 / 4; ++i) acc[i] *= f;
    const float zv = float(p.v_zp);
    for (int j = 0; j < TK; ++j) {
      const float pj = p_tile[out_row * TK + j];
      for (int i = 0, w = part; w < d4; ++i, w += 4) {
        const int word = v_tile[j * MAX_D4 + w];
        const vec4 v = vec4(lane_of(word, 0), lane_of(word, 1), lane_of(word, 2),
                            lane_of(word, 3)) - zv;
        acc[i] += pj * v;
      }
    }
  }

  // Requantize and write row out_row's words (padding rows of the last 4-row group: zp_out).
  const int row = q0 + out_row;
  if (row >= 4 * div_up(p.tq, 4)) return;
  const float total = row_total[out_row];
  const float k = total > 0.0 ? p.v_scale / total : 0.0;
  const float lo = float(-128 - p.out_zp), hi = float(127 - p.out_zp);
  for (int i = 0, w = part; w < d4; ++i, w += 4) {
    int word = splat_byte(p.out_zp);
    if (row < p.tq) {
      const vec4 y = acc[i] * k * p.inv_out_scale;
      ivec4 q;
      for (int c = 0; c < 4; ++c) q[c] = round_even_small(clamp(y[c], lo, hi)) + p.out_zp;
      word = pack_lanes(q);
    }
    out_words[word_at(b, p.tq, row, w0 + w)] = word;
  }
}
