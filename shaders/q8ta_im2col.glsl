// q8ta_conv2d, im2col route in its explicit form, step 1 of 2 (runtime/ops/Conv2d.cpp): gathers
// the input windows of every output pixel into the int8x4 matrix the linear kernels multiply
// (step 2, add_q8ta_linear_rows_node), rows = output pixels, K = the taps' input channels. The
// matrix's blocks and the gather are common/im2col_gather.glslh's (the implicit form's linear
// kernels gather the same blocks inside their loads).
//
// Invocation = one output block: id = rb * K4 + k4, so neighbouring invocations write
// neighbouring 16-byte blocks (one ivec4 store each, fully coalesced) and read neighbouring
// channel blocks of the same input pixels (4W4C: neighbouring 16-byte input tiles).
// Variants: IM2COL_IN, the input's layout (4W4C or 4C1W).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"

layout(std430, binding = 0) writeonly buffer Out { ivec4 out_blocks[]; };
#include "im2col_gather.glslh"  // binding 1: the convolution's input

// Mirrors Im2colPush in runtime/ops/Conv2d.cpp.
layout(push_constant) uniform Params {
  int blocks;  // output blocks: N * H_out * W4_out * K4
  int k4;      // K4 = KH * KW * C4_in
  Im2colGeometry g;
  int in_zp;
} p;

void main() {
  const int id = int(linear_invocation_id());
  if (id >= p.blocks) return;
  out_blocks[id] = im2col_block(p.g, p.in_zp, id / p.k4, id % p.k4);
}
