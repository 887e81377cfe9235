// q8ta_clamp and q8ta_mul_scalar: a standalone relu / hardtanh / clamp between int8 ops, or a
// multiplication by a scalar constant, requantized, on one int8x4 tensor:
// out = quantize_out(clamp(dequantize_in(in) * m)), m = 1 for q8ta_clamp (a float32 product
// with 1 is exact, so the clamp's results do not depend on it). Input and output share their
// sizes and packed layout (INT8_LAYOUT); each has its own scale and zero point. Per element,
// every operation rounded on its own (`precise`: no fused multiply-add), so the CPU reference
// (test/reference/ElementwiseReference.h) and the compiler's check of the chain it replaces
// (compiler/reference/QuantChain.h) match bit for bit:
//   y = float32(float32(q - zp_in) * s_in) * m
//   q = clamp(roundEven(y * inv_s_out) + zp_out, act_min, act_max),  inv_s_out = float32(1/s_out)
// where [act_min, act_max] is the float clamp's range in output units.
// PER_CHANNEL 1 is q8ta_batch_norm, a per-channel affine map (an inference batch norm):
//   y = fma(float32(float32(q - zp_in) * s_in), scale_c, shift_c)   rounded once (exact_fma)
// with scale_c / shift_c from binding 2, then the same requantization.
//
// Each invocation computes one 16-byte chunk (4 consecutive words) of the output: the words of
// in and out at the same index hold the same elements (same sizes and layout), so the kernel
// walks both word arrays linearly with 16-byte loads and stores (int8x4_chunk.glslh's
// map_chunk, mapping each word by map_word below). Only the padding needs the chunk's position:
// it is written as out's zero point whatever the arithmetic says (the activation range may
// exclude it).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#define CHUNK_MAP
#include "int8x4_chunk.glslh"
#if PER_CHANNEL
#include "exact_fma.glslh"

// Per channel c: (scale_c, its split_hi_lo halves, shift_c), one entry per channel of
// 4 * ceil(C / 4) (the padding lanes' channels read zeros).
layout(set = 0, binding = 2) readonly buffer ChannelAffine { vec4 channel_affine[]; };
#endif

layout(push_constant) uniform Params {
  ivec4 sizes;        // N, C, H, W of in and out
  int chunk_count;    // ceil(word_count / 4): invocations that do work
  int word_count;     // words of in and out
  int in_zp;
  int out_zp;
  float in_scale;
  float multiplier;   // m: 1 for q8ta_clamp, the scalar for q8ta_mul_scalar (unused PER_CHANNEL)
  float inv_out_scale;
  float act_lo;       // float(act_min - out_zp)
  float act_hi;       // float(act_max - out_zp)
} p;

#if PER_CHANNEL
// The lanes' channel entries of the last word mapped: the words of a chunk share their channels
// in 4W4C and 4H4W (and often in 4C1W), so each is loaded once per chunk, not once per word.
int cached_c0 = -1;
vec4 lane_affine[4];
#endif

// One requantized word (word `index` of the tensor), lanes >= `valid` set to out_zp.
int map_word(int w, int valid, int index) {
#if PER_CHANNEL
  const int c0 = word_first_channel(index, p.sizes);
  if (c0 != cached_c0) {
    cached_c0 = c0;
    for (int lane = 0; lane < 4; ++lane) {
      lane_affine[lane] = channel_affine[c0 + kLaneChannelStep * lane];
    }
  }
#endif
  int word = 0;
  for (int lane = 0; lane < 4; ++lane) {
    // |q - zp| <= 255: exact through the mantissa (common.glslh).
    precise float x = small_int_to_float(lane_of(w, lane) - p.in_zp) * p.in_scale;
#if PER_CHANNEL
    const vec4 k = lane_affine[lane];
    const float y = exact_fma(x, k.x, k.y, k.z, k.w);
#else
    precise float y = x * p.multiplier;
#endif
    word |= requantized_byte(y, p.inv_out_scale, p.act_lo, p.act_hi, p.out_zp) << (8 * lane);
  }
  return pad_lanes(word, valid, p.out_zp);
}

void main() {
  const int k = int(linear_invocation_id());
  if (k < p.chunk_count) map_chunk(k, p.word_count, p.sizes);
}
