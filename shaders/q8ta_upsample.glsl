// q8ta_upsample_nearest2d (KIND 0: bytes copied, 1: requantized) and q8ta_upsample_bilinear2d
// (KIND 2) on one packed int8x4 layout (INT8_LAYOUT; input and output share it). Where each
// output row / column reads comes from binding 2, computed on the CPU from PyTorch's rules
// (partitioner_schema/Interpolation.h): nearest: the source index of each output row, then of each
// output column; bilinear: (i0, i1, w1, 0) of each output row, then of each output column, w1
// the weight of i1 in units of 2^-WEIGHT_BITS (i0's is 2^WEIGHT_BITS - w1). Each list is padded
// to a multiple of 4 entries, so 4 consecutive entries load as one 16-byte read.
//
// Each invocation computes one 16-byte chunk (4 consecutive words) of the output. 4W4C: the 4
// widths of one pixel row and channel block; 4H4W: 4 rows of 4 widths of one channel; both read
// their taps once per chunk. 4C1W: 4 consecutive words of a row (they may cross rows), each
// decoded on its own (int8x4_gather.glslh). A 4W4C / 4C1W word is 4 channels of one pixel: its
// source words are whole input words (the lanes share the taps); a 4H4W word is 4 widths, and
// each lane reads its own bytes.
//
// Arithmetic per element (runtime/ops/Upsample.h defines it; the test reference repeats it):
//   nearest, same parameters: the byte itself;
//   nearest, requantized: y = float32(q - zp_in) * s_in, then the requantizing store below;
//   bilinear, with d = q - zp_in in [-255, 255] at the four taps and K = WEIGHT_BITS, exactly:
//     x_a = d_a0 * 2^K + w1_w * (d_a1 - d_a0)            (row a = 0, 1; |x_a| <= 255 * 2^K)
//     acc = x_0 * 2^K + w1_h * (x_1 - x_0)               (|acc| <= 255 * 2^2K)
//     f   = float32(acc) correctly rounded: K <= 6: acc < 2^22, exact through the mantissa;
//           K <= 11: int32, one conversion; else 64-bit (imulExtended), acc = H * 2^24 + L
//           with |H| <= 255 * 2^16 and 0 <= L < 2^24 exact, so float(H) * 2^24 + float(L)
//           rounds once
//     y   = f * s_in_K, s_in_K = float32(s_in) * 2^-2K (exact)
//   The runtime gives the weights with the fewest bits that hold them exactly (K = 2 for a
//   scale of 2: 0.25, 0.75), and float32(acc) * 2^-2K is the same float whatever K, so every
//   path computes the 20-bit definition of runtime/ops/Upsample.h bit for bit.
//   store: clamp(roundEven(float32(y * inv_s_out)) + zp_out, -128, 127) (every op `precise`).
// Padding (4W4C widths past W, lanes past C; 4H4W rows past H, lanes past W) holds zp_out.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "int8x4_chunk.glslh"
#if INT8_LAYOUT == LAYOUT_4C1W
#define GATHER_BY_WORD
#endif
#include "int8x4_gather.glslh"

// The geometry as specialization constants: every division below is by a constant.
layout(constant_id = 3) const int C = 1;       // channels (input and output)
layout(constant_id = 4) const int OUT_H = 1;
layout(constant_id = 5) const int OUT_W = 1;
layout(constant_id = 6) const int IN_H = 1;
layout(constant_id = 7) const int IN_W = 1;
layout(constant_id = 8) const int WEIGHT_BITS = 20;  // bilinear: K above

layout(set = 0, binding = 1) readonly buffer InWords { int in_words[]; };
layout(set = 0, binding = 2) readonly buffer Taps { int taps[]; };
layout(set = 0, binding = 2) readonly buffer Taps4 { ivec4 taps4[]; };

layout(push_constant) uniform Params {
  int chunk_count;     // ceil(output words / 4): invocations that do work
  int word_count;      // output words
  int batches;         // N
  int in_zp;
  int out_zp;
  float in_scale;      // s_in; bilinear: s_in * 2^-2K
  float inv_out_scale; // float32(1 / s_out)
  float t_lo;          // float(-128 - zp_out)
  float t_hi;          // float(127 - zp_out)
} p;

const int C4 = (C + 3) / 4;
const int OUT_H4 = (OUT_H + 3) / 4, OUT_W4 = (OUT_W + 3) / 4;
const int IN_H4 = (IN_H + 3) / 4, IN_W4 = (IN_W + 3) / 4;
// Where the column list starts: int entries (nearest) or ivec4 entries (bilinear).
const int COLS = 4 * OUT_H4;

// The requantizing store of one element whose dequantized value is y.
int store_byte(float y) {
  return requantized_byte(y, p.inv_out_scale, p.t_lo, p.t_hi, p.out_zp);
}

// One bilinear element from its four int8 taps (row a, column b: qab) and the weights of the
// second row and column (the arithmetic in the header).
int bilinear_byte(int q00, int q01, int q10, int q11, int w1_w, int w1_h) {
  const int d00 = q00 - p.in_zp, d01 = q01 - p.in_zp, d10 = q10 - p.in_zp, d11 = q11 - p.in_zp;
  const int x0 = (d00 << WEIGHT_BITS) + w1_w * (d01 - d00);
  const int x1 = (d10 << WEIGHT_BITS) + w1_w * (d11 - d10);
  precise float f;
  if (WEIGHT_BITS <= 11) {
    const int acc = (x0 << WEIGHT_BITS) + w1_h * (x1 - x0);
    f = WEIGHT_BITS <= 6 ? small_int_to_float(acc) : float(acc);
  } else {
    int hi, lo;
    imulExtended(w1_h, x1 - x0, hi, lo);
    uint carry;
    const uint low = uaddCarry(uint(lo), uint(x0) << WEIGHT_BITS, carry);
    hi += (x0 >> (32 - WEIGHT_BITS)) + int(carry);  // x0 * 2^K, high word
    const int high24 = (hi << 8) | int(low >> 24);  // acc >> 24 (floor)
    const int low24 = int(low & 0xFFFFFFu);         // acc mod 2^24
    f = float(high24) * 16777216.0 + float(low24);
  }
  precise float y = f * p.in_scale;
  return store_byte(y);
}

// An input word whose 4 lanes go through the nearest store (copied or requantized).
int nearest_word(int word) {
#if KIND == 1
  ivec4 b;
  for (int j = 0; j < 4; ++j) {
    b[j] = store_byte(small_int_to_float(lane_of(word, j) - p.in_zp) * p.in_scale);
  }
  return pack_lanes(b);
#else
  return word;
#endif
}

#if INT8_LAYOUT == LAYOUT_4H4W
// Input element (n, c, h, w), sign-extended.
int input_byte(int n, int c, int h, int w) {
  return lane_of(in_words[4 * (((n * C + c) * IN_H4 + h / 4) * IN_W4 + w / 4) + h % 4], w % 4);
}

// Chunk k = ((n * C + c) * H4 + h4) * W4 + w4: rows 4 h4 + j (word j) of widths 4 w4 + l
// (lane l). The row and column taps are shared by the 16 elements.
ivec4 chunk_value(int k) {
  const int w4 = k % OUT_W4, h4 = (k / OUT_W4) % OUT_H4;
  const int plane = k / (OUT_W4 * OUT_H4), c = plane % C, n = plane / C;
  const int lanes = min(4, OUT_W - 4 * w4);
  ivec4 words;
#if KIND == 2
  ivec4 th[4], tw[4];
  for (int i = 0; i < 4; ++i) {
    th[i] = taps4[4 * h4 + i];
    tw[i] = taps4[COLS + 4 * w4 + i];
  }
  for (int j = 0; j < 4; ++j) {
    ivec4 b;
    for (int l = 0; l < 4; ++l) {
      b[l] = bilinear_byte(input_byte(n, c, th[j].x, tw[l].x), input_byte(n, c, th[j].x, tw[l].y),
                           input_byte(n, c, th[j].y, tw[l].x), input_byte(n, c, th[j].y, tw[l].y),
                           tw[l].z, th[j].z);
    }
    words[j] = pack_lanes(b);
  }
#else
  const ivec4 rows = taps4[h4], cols = taps4[COLS / 4 + w4];
  for (int j = 0; j < 4; ++j) {
    ivec4 b;
    for (int l = 0; l < 4; ++l) b[l] = input_byte(n, c, rows[j], cols[l]);
    words[j] = nearest_word(pack_lanes(b));
  }
#endif
  for (int j = 0; j < 4; ++j) {
    words[j] = 4 * h4 + j < OUT_H ? pad_lanes(words[j], lanes, p.out_zp) : splat_byte(p.out_zp);
  }
  return words;
}
#else
// The input word of channels 4 c4 .. + 3 at pixel (h, w) of image n.
int input_word(int n, int c4, int h, int w) {
#if INT8_LAYOUT == LAYOUT_4W4C
  return in_words[4 * (((n * IN_H + h) * IN_W4 + w / 4) * C4 + c4) + w % 4];
#else
  return in_words[((n * IN_H + h) * C4 + c4) * IN_W + w];
#endif
}

#if KIND == 2
// Output word of channels 4 c4 .. + 3 at the pixel whose row and column taps are th, tw.
int bilinear_word(int n, int c4, ivec4 th, ivec4 tw) {
  const int a = input_word(n, c4, th.x, tw.x), b = input_word(n, c4, th.x, tw.y);
  const int c = input_word(n, c4, th.y, tw.x), d = input_word(n, c4, th.y, tw.y);
  ivec4 v;
  for (int j = 0; j < 4; ++j) {
    v[j] = bilinear_byte(lane_of(a, j), lane_of(b, j), lane_of(c, j), lane_of(d, j), tw.z, th.z);
  }
  return pack_lanes(v);
}
#endif

#if INT8_LAYOUT == LAYOUT_4C1W
// Word q = ((n * H + h) * C4 + c4) * W + w: channels 4 c4 .. + 3 at (n, h, w), decoded on its own.
int output_word(int q, int valid) {
  const int w = q % OUT_W, c4 = (q / OUT_W) % C4, row = q / (OUT_W * C4);
  const int h = row % OUT_H, n = row / OUT_H;
#if KIND == 2
  const int word = bilinear_word(n, c4, taps4[h], taps4[COLS + w]);
#else
  const int word = nearest_word(input_word(n, c4, taps[h], taps[COLS + w]));
#endif
  return pad_lanes(word, valid, p.out_zp);
}
#else
// Chunk k = ((n * H + h) * W4 + w4) * C4 + c4: widths 4 w4 + j (word j) of one row; the row's
// taps are read once.
ivec4 chunk_value(int k) {
  const int c4 = k % C4, w4 = (k / C4) % OUT_W4, row = k / (C4 * OUT_W4);
  const int h = row % OUT_H, n = row / OUT_H;
  const int lanes = min(4, C - 4 * c4);
  ivec4 words;
#if KIND == 2
  const ivec4 th = taps4[h];
  for (int j = 0; j < 4; ++j) words[j] = bilinear_word(n, c4, th, taps4[COLS + 4 * w4 + j]);
#else
  const int src_h = taps[h];
  const ivec4 cols = taps4[COLS / 4 + w4];
  for (int j = 0; j < 4; ++j) words[j] = nearest_word(input_word(n, c4, src_h, cols[j]));
#endif
  for (int j = 0; j < 4; ++j) {
    words[j] = 4 * w4 + j < OUT_W ? pad_lanes(words[j], lanes, p.out_zp) : splat_byte(p.out_zp);
  }
  return words;
}
#endif
#endif

void main() {
  const int k = int(linear_invocation_id());
  if (k >= p.chunk_count) return;
#if INT8_LAYOUT == LAYOUT_4C1W
  gather_chunk(k, p.word_count, ivec4(p.batches, C, OUT_H, OUT_W));
#else
  store_chunk(k, p.word_count, chunk_value(k));
#endif
}
