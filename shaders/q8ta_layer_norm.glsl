// q8ta_layer_norm: layer normalization over the last dim (W, of length C below) of each row
// (n, c, h), times a float32 weight plus a float32 bias per position along W.
//   IN_FLOAT 0 (family q8ta_layer_norm): an int8x4 input q in INT8_LAYOUT (LAYOUT_4W4C |
//     LAYOUT_4H4W | LAYOUT_4C1W), written requantized into the input's layout (OUTPUTS 1:
//     q8ta_layer_norm) or as float32 into any float buffer (OUTPUTS 2: q8ta_layer_norm_dq);
//   IN_FLOAT 1: a float32 input x from any float buffer (element strides in the push constants),
//     written as float32 into any float buffer (OUTPUTS 2, family q8ta_layer_norm_float,
//     INT8_LAYOUT LAYOUT_WIDTH_PACKED: no int8 tensor; the float op layer_norm), quantized into an
//     int8x4 tensor in INT8_LAYOUT (OUTPUTS 1: layer_norm_q), or both (OUTPUTS 3: layer_norm_dual,
//     the float32 output at binding 0, the int8 one at binding 3) (family q8ta_layer_norm_float_q).
//
// int8 input, exact statistics: with x = s (q - zp), x - mean = s (q - S1 / C) and
// var = s^2 D / C^2, where S1 = sum q, S2 = sum q^2 (int32, exact: |S2| <= 16384 C) and
// D = C S2 - S1^2 >= 0 (exact in 64 bits: imulExtended, usubBorrow). So the zero point drops
// out and, dividing through by s / C,
//   y = float32(C q - S1) * inversesqrt(float32(D) + eps_q) * weight + bias
// with eps_q = float32(eps C^2 / s^2) from the host and C q - S1 an exact int32, exact in float32
// (|C q - S1| <= 255 C < 2^24: C <= 65536, checked by the builder); float32(D) is rounded from
// its two 32-bit halves (hi 2^32 + lo: relative error below 2^-23). Each float32 operation is
// rounded on its own (`precise`: no fused multiply-add); inversesqrt is the device's.
//   int8 output: q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)   (requant.glslh)
// float input, two passes as nn.LayerNorm defines it: mean = (float32 sum of x) / C,
// var = (float32 sum of (x - mean)^2) / C, y = (x - mean) * inversesqrt(var + eps) * weight + bias.
// The float sums are per invocation, then the workgroup's reduction: the order is the kernel's.
// Each row's sums are one vec4 lane, added in the same order whichever rows share the workgroup
// and each operation rounded on its own (`precise`), so on one device y is bit for bit the float
// op's (same row, same workgroup size) in every output form and int8 layout. Its
// int8 output is q8ta_quantize's value of that y (requant.glslh quantize_float, full int8 range:
// clamp(roundEven(y * inv_s_out) + zp_out, -128, 127), inv_s_out = float32(1 / s_out)): so
// layer_norm_q and layer_norm_dual write exactly what layer_norm followed by q8ta_quantize writes.
//
// ONE_ROW 1 (family q8ta_layer_norm_row; a float input, no int8 output or a 4H4W one, where a
// row's 4 widths are one word): one workgroup per row, group (x, y, z) = (h, c, n), x running on
// to the int8 output's padding rows (h >= H: only their zero-point words). Invocation t holds
// widths 4t .. 4t+3, then 4(t + WG) .., of its row as the 4-row form's invocation t holds them of
// its 4 rows, and the same WG is chosen, so a row's sums run in the same order and give the
// same bits in either form; with a quarter of the work per invocation and four times the
// workgroups (each invocation's chain of loads, sums and stores is what a small layer norm
// waits on).
// Otherwise one workgroup of WG invocations (the workgroup chooser's linear size, at most MAX_WG) per
// block of 4 rows that share the int8 tensor's 16-byte chunks (INT8_LAYOUT): 4H4W and no int8
// tensor (group x = h4, y = c, z = n): rows h = 4*h4 .. 4*h4+3 of channel c, a chunk = 4 rows x 4
// widths (word = row, lane = width); 4W4C and 4C1W (group x = c4, y = h, z = n): rows
// c = 4*c4 .. +3, lane = row (4W4C chunk: 4 widths of one channel block; 4C1W: 4 consecutive
// words); a float input is read in the same blocks through its strides. Invocation t takes the
// chunks w4 = t, t + WG, ... of the 4 rows: it sums them (int8: S1 and S2 of each row; float:
// the sums of x, then of (x - mean)^2), the workgroup reduces the sums (SG_REDUCE 1: subgroupAdd
// and one partial per subgroup in shared memory; 0: a shared-memory tree), and
// invocation t then normalizes and writes the same chunks. Rows past the tensor's end (padding)
// are computed but never written as floats; as int8 they, and widths past W, are written as the
// output's zero point.
#version 450
#extension GL_GOOGLE_include_directive : require
#if SG_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glslh"
#include "requant.glslh"  // requantized_byte, quantize_float

// The int8-input family sets no IN_FLOAT axis.
#ifndef IN_FLOAT
#define IN_FLOAT 0
#endif
#ifndef ONE_ROW
#define ONE_ROW 0
#endif
#define OUTPUT_INT8 ((OUTPUTS & 1) != 0)
#define OUTPUT_FLOAT ((OUTPUTS & 2) != 0)
#define MAX_WG 256

#if OUTPUT_FLOAT
// Scalar and 16-byte views: a row's 4 widths are one aligned vec4 where W is the packed dim.
layout(set = 0, binding = 0) writeonly buffer OutFloats { float out_floats[]; };
layout(set = 0, binding = 0) writeonly buffer OutFloats4 { vec4 out_floats4[]; };
#endif
#if OUTPUT_INT8
#if OUTPUT_FLOAT
#define OUT_WORDS_BINDING 3
#else
#define OUT_WORDS_BINDING 0
#endif
layout(set = 0, binding = OUT_WORDS_BINDING) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = OUT_WORDS_BINDING) writeonly buffer OutWords4 { ivec4 out_words4[]; };
#endif
#if IN_FLOAT
layout(set = 0, binding = 1) readonly buffer InFloats { float in_floats[]; };
layout(set = 0, binding = 1) readonly buffer InFloats4 { vec4 in_floats4[]; };
#else
layout(set = 0, binding = 1) readonly buffer InWords { int in_words[]; };
layout(set = 0, binding = 1) readonly buffer InWords4 { ivec4 in_words4[]; };
#endif
// Per chunk w4 of W: affine[2 w4] = the weights of widths 4 w4 .. +3, affine[2 w4 + 1] their
// biases (0 past W).
layout(set = 0, binding = 2) readonly buffer Affine { vec4 affine[]; };

layout(push_constant) uniform Params {
  ivec4 sizes;        // N, C, H, W of in and out
  ivec4 in_strides;   // float input: element strides of n, c, h, w
  ivec4 out_strides;  // float output: element strides of n, c, h, w
  float eps;          // int8 input: eps_q = eps C^2 / s_in^2; float input: eps
  float inv_out_scale;
  int out_zp;
} p;

#if IN_FLOAT
shared vec4 part_sum[MAX_WG];
#else
shared ivec4 part_s1[MAX_WG];
shared ivec4 part_s2[MAX_WG];
#endif

#define WG int(gl_WorkGroupSize.x)

#if !IN_FLOAT
#define ROW_CHUNKS_LOAD
#endif
#if OUTPUT_FLOAT
#define ROW_CHUNKS_STORE_FLOATS
#endif
#if OUTPUT_INT8
#define ROW_CHUNKS_STORE
#endif
#include "row_chunks.glslh"  // the rows and chunks of this workgroup

#if IN_FLOAT
// The float values of chunk w4: v[ww][j] = row j at width 4*w4 + ww; rows past the tensor and
// widths past W read as 0.
void load_chunk(int w4, out vec4 v[4]) {
  const int base = row_origin(p.in_strides) + 4 * w4 * p.in_strides.w;
  const int step = row_stride(p.in_strides);
  // Every load issued, clamped into the tensor, then the values outside it replaced by 0.
  const int rows = rows_inside(), widths = chunk_widths(w4);
  if (vec4_rows(p.in_strides, base, w4)) {
    for (int j = 0; j < 4; ++j) {
      const vec4 row = in_floats4[(base + min(j, rows - 1) * step) / 4];
      for (int ww = 0; ww < 4; ++ww) v[ww][j] = j < rows ? row[ww] : 0.0;
    }
    return;
  }
  for (int ww = 0; ww < 4; ++ww) {
    for (int j = 0; j < 4; ++j) {
      const float x = in_floats[base + min(j, rows - 1) * step + min(ww, widths - 1) * p.in_strides.w];
      v[ww][j] = j < rows && ww < widths ? x : 0.0;
    }
  }
}
#endif

#if OUTPUT_INT8
// Quantizes the chunk and writes its words; padding rows and widths hold out_zp. An int8 input
// requantizes (requantized_byte); a float input quantizes as q8ta_quantize does (quantize_float):
// the same byte for a finite y.
void store_words(int w4, vec4 y[4]) {
  const int rows = rows_inside();
  const float lo = float(-128 - p.out_zp), hi = float(127 - p.out_zp);
  ivec4 q[4];
  for (int ww = 0; ww < 4; ++ww) {
    for (int j = 0; j < 4; ++j) {
      const bool inside = j < rows && ww < chunk_widths(w4);
#if IN_FLOAT
      q[ww][j] = inside ? quantize_float(y[ww][j], p.inv_out_scale, p.out_zp, -128, 127) : p.out_zp;
#else
      q[ww][j] = inside ? requantized_byte(y[ww][j], p.inv_out_scale, lo, hi, p.out_zp) : p.out_zp;
#endif
    }
  }
  store_chunk_words(w4, q);
}
#endif

// Writes the chunk's results into every output.
void store_chunk(int w4, vec4 y[4]) {
#if OUTPUT_FLOAT
  store_chunk_floats(w4, y);
#endif
#if OUTPUT_INT8
  store_words(w4, y);
#endif
}

// The workgroup's total of every invocation's partial sums, in every invocation. SG_REDUCE 1:
// subgroupAdd (a workgroup of one subgroup needs no more), one partial per subgroup in shared
// memory, each invocation adds those up; SG_REDUCE 0 (devices without subgroup arithmetic): a
// tree, part[t] += part[t + half] until part[0] holds the total (any WG), one barrier per level.
// One body for both forms: reduce_sum the 4-row form's vec4 (a row per lane), reduce_row_sum
// the row form's float in lane x of the same shared array, so a row's sum is added in the same
// order in either.
#if IN_FLOAT
#if SG_REDUCE
#define REDUCE_SUM_BODY(TYPE, LANE)                                                     \
  if (gl_NumSubgroups == 1) return subgroupAdd(mine);                                  \
  barrier(); /* the previous total was read by everyone */                              \
  mine = subgroupAdd(mine);                                                             \
  if (subgroupElect()) part_sum[gl_SubgroupID] LANE = mine;                             \
  barrier();                                                                            \
  TYPE total = part_sum[0] LANE;                                                        \
  for (int s = 1; s < int(gl_NumSubgroups); ++s) total += part_sum[s] LANE;             \
  return total;
#else
#define REDUCE_SUM_BODY(TYPE, LANE)                                                     \
  const int t = int(gl_LocalInvocationIndex);                                           \
  barrier(); /* the previous total was read by everyone */                              \
  part_sum[t] LANE = mine;                                                              \
  barrier();                                                                            \
  for (int live = WG; live > 1;) {                                                      \
    const int half_size = (live + 1) / 2;                                               \
    if (t < live - half_size) part_sum[t] LANE += part_sum[t + half_size] LANE;         \
    barrier();                                                                          \
    live = half_size;                                                                   \
  }                                                                                     \
  return part_sum[0] LANE;
#endif
#define ALL_LANES
vec4 reduce_sum(vec4 mine) { REDUCE_SUM_BODY(vec4, ALL_LANES) }
float reduce_row_sum(float mine) { REDUCE_SUM_BODY(float, .x) }
#else
// Integer sums: exact in any order.
void reduce_sums(inout ivec4 s1, inout ivec4 s2) {
  const int t = int(gl_LocalInvocationIndex);
#if SG_REDUCE
  s1 = subgroupAdd(s1);
  s2 = subgroupAdd(s2);
  if (subgroupElect()) {
    part_s1[gl_SubgroupID] = s1;
    part_s2[gl_SubgroupID] = s2;
  }
  barrier();
  s1 = part_s1[0];
  s2 = part_s2[0];
  for (int s = 1; s < int(gl_NumSubgroups); ++s) {
    s1 += part_s1[s];
    s2 += part_s2[s];
  }
#else
  part_s1[t] = s1;
  part_s2[t] = s2;
  barrier();
  for (int live = WG; live > 1;) {
    const int half_size = (live + 1) / 2;
    if (t < live - half_size) {
      part_s1[t] += part_s1[t + half_size];
      part_s2[t] += part_s2[t + half_size];
    }
    barrier();
    live = half_size;
  }
  s1 = part_s1[0];
  s2 = part_s2[0];
#endif
}
#endif

// y = (d * r) * weight + bias for the 4 rows of width 4*w4 + ww, each operation rounded; `a`
// is chunk w4's affine pair (affine[2 w4], affine[2 w4 + 1]).
vec4 affine_map(vec4 d, vec4 r, vec4 a[2], int ww) {
  precise vec4 scaled = d * r;
  precise vec4 y = scaled * a[0][ww] + a[1][ww];
  return y;
}

void load_affine(int w4, out vec4 a[2]) {
  a[0] = affine[2 * w4];
  a[1] = affine[2 * w4 + 1];
}

// The values of chunk w4 into v: the invocation's first chunk (t, its only one where W4 <= WG,
// as at MiniLM's and BERT's rows) from `first`, loaded once before the passes with its affine
// pair; any later chunk (wider rows) loaded again by each pass.
#if IN_FLOAT
#define CHUNK_TYPE vec4
#else
#define CHUNK_TYPE ivec4
#endif
void chunk_values(int w4, int t, CHUNK_TYPE first[4], out CHUNK_TYPE v[4]) {
  if (w4 == t) {
    v = first;
  } else {
    load_chunk(w4, v);
  }
}
void chunk_affine(int w4, int t, vec4 first[2], out vec4 a[2]) {
  if (w4 == t) {
    a = first;
  } else {
    load_affine(w4, a);
  }
}

void main_rows4() {
  const int t = int(gl_LocalInvocationIndex);
  const int C = p.sizes.w, W4 = div_up(C, 4);
  // Every load of the first chunk issued at once, clamped into the row (a branch per load
  // would serialize them); an invocation past the row's chunks never uses its values.
  CHUNK_TYPE v[4], first[4];
  vec4 a[2], first_affine[2];
  load_chunk(min(t, W4 - 1), first);
  load_affine(min(t, W4 - 1), first_affine);
#if !IN_FLOAT
  ivec4 s1 = ivec4(0), s2 = ivec4(0);
  for (int w4 = t; w4 < W4; w4 += WG) {
    chunk_values(w4, t, first, v);
    for (int ww = 0; ww < chunk_widths(w4); ++ww) {
      s1 += v[ww];
      s2 += v[ww] * v[ww];
    }
  }
  reduce_sums(s1, s2);
  const ivec4 S1 = s1, S2 = s2;
  vec4 r;
  for (int j = 0; j < 4; ++j) {
    int hi1, lo1, hi2, lo2;
    imulExtended(C, S2[j], hi1, lo1);
    imulExtended(S1[j], S1[j], hi2, lo2);
    uint borrow;
    const uint lo = usubBorrow(uint(lo1), uint(lo2), borrow);
    const int hi = hi1 - hi2 - int(borrow);
    precise float d = float(hi) * 4294967296.0 + float(lo);
    precise float denominator = d + p.eps;
    r[j] = inversesqrt(denominator);
  }
  for (int w4 = t; w4 < W4; w4 += WG) {
    chunk_values(w4, t, first, v);
    chunk_affine(w4, t, first_affine, a);
    vec4 y[4];
    for (int ww = 0; ww < 4; ++ww) y[ww] = affine_map(vec4(C * v[ww] - S1), r, a, ww);
    store_chunk(w4, y);
  }
#else
  precise vec4 sum = vec4(0.0);
  for (int w4 = t; w4 < W4; w4 += WG) {
    chunk_values(w4, t, first, v);
    for (int ww = 0; ww < 4; ++ww) sum += v[ww];  // outside the tensor: 0
  }
  precise vec4 mean = reduce_sum(sum) / float(C);
  precise vec4 m2 = vec4(0.0);
  for (int w4 = t; w4 < W4; w4 += WG) {
    chunk_values(w4, t, first, v);
    for (int ww = 0; ww < chunk_widths(w4); ++ww) m2 += (v[ww] - mean) * (v[ww] - mean);
  }
  precise vec4 var = reduce_sum(m2) / float(C);
  precise vec4 denominator = var + p.eps;
  const vec4 r = inversesqrt(denominator);
  for (int w4 = t; w4 < W4; w4 += WG) {
    chunk_values(w4, t, first, v);
    chunk_affine(w4, t, first_affine, a);
    vec4 y[4];
    for (int ww = 0; ww < 4; ++ww) y[ww] = affine_map(v[ww] - mean, r, a, ww);
    store_chunk(w4, y);
  }
#endif
}

#if ONE_ROW
// The element offset of this workgroup's row for element strides `st`.
int row_offset(ivec4 st) {
  const ivec3 b = ivec3(gl_WorkGroupID);
  return b.z * st.x + b.y * st.y + b.x * st.z;
}

// Widths 4 w4 .. 4 w4 + 3 of the row (0 past W).
vec4 load_row_chunk(int w4) {
  const int base = row_offset(p.in_strides) + 4 * w4 * p.in_strides.w;
  const int widths = chunk_widths(w4);
  if (p.in_strides.w == 1 && widths == 4 && base % 4 == 0) return in_floats4[base / 4];
  vec4 v;
  for (int ww = 0; ww < 4; ++ww) {
    const float x = in_floats[base + min(ww, widths - 1) * p.in_strides.w];
    v[ww] = ww < widths ? x : 0.0;
  }
  return v;
}

#if OUTPUT_INT8
// The 4H4W word of this row (h = group x, padding rows too) at widths 4 w4 .. 4 w4 + 3.
int row_word(int w4) {
  const ivec3 b = ivec3(gl_WorkGroupID);
  return int8x4_position(LAYOUT_4H4W, p.sizes, b.z, b.y, b.x, 4 * w4).x;
}
#endif

// Writes y (widths 4 w4 .. +3 of the row) into every output; int8 widths past W hold out_zp.
void store_row_chunk(int w4, vec4 y) {
  const int widths = chunk_widths(w4);
#if OUTPUT_FLOAT
  const int base = row_offset(p.out_strides) + 4 * w4 * p.out_strides.w;
  if (p.out_strides.w == 1 && widths == 4 && base % 4 == 0) {
    out_floats4[base / 4] = y;
  } else {
    for (int ww = 0; ww < widths; ++ww) out_floats[base + ww * p.out_strides.w] = y[ww];
  }
#endif
#if OUTPUT_INT8
  ivec4 q;
  for (int ww = 0; ww < 4; ++ww) {
    q[ww] = ww < widths ? quantize_float(y[ww], p.inv_out_scale, p.out_zp, -128, 127) : p.out_zp;
  }
  out_words[row_word(w4)] = pack_lanes(q);
#endif
}

void main_row() {
  const int t = int(gl_LocalInvocationIndex);
  const int C = p.sizes.w, W4 = div_up(C, 4);
#if OUTPUT_INT8
  if (int(gl_WorkGroupID.x) >= p.sizes.z) {  // a padding row of the last 4-row group
    for (int w4 = t; w4 < W4; w4 += WG) out_words[row_word(w4)] = pack_lanes(ivec4(p.out_zp));
    return;
  }
#endif
  // The first chunk and its affine pair loaded once, clamped into the row, for the passes.
  const vec4 first = load_row_chunk(min(t, W4 - 1));
  vec4 first_affine[2], a[2];
  load_affine(min(t, W4 - 1), first_affine);
  precise float sum = 0.0;
  for (int w4 = t; w4 < W4; w4 += WG) {
    const vec4 v = w4 == t ? first : load_row_chunk(w4);
    for (int ww = 0; ww < 4; ++ww) sum += v[ww];  // outside the tensor: 0
  }
  precise float mean = reduce_row_sum(sum) / float(C);
  precise float m2 = 0.0;
  for (int w4 = t; w4 < W4; w4 += WG) {
    const vec4 v = w4 == t ? first : load_row_chunk(w4);
    for (int ww = 0; ww < chunk_widths(w4); ++ww) m2 += (v[ww] - mean) * (v[ww] - mean);
  }
  precise float var = reduce_row_sum(m2) / float(C);
  precise float denominator = var + p.eps;
  const float r = inversesqrt(denominator);
  for (int w4 = t; w4 < W4; w4 += WG) {
    const vec4 v = w4 == t ? first : load_row_chunk(w4);
    chunk_affine(w4, t, first_affine, a);
    precise vec4 scaled = (v - mean) * r;
    precise vec4 y = scaled * a[0] + a[1];
    store_row_chunk(w4, y);
  }
}
#endif

void main() {
#if ONE_ROW
  main_row();
#else
  main_rows4();
#endif
}
