// affine_reciprocal: inv[i] = 1 / scale[i], correctly rounded (exact_div.glslh), for
// i < count: what torch computes for `1.0 / scale` on the CPU. Runs before
// q8ta_quantize_affine, over the per-block scales (static or written by choose_qparams_affine).
// Invocation i computes entry i.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "exact_div.glslh"

layout(set = 0, binding = 0) writeonly buffer Inv { float inv[]; };
layout(set = 0, binding = 1) readonly buffer Scales { float scales[]; };

layout(push_constant) uniform Params {
  int count;
} p;

void main() {
  const int i = int(linear_invocation_id());
  if (i >= p.count) return;
  inv[i] = div_rn(1.0, scales[i]);
}
