// float_masked_mean: sentence-transformers' pooling of hidden states x [B, T, C] with a token
// mask m [B, T] (any float32 values, 1 = token, 0 = padding), in one dispatch:
//   mean[b, c] = (sum_t x[b, t, c] * m[b, t]) / max(sum_t m[b, t], mask_min)
//   NORMALIZE 0 (float_masked_mean, q8ta_masked_mean):  y = mean
//   NORMALIZE 1 (..._normalize, F.normalize(p=2, dim=1)):
//     y[b, c] = mean[b, c] / max(sqrt(sum_c mean[b, c]^2), eps)
// x float32 from a float buffer (INPUT 0), or int8 in a packed layout (INPUT the layout)
// dequantized as float32(q - zero_point) * scale. The bits are those of the CPU reference
// interpreter running the unfused ops one by one (dq, mul, sum, sum, clamp, div;
// linalg_vector_norm, clamp_min, div; compiler/ops/Reduce.cpp): every sum from +0.0 in order
// along its dim (t for the mean, c for the norm), each product, sum and quotient rounded once
// (`precise`, div_rn), the square root correctly rounded (sqrt_rn), clamps passing NaN.
// Workgroup b pools batch row b: invocation l the channels l, l + wg, ... (reads along t are
// contiguous along C across neighbouring invocations, 8 tokens' loads in flight at once), each
// also counting the tokens itself;
// the means go to shared memory and every invocation sums their squares in channel order.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "exact_div.glslh"  // div_rn
#if NORMALIZE
#include "sqrt_rn.glslh"
#endif

layout(set = 0, binding = 0) writeonly buffer OutFloats { float out_floats[]; };
#if INPUT == 0
layout(set = 0, binding = 1) readonly buffer InFloats { float in_floats[]; };
#else
#define TILE_LAYOUT INPUT
#define TILE_BINDING 1
#define TILE_QUALIFIER readonly
#define TILE_FN(x) in_##x
#define TILE_LOAD
#include "int8x4_tile.glslh"
#endif
layout(set = 0, binding = 2) readonly buffer MaskFloats { float mask_floats[]; };

// The widest hidden size pooled (the runtime checks C against it): 16 KiB of shared memory,
// Vulkan's guaranteed minimum.
#define MAX_CHANNELS 4096
#define TOKEN_BLOCK 8

layout(push_constant) uniform Params {
  ivec4 sizes;       // 1, B, T, C of the input
  ivec4 in_strides;  // float input: element strides of (unused), b, t, c
  ivec4 strides;     // the mask's b, t; the output's b, c
  float mask_min;    // the token count's lower bound (clamp(min=...))
  float eps;         // the norm's lower bound (F.normalize's clamp_min)
  float scale;       // int8 input: its dequantization
  int zero_point;
} p;

#if NORMALIZE
shared float means[MAX_CHANNELS];
#endif

float hidden(int b, int t, int c) {
#if INPUT == 0
  return in_floats[b * p.in_strides.y + t * p.in_strides.z + c * p.in_strides.w];
#else
  return float(in_load_element(p.sizes, ivec4(0, b, t, c)) - p.zero_point) * p.scale;
#endif
}

void main() {
  const int b = int(gl_WorkGroupID.x);
  const int l = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
  const int T = p.sizes.z, C = p.sizes.w;
  precise float count = 0.0;
  for (int t = 0; t < T; ++t) count = count + mask_floats[b * p.strides.x + t * p.strides.y];
  const float denominator = count < p.mask_min ? p.mask_min : count;
  for (int c = l; c < C; c += wg) {
    // Tokens in blocks of TOKEN_BLOCK: the block's loads are issued together (independent of
    // the sum), then added in token order; one load in flight at a time left a loop of T
    // memory latencies (float_sum of MiniLM's [1, 128, 384]: 32 us on an H200).
    precise float acc = 0.0;
    for (int t0 = 0; t0 < T; t0 += TOKEN_BLOCK) {
      const int n = min(TOKEN_BLOCK, T - t0);
      float x[TOKEN_BLOCK], m[TOKEN_BLOCK];
      for (int k = 0; k < TOKEN_BLOCK; ++k) {
        const int t = t0 + min(k, n - 1);  // past the end: the last token again, unused
        x[k] = hidden(b, t, c);
        m[k] = mask_floats[b * p.strides.x + t * p.strides.y];
      }
      for (int k = 0; k < n; ++k) {
        precise float kept = x[k] * m[k];
        acc = acc + kept;
      }
    }
    const float mean = div_rn(acc, denominator);
#if NORMALIZE
    means[c] = mean;
#else
    out_floats[b * p.strides.z + c * p.strides.w] = mean;
#endif
  }
#if NORMALIZE
  barrier();
  precise float squares = 0.0;
  for (int c = 0; c < C; ++c) {
    precise float sq = means[c] * means[c];
    squares = squares + sq;
  }
  float norm = sqrt_rn(squares);
  norm = norm < p.eps ? p.eps : norm;
  for (int c = l; c < C; c += wg) out_floats[b * p.strides.z + c * p.strides.w] = div_rn(means[c], norm);
#endif
}
