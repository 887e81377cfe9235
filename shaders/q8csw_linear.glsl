// q8csw_linear (runtime/ops/Linear.h): float32 input rows x int8 per-channel weights,
// dequantized in the shader, float32 accumulation. The path for devices without the int8 dot
// product when the activations are float, and a reference for the int8 path's speed.
// Invocation i computes 4 output channels (group i % n4) of row i / n4, walking K in order.
#version 450
#extension GL_GOOGLE_include_directive : require
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

void main() {
  const int id = int(linear_invocation_id());
  if (id >= p.rows * p.n4) return;
  const int m = id / p.n4, g4 = id % p.n4;
  vec4 acc = vec4(0.0);
  for (int k4 = 0; k4 < p.k4; ++k4) {
    const ivec4 w = w_blocks[weight_block(g4, k4, p.n4)];
    for (int lane = 0; lane < 4; ++lane) {
      const int kk = 4 * k4 + lane;
      if (kk >= p.k) break;
      const float x = in_floats[m * p.k + kk];
      acc += x * vec4(lane_of(w.x, lane), lane_of(w.y, lane), lane_of(w.z, lane), lane_of(w.w, lane));
    }
  }
  for (int j = 0; j < 4; ++j) {
    const int c = 4 * g4 + j;
    if (c < p.n) {
      out_floats[m * p.n + c] = acc[j] * intBitsToFloat(ch[p.n_pad + c]) + intBitsToFloat(ch[2 * p.n_pad + c]);
    }
  }
}
