// q8ta_softmax: softmax / log_softmax over the last dim (W) of a dequantized int8x4 tensor
// (INT8_LAYOUT), written as float32 (OUTPUT_FLOAT = 1: any float buffer, element strides in the
// push constants) or requantized int8x4 in the input's layout (OUTPUT_FLOAT = 0). Per row
// (n, c, h), numerically stable: the dequantization is increasing, so the row's largest x is at
// its largest q, and with d = q - max q (an integer in [-255, 0], exact in float32)
//   e = exp(float32(d) * s_in)              (x - max x, rounded once)
//   sum = the float32 sum of the row's e     (per invocation, then a tree)
//   softmax:     y = e * (1 / sum)            log_softmax:  y = float32(d) * s_in - log(sum)
//   int8 output: q = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)
// sum >= 1 (the maximum contributes exp(0)), so nothing divides by zero or takes log(0).
//
// One workgroup of WG invocations per block of 4 rows that share the input's words: 4H4W
// (group x = h4, y = c, z = n): rows h = 4*h4 .. 4*h4+3 of channel c, a 16-byte chunk = 4 rows
// x 4 widths (word = row, lane = width); 4W4C and 4C1W (group x = c4, y = h, z = n): rows
// c = 4*c4 .. +3, lane = row (4W4C chunk: 4 widths of one channel block; 4C1W: 4 consecutive
// words). Invocation t takes chunks w4 = t, t + WG, ... of the rows three times: the rows'
// maxima (reduced in shared memory), the sums of e (reduced), then the outputs. Rows past the
// tensor's end (padding) are computed but never written as floats; as int8 they, and widths past
// W, are written as the output's zero point.
#version 450
#extension GL_GOOGLE_include_directive : require
#define VKD_FIXED_LOCAL_SIZE
#define WG 64
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"

#if OUTPUT_FLOAT
// Scalar and 16-byte views: a row's 4 widths are one aligned vec4 where W is the packed dim.
layout(set = 0, binding = 0) writeonly buffer OutFloats { float out_floats[]; };
layout(set = 0, binding = 0) writeonly buffer OutFloats4 { vec4 out_floats4[]; };
#else
layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = 0) writeonly buffer OutWords4 { ivec4 out_words4[]; };
#endif
layout(set = 0, binding = 1) readonly buffer InWords { int in_words[]; };
layout(set = 0, binding = 1) readonly buffer InWords4 { ivec4 in_words4[]; };

layout(push_constant) uniform Params {
  ivec4 sizes;        // N, C, H, W of in and out
  ivec4 out_strides;  // float output: element strides of n, c, h, w
  float in_scale;
  int log_softmax;    // 0: softmax, 1: log_softmax
  float inv_out_scale;
  int out_zp;
} p;

shared ivec4 part_max[WG];
shared vec4 part_sum[WG];

#if OUTPUT_FLOAT
#define ROW_CHUNKS_STORE_FLOATS
#else
#define ROW_CHUNKS_STORE
#endif
#define ROW_CHUNKS_LOAD
#include "row_chunks.glslh"  // the rows and chunks of this workgroup

#if OUTPUT_FLOAT
void store_chunk(int w4, vec4 y[4]) { store_chunk_floats(w4, y); }
#else
// Requantizes the chunk and writes its words; padding rows and widths hold out_zp.
void store_chunk(int w4, vec4 y[4]) {
  const int rows = rows_inside();
  const float lo = float(-128 - p.out_zp), hi = float(127 - p.out_zp);
  ivec4 q[4];
  for (int ww = 0; ww < 4; ++ww) {
    for (int j = 0; j < 4; ++j) {
      const bool inside = j < rows && ww < chunk_widths(w4);
      // Rounding commutes with clamping to integers: clamp first (round_even_small's range).
      q[ww][j] = inside ? round_even_small(clamp(y[ww][j] * p.inv_out_scale, lo, hi)) + p.out_zp
                        : p.out_zp;
    }
  }
  store_chunk_words(w4, q);
}
#endif

void main() {
  const int t = int(gl_LocalInvocationIndex);
  const int W4 = div_up(p.sizes.w, 4);
  ivec4 v[4];

  ivec4 row_max = ivec4(-128);
  for (int w4 = t; w4 < W4; w4 += WG) {
    load_chunk(w4, v);
    for (int ww = 0; ww < chunk_widths(w4); ++ww) row_max = max(row_max, v[ww]);
  }
  part_max[t] = row_max;
  barrier();
  for (int half_size = WG / 2; half_size > 0; half_size /= 2) {
    if (t < half_size) part_max[t] = max(part_max[t], part_max[t + half_size]);
    barrier();
  }
  row_max = part_max[0];

  vec4 sum = vec4(0.0);
  for (int w4 = t; w4 < W4; w4 += WG) {
    load_chunk(w4, v);
    for (int ww = 0; ww < chunk_widths(w4); ++ww) sum += exp(vec4(v[ww] - row_max) * p.in_scale);
  }
  part_sum[t] = sum;
  barrier();
  for (int half_size = WG / 2; half_size > 0; half_size /= 2) {
    if (t < half_size) part_sum[t] += part_sum[t + half_size];
    barrier();
  }
  const vec4 total = part_sum[0];
  const vec4 inv_total = 1.0 / total, log_total = log(total);

  for (int w4 = t; w4 < W4; w4 += WG) {
    load_chunk(w4, v);
    vec4 y[4];
    for (int ww = 0; ww < 4; ++ww) {
      const vec4 x = vec4(v[ww] - row_max) * p.in_scale;
      y[ww] = p.log_softmax != 0 ? x - log_total : exp(x) * inv_total;
    }
    store_chunk(w4, y);
  }
}
