// float_reduce: a float32 reduction over one dim of an input [N, C, H, W] (the right-aligned dims
// of a tensor of rank 1 to 4), float buffers of any layout (element strides in push constants):
//   NORM 0 float_sum:         y = x_0 + x_1 + ... + x_{L-1}
//   NORM 1 float_vector_norm: y = sqrt(x_0 * x_0 + ... + x_{L-1} * x_{L-1})
// One invocation per output element adds its L inputs in order along the reduced dim, from
// +0.0, each product and each sum rounded on its own (`precise`), and takes a correctly rounded
// square root (sqrt_rn.glslh): the order and the roundings of the CPU reference interpreter
// (compiler/ops/Reduce.cpp), so the results are its bits wherever the device keeps subnormals.
// The outputs are few (a sentence embedding's pooling: C of them, L = T) and each invocation's
// reads along the reduced dim are, across neighbouring invocations, contiguous along W.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#if NORM
#include "sqrt_rn.glslh"
#endif

layout(set = 0, binding = 0) writeonly buffer OutFloats { float out_floats[]; };
layout(set = 0, binding = 1) readonly buffer InFloats { float in_floats[]; };

layout(push_constant) uniform Params {
  ivec4 sizes;        // N, C, H, W of the input; the reduced dim counts as 1 in the output
  ivec4 in_strides;   // element strides of the input's n, c, h, w
  ivec4 out_strides;  // the output's, 0 along the reduced dim
  int dim;            // the reduced dim: 0 n, 1 c, 2 h, 3 w
  int outputs;        // the output's element count
} p;

void main() {
  const int i = int(linear_invocation_id());
  if (i >= p.outputs) return;
  // The output's coordinates in the input's dims (the reduced one 0), W fastest.
  ivec4 kept = p.sizes;
  kept[p.dim] = 1;
  ivec4 at;
  int rest = i;
  at.w = rest % kept.w;
  rest /= kept.w;
  at.z = rest % kept.z;
  rest /= kept.z;
  at.y = rest % kept.y;
  at.x = rest / kept.y;
  int base = at.x * p.in_strides.x + at.y * p.in_strides.y + at.z * p.in_strides.z +
             at.w * p.in_strides.w;
  const int step = p.in_strides[p.dim];
  precise float acc = 0.0;
  for (int k = 0; k < p.sizes[p.dim]; ++k) {
    const float x = in_floats[base + k * step];
#if NORM
    precise float sq = x * x;
    acc = acc + sq;
#else
    acc = acc + x;
#endif
  }
#if NORM
  acc = sqrt_rn(acc);
#endif
  out_floats[at.x * p.out_strides.x + at.y * p.out_strides.y + at.z * p.out_strides.z +
             at.w * p.out_strides.w] = acc;
}
