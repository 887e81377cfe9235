// q8da_quantize_rows: the first dispatch of q8da_linear (runtime/ops/Linear.h). Per row of a
// float32 [..., M, K] width-packed buffer, torchao's choose_qparams_affine (SYMMETRIC, block
// [1, K]) and quantize_affine in one pass, into the 4H4W int8x4 rows the linear kernels read:
//   amax = max(-min(min(x), 0), max(max(x), 0))               (a NaN in the row: NaN)
//   s    = max(div_rn(amax, float(qmax - qmin) / 2), eps)     (NaN stays NaN) -> scales[m]
//   q    = clamp(roundEven(x * div_rn(1, s)), qmin, qmax)     (zero point 0; NaN -> qmin)
// which is choose_qparams_affine.glsl's SYMMETRIC scale and q8ta_quantize_affine.glsl's
// quantization with affine_reciprocal.glsl's 1 / s, the same operations in the same order, so
// the bytes equal the three kernels' (and torch's CPU results). quant_min + quant_max + 1 lies in
// [-1, 1], so torchao's symmetric zero point is 0 (the op checks it).
// One workgroup of WG invocations per padded row r of the 4H4W rows (each batch's H rows padded
// to a multiple of 4): invocation t folds the row's float4s k4 = t, t + WG, ... into a min,
// max and NaN flag, a shared-memory tree combines them, invocation 0 derives the scale and its
// reciprocal, then each invocation quantizes its float4s again (from cache) and writes one
// word each: component r % 4 of block (r / 4, k4). Lanes past K, and the rows of padding, are 0.
// Workgroups beyond maxComputeWorkGroupCount[0] continue along y.
#version 450
#extension GL_GOOGLE_include_directive : require
#define VKD_FIXED_LOCAL_SIZE
#define WG 64
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "exact_div.glslh"

layout(std430, binding = 0) writeonly buffer Out { int out_words[]; };
layout(std430, binding = 1) writeonly buffer Scales { float scales[]; };
layout(std430, binding = 2) readonly buffer In { float x[]; };

layout(push_constant) uniform Params {
  int k;            // K
  int k4;           // K / 4 rounded up
  int h;            // real rows per batch
  int h4;           // row blocks per batch
  int padded_rows;  // batches * 4 * h4
  int quant_min;
  int quant_max;
  float eps;
} p;

shared float s_min[WG];
shared float s_max[WG];
shared uint s_nan[WG];
shared float s_inv;

#define kNaN uintBitsToFloat(0x7FC00000u)  // the quiet NaN torch's CPU ops produce

// The row's elements 4 k4 .. 4 k4 + 3 (0 past K).
vec4 load4(int base, int k4) {
  vec4 v = vec4(0.0);
  for (int i = 0; i < 4; ++i) {
    if (4 * k4 + i < p.k) v[i] = x[base + 4 * k4 + i];
  }
  return v;
}

void main() {
  const int r = int(gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y);
  if (r >= p.padded_rows) return;  // uniform per workgroup
  const int t = int(gl_LocalInvocationID.x);
  const int batch = r / (4 * p.h4), row = r % (4 * p.h4);
  const int word0 = ((r / 4) * p.k4) * 4 + r % 4;  // block (r / 4, 0), component r % 4
  if (row >= p.h) {  // a padding row: zeros
    for (int k4 = t; k4 < p.k4; k4 += WG) out_words[word0 + 4 * k4] = 0;
    return;
  }
  const int m = batch * p.h + row;
  const int base = m * p.k;

  float mn = uintBitsToFloat(0x7F800000u), mx = -mn;
  bool nan = false;
  for (int k4 = t; k4 < p.k4; k4 += WG) {
    const vec4 v = load4(base, k4);
    for (int i = 0; i < 4 && 4 * k4 + i < p.k; ++i) {
      if (isnan(v[i])) {
        nan = true;
      } else {
        mn = min(mn, v[i]);
        mx = max(mx, v[i]);
      }
    }
  }
  s_min[t] = mn;
  s_max[t] = mx;
  s_nan[t] = nan ? 1u : 0u;
  barrier();
  for (int stride = WG / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      s_min[t] = min(s_min[t], s_min[t + stride]);
      s_max[t] = max(s_max[t], s_max[t + stride]);
      s_nan[t] |= s_nan[t + stride];
    }
    barrier();
  }
  if (t == 0) {
    const bool any_nan = s_nan[0] != 0u;
    const float min_neg = min(s_min[0], 0.0), max_pos = max(s_max[0], 0.0);
    // float(qmax - qmin) / 2 is exact (an integer below 2^9, halved).
    precise float scale = div_rn(max(-min_neg, max_pos), float(p.quant_max - p.quant_min) * 0.5);
    if (any_nan) scale = kNaN;
    if (!isnan(scale)) scale = max(scale, p.eps);
    scales[m] = scale;
    s_inv = div_rn(1.0, scale);
  }
  barrier();
  const float inv = s_inv;
  for (int k4 = t; k4 < p.k4; k4 += WG) {
    const vec4 v = load4(base, k4);
    int word = 0;
    for (int i = 0; i < 4; ++i) {
      int code = 0;
      if (4 * k4 + i < p.k) {
        const float q = roundEven(v[i] * inv);
        code = isnan(q) ? p.quant_min
                        : int(clamp(q, float(p.quant_min), float(p.quant_max)));
      }
      word |= (code & 0xFF) << (8 * i);
    }
    out_words[word0 + 4 * k4] = word;
  }
}
