// q8csw_linear (runtime/ops/Linear.h): float32 input rows x int8 per-channel weights,
// dequantized in the shader, float32 accumulation. The path for devices without the int8 dot
// product when the activations are float (torchao's Int8WeightOnlyConfig), and a reference for
// the int8 path's speed.
// A workgroup of WG invocations computes ROWS rows x NG channel groups (4 NG channels), K split
// across the workgroup: invocation t walks the K words k4 = t, t + WG, ... (a float4 of each
// row and NG weight words, each used for every row), keeping ROWS x NG vec4 partial sums; a
// shared-memory tree adds them, and invocation r * NG + g writes the 4 channels of group g in
// row r (rows past the tensor repeat the last one, never written):
//   y[m][n] = float32(sum_k x[m][k] * float(qw[n][k])) * s_w[n] + bias[n]
// (the sum in the tree's order: within float32 summation error of any other order).
// Variants: ROWS (1; 4 on CPU devices, the weights read once per 4 rows: runtime/ops/Linear.cpp). One
// invocation per output word walking all of K, as before, took 42.8 us at 1x512 -> 9059 and
// 119.6 us at 128x1536 -> 384 on the H200.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define VKD_FIXED_LOCAL_SIZE
#define WG 64
#define NG 4
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "linear_weights.glslh"

layout(std430, binding = 0) writeonly buffer Out { float out_floats[]; };
layout(std430, binding = 1) readonly buffer In { float in_floats[]; };
// Same prepacked weights as q8ta_linear (linear_weights.glslh).
layout(std430, binding = 2) readonly buffer W { ivec4 w_blocks[]; };
// [unused[n_pad] | floatBits(s_w[n])[n_pad] | floatBits(bias[n])[n_pad]].
layout(std430, binding = 3) readonly buffer Ch { int ch[]; };

layout(push_constant) uniform Params {
  int rows;
  int k;
  int k4;
  int n;
  int n4;
  int n_pad;
} p;

shared vec4 partial[WG][ROWS * NG];

void main() {
  const int t = int(gl_LocalInvocationID.x);
  const int m0 = int(gl_WorkGroupID.y) * ROWS;
  const int g0 = int(gl_WorkGroupID.x) * NG;
  vec4 acc[ROWS * NG];
  [[unroll]] for (int i = 0; i < ROWS * NG; ++i) acc[i] = vec4(0.0);
  for (int k4 = t; k4 < p.k4; k4 += WG) {
    vec4 x[ROWS];
    [[unroll]] for (int r = 0; r < ROWS; ++r) {
      const int base = min(m0 + r, p.rows - 1) * p.k + 4 * k4;
      x[r] = vec4(0.0);
      for (int lane = 0; lane < 4; ++lane) {
        if (4 * k4 + lane < p.k) x[r][lane] = in_floats[base + lane];
      }
    }
    [[unroll]] for (int g = 0; g < NG; ++g) {
      // Groups past n4 read the last one (computed, never written); weights past K are zero.
      const ivec4 w = w_blocks[weight_block(min(g0 + g, p.n4 - 1), k4, p.n4)];
      [[unroll]] for (int lane = 0; lane < 4; ++lane) {
        const vec4 wl = vec4(lane_of(w.x, lane), lane_of(w.y, lane), lane_of(w.z, lane),
                             lane_of(w.w, lane));
        [[unroll]] for (int r = 0; r < ROWS; ++r) acc[r * NG + g] += x[r][lane] * wl;
      }
    }
  }
  [[unroll]] for (int i = 0; i < ROWS * NG; ++i) partial[t][i] = acc[i];
  barrier();
  for (int stride = WG / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      [[unroll]] for (int i = 0; i < ROWS * NG; ++i) partial[t][i] += partial[t + stride][i];
    }
    barrier();
  }
  if (t >= ROWS * NG) return;
  const int m = m0 + t / NG, g4 = g0 + t % NG;
  if (m >= p.rows || g4 >= p.n4) return;
  const vec4 sum = partial[0][t];
  for (int j = 0; j < 4; ++j) {
    const int c = 4 * g4 + j;
    if (c < p.n) {
      precise float scaled = sum[j] * intBitsToFloat(ch[p.n_pad + c]);
      precise float y = scaled + intBitsToFloat(ch[2 * p.n_pad + c]);
      out_floats[m * p.n + c] = y;
    }
  }
}
