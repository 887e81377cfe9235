// float_elementwise: float32 element-wise ops, output [N, C, H, W] (the right-aligned dims of a
// tensor of rank 1 to 4) in a float buffer of any layout (element strides in push constants):
//   OP 0 float_add:    y = a + alpha * b        (alpha 1: alpha * b == b exactly)
//   OP 1 float_mul:    y = a * b
//   OP 2 float_div:    y = a / b                (div_rn: Vulkan's OpFDiv is not correctly rounded)
//   OP 3 float_affine: y = a * s0 + s1          (two roundings; mul.Scalar's s1 is -0.0, which
//                                                adds nothing to any value, -0.0 included)
//   OP 4 float_clamp:  y = a < s0 ? s0 : a, then > s1 ? s1   (NaN passes; absent bounds +-inf)
//   OP 5 float_gelu:   y = gelu_erf(a)          (approximate 'none', common/gelu.glslh)
//   OP 6 float_gelu:   y = gelu_tanh(a)         (approximate 'tanh')
// Ops 0-4: every float32 operation is rounded on its own (`precise`: no fused multiply-add), as
// the CPU reference interpreter computes it (compiler/ops/Elementwise.cpp), so the results are its
// bits wherever the device keeps subnormals (a device that flushes them flushes here too).
// float_gelu cannot be: the reference evaluates gelu in double and rounds once, GLSL has no erf.
// Its bound against that reference is |y - ref| <= 1e-6 |x| for every float32 x (the tests check
// it). Erf form: erf_approx is within 4.5e-7 of erf, the GPU's division adds <= 2.5 ulp (1.5e-7)
// and the roundings of x / sqrt(2) and 1 + erf add <= 1.8e-7, so 1 + erf is off by <= 7.8e-7 and
// 0.5 x (1 + erf) by <= 3.9e-7 |x|, plus y's rounding (and the reference's), 0.6e-7 |x| each.
// Tanh form x / (1 + exp(-2u)): exp's 3 + 2|arg| ulp and u's roundings move the sigmoid by at most
// ~4 ulp where it is not saturated (its slope s (1 - s) decays as fast as the error grows), the
// division 2.5 ulp; beyond |2u| = 80 (clamped) the value is below |x| e^-80. So a large |x|
// keeps its relative error when y ~ x and a tiny absolute one when y ~ -0; -inf gives NaN, as
// the reference's -inf * (1 + -1) does, +inf gives +inf, NaN gives NaN.
// Broadcasting: an operand's stride is 0 along each dim it is broadcast over (numpy rules, the
// builder's strides), so [.., T, 1] against [.., T, C] or a [C] constant cost no copy.
// Invocation i takes 4 consecutive widths of one row (n, c, h): chunk w4 = i % ceil(W / 4) of
// row i / ceil(W / 4); a chunk that is one aligned vec4 in a buffer is read or written as one.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#if OP == 2
#include "exact_div.glslh"
#elif OP >= 5
#include "gelu.glslh"
#endif

#define BINARY (OP <= 2)

layout(set = 0, binding = 0) writeonly buffer OutFloats { float out_floats[]; };
layout(set = 0, binding = 0) writeonly buffer OutFloats4 { vec4 out_floats4[]; };
layout(set = 0, binding = 1) readonly buffer AFloats { float a_floats[]; };
layout(set = 0, binding = 1) readonly buffer AFloats4 { vec4 a_floats4[]; };
#if BINARY
layout(set = 0, binding = 2) readonly buffer BFloats { float b_floats[]; };
layout(set = 0, binding = 2) readonly buffer BFloats4 { vec4 b_floats4[]; };
#endif

layout(push_constant) uniform Params {
  ivec4 sizes;        // N, C, H, W of the output
  ivec4 out_strides;  // element strides of n, c, h, w
  ivec4 a_strides;    // 0 along the dims a is broadcast over
  ivec4 b_strides;
  float s0;  // add: alpha; affine: multiplier; clamp: lower bound
  float s1;  // affine: addend; clamp: upper bound
  int chunks;  // rows * ceil(W / 4): the invocations that work
} p;

// The `count` (1..4) values of a chunk of an operand at `base`, stride `sw` along W: one vec4
// load when aligned and contiguous, one load splat when broadcast along W.
#define LOAD_CHUNK(NAME)                                           \
  vec4 NAME##_chunk(int base, int sw, int count) {                 \
    if (count == 4 && sw == 1 && (base & 3) == 0) {                \
      return NAME##_floats4[base >> 2];                            \
    }                                                              \
    if (sw == 0) return vec4(NAME##_floats[base]);                 \
    vec4 v = vec4(0.0);                                            \
    for (int k = 0; k < count; ++k) v[k] = NAME##_floats[base + k * sw]; \
    return v;                                                      \
  }
LOAD_CHUNK(a)
#if BINARY
LOAD_CHUNK(b)
#endif

int row_base(ivec4 st, ivec3 nch, int w) { return nch.x * st.x + nch.y * st.y + nch.z * st.z + w * st.w; }

void main() {
  const int i = int(linear_invocation_id());
  if (i >= p.chunks) return;
  const int w4s = (p.sizes.w + 3) / 4;
  const int w = 4 * (i % w4s);
  int row = i / w4s;
  const int h = row % p.sizes.z;
  row /= p.sizes.z;
  const ivec3 nch = ivec3(row / p.sizes.y, row % p.sizes.y, h);
  const int count = min(4, p.sizes.w - w);

  const vec4 a = a_chunk(row_base(p.a_strides, nch, w), p.a_strides.w, count);
#if BINARY
  const vec4 b = b_chunk(row_base(p.b_strides, nch, w), p.b_strides.w, count);
#endif
  precise vec4 y;
#if OP == 0
  precise vec4 scaled = p.s0 * b;
  y = a + scaled;
#elif OP == 1
  y = a * b;
#elif OP == 2
  for (int k = 0; k < 4; ++k) y[k] = div_rn(a[k], b[k]);
#elif OP == 3
  precise vec4 scaled = a * p.s0;
  y = scaled + p.s1;
#elif OP >= 5
  for (int k = 0; k < 4; ++k) {
    const float x = a[k];
    // -inf: the reference's -inf * (1 + -1) is NaN; the tanh form's x / (1 + e^80) is not.
    const float g = OP == 5 ? gelu_erf(x) : gelu_tanh(x);
    y[k] = isinf(x) && x < 0.0 ? uintBitsToFloat(0x7fc00000u) : g;
  }
#else
  for (int k = 0; k < 4; ++k) {
    float x = a[k];
    if (!isnan(x)) {
      if (x < p.s0) x = p.s0;
      if (x > p.s1) x = p.s1;
    }
    y[k] = x;
  }
#endif

  const int dst = row_base(p.out_strides, nch, w);
  if (count == 4 && p.out_strides.w == 1 && (dst & 3) == 0) {
    out_floats4[dst >> 2] = y;
  } else {
    for (int k = 0; k < count; ++k) out_floats[dst + k * p.out_strides.w] = y[k];
  }
}
