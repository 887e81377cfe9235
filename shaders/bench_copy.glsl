// bench_copy: streaming copy, the device's memory-bandwidth ceiling for PERF ratios.
// Invocation i copies ivec4 words i, i + stride, i + 2*stride, ... (a grid-stride loop keeps
// the dispatch small while every load is a coalesced 16-byte access).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Dst { ivec4 dst[]; };
layout(set = 0, binding = 1) readonly buffer Src { ivec4 src[]; };

layout(push_constant) uniform Params {
  uint count;   // ivec4 elements to copy
  uint stride;  // total invocations of the dispatch
} p;

void main() {
  for (uint i = linear_invocation_id(); i < p.count; i += p.stride) dst[i] = src[i];
}
