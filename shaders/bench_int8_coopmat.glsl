// bench_int8_coopmat: register-resident int8 cooperative-matrix throughput (VK_NV_cooperative_
// matrix, 16x16x32 int8 x int8 -> int32), the tensor-core ceiling for the cooperative-matrix
// kernels' PERF ratios. Each subgroup loads one A (16 x 32) and one B (32 x 16) fragment and
// advances 8 independent accumulators acc[i] = A * B + acc[i], `iterations` times; 8 chains keep
// the tensor cores busy while each product waits for the previous one of its chain. One
// product = 16 * 16 * 32 multiply-adds = 16384 ops. The sum of the accumulators is stored so
// nothing is dead code (and so an ACCU case can check it: 8 * iterations * A * B, wrapping).
#version 450
#extension GL_GOOGLE_include_directive : require
#define VKD_FIXED_LOCAL_SIZE
layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "coopmat_nv.glslh"

// Words 0..127: A, row-major 16 x 32 int8 (8 words per row); 128..255: B, column-major
// (8 words per column). From 256: one 16 x 16 int32 result per subgroup, row-major.
layout(set = 0, binding = 0) buffer Data { int data[]; };

layout(push_constant) uniform Params {
  int iterations;
} p;

#define CHAINS 8

void main() {
  MatA a;
  MatB b;
  coopMatLoadNV(a, data, 0, 8, false);
  coopMatLoadNV(b, data, 128, 8, true);
  MatC acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i) acc[i] = MatC(0);
  for (int it = 0; it < p.iterations; ++it) {
    for (int i = 0; i < CHAINS; ++i) acc[i] = coopMatMulAddNV(a, b, acc[i]);
  }
  for (int i = 1; i < CHAINS; ++i) acc[0] += acc[i];
  const uint subgroup = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  coopMatStoreNV(acc[0], data, 256 + 256 * subgroup, 16, false);
}
