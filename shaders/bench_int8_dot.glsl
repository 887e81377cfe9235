// bench_int8_dot: register-resident int8 dot-product throughput, the compute ceiling for PERF
// ratios. Every invocation advances 32 independent chains acc[i] += dot(acc[i], b[i % 4]):
// each step's operand is the previous step's result, so the compiler can neither hoist a dot
// out of the loop nor merge two of them, while 32 chains per invocation hide the latency.
// 4 * `iterations` steps per chain; one OpSDot = 4 MACs = 8 ops (the add is the accumulate).
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
  int b[4], acc[32];
  for (int i = 0; i < 4; ++i) b[i] = data[(id * 7 + i) & 1023];
  for (int i = 0; i < 32; ++i) acc[i] = data[(id + i) & 1023];
  for (int it = 0; it < p.iterations; ++it) {
    for (int step = 0; step < 4; ++step) {
      for (int i = 0; i < 32; ++i) acc[i] += dot_int8x4(acc[i], b[i & 3]);
    }
  }
  int sum = 0;
  for (int i = 0; i < 32; ++i) sum += acc[i];
  data[1024 + id] = sum;
}
