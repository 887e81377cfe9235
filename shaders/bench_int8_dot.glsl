// bench_int8_dot: register-resident int8 dot-product throughput, the compute ceiling for PERF
// ratios. Every invocation runs `iterations` rounds of 16 independent OpSDot + int32 add chains
// (enough independent work to hide the instruction latency) on values loaded once, then
// writes one word so the compiler cannot drop the loop. One OpSDot = 4 MACs = 8 ops.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "int8_dot.glslh"

layout(set = 0, binding = 0) buffer Data { int data[]; };

layout(push_constant) uniform Params {
  int iterations;
} p;

void main() {
  const uint id = linear_invocation_id();
  int a[4], b[4], acc[16];
  for (int i = 0; i < 4; ++i) {
    a[i] = data[(id + i) & 1023];
    b[i] = data[(id * 7 + i) & 1023];
  }
  for (int i = 0; i < 16; ++i) acc[i] = 0;
  for (int it = 0; it < p.iterations; ++it) {
    // 4 rounds per iteration keep loop and perturbation overhead below 4% of the issue slots.
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 16; ++i) acc[i] += dot_int8x4(a[i & 3], b[i >> 2]);
    }
    // Change the operands so the products are not loop-invariant.
    a[0] += 0x01010101;
    b[1] += 0x01030107;
  }
  int sum = 0;
  for (int i = 0; i < 16; ++i) sum += acc[i];
  data[1024 + id] = sum;
}
