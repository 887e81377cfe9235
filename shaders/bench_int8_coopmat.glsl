// bench_int8_coopmat: int8 cooperative-matrix throughput (VK_NV_cooperative_matrix, 16x16x32
// int8 x int8 -> int32), the ceilings that q8ta_linear_coopmat.glsl's PERF ratios are read
// against. One product = 16 * 16 * 32 multiply-adds = 16384 ops. Every form stores, per
// subgroup, the sum of its accumulators: 8 * iterations * (A * B), wrapping, which the ACCU cases
// check (so nothing is dead code).
//
// SOURCE 0 (registers): each subgroup loads one A (16 x 32) and one B (32 x 16) fragment and
//   advances 8 independent accumulators acc[i] = A * B + acc[i]; 8 chains keep the tensor cores
//   busy while each product waits for the previous one of its chain. The tensor-core ceiling.
// SOURCE 1 (shared): q8ta_linear_coopmat.glsl's inner loop alone: per iteration each subgroup
//   loads FM A and FN B fragments from a staged 128 x 64 int8 tile pair (the kernel's strides
//   and offsets) and does the FM x FN products. The ceiling with fragments from shared memory.
// SOURCE 2 (staged): SOURCE 1 plus what the kernel adds per 64-deep stage (every 2 iterations):
//   each invocation's 16 scalar stores of the next stage into the other buffer (values read
//   from `data`, so they are the same as what is there) and one workgroup barrier.
// Every staged fragment is a copy of the same A / B, so each product is A * B.
// H100 (driver 580), TOPS: registers 1259; shared 790 (1051 from an earlier build of the same
// loop: the driver's schedule for it is sensitive to small source changes); shared plus only the
// barrier per stage 666; staged 385-402 (with a `shared uint` tile instead of uvec4: 437;
// 16-byte vector stores: 375; the stores right after the barrier instead of before it: 421).
// The kernel itself, whose stages come from global memory, runs at 282 at 4096^3.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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

#if SOURCE == 0
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

#else
// The kernel's tiling: 2 x 4 subgroups, each 64 rows (FM = 4) x 32 channels (FN = 2); two
// buffers of 128 rows / channels x BKW K words, rows STRIDE words apart.
#define FM 4
#define FN 2
#define BKW 16
#define STRIDE (BKW + 4)
#define TILE_WORDS (128 * STRIDE)
shared uvec4 a_sh[2 * TILE_WORDS / 4];
shared uvec4 b_sh[2 * TILE_WORDS / 4];
#define SH(arr, w) arr[(w) >> 2][(w) & 3]

// Word w of row (or channel) `row` in either buffer: word w % 8 of fragment row row % 16.
int a_word(int row, int w) { return data[(row % 16) * 8 + w % 8]; }
int b_word(int row, int w) { return data[128 + (row % 16) * 8 + w % 8]; }

void main() {
  const int lid = int(gl_LocalInvocationIndex);
  const int sg = int(gl_SubgroupID);
  for (int i = lid; i < 2 * TILE_WORDS / 4; i += 256) {
    const int row = (4 * i % TILE_WORDS) / STRIDE, w0 = (4 * i % TILE_WORDS) % STRIDE;
    ivec4 a, b;
    [[unroll]] for (int c = 0; c < 4; ++c) {
      a[c] = a_word(row, w0 + c);
      b[c] = b_word(row, w0 + c);
    }
    a_sh[i] = uvec4(a);
    b_sh[i] = uvec4(b);
  }
  barrier();

  const int a_frag0 = 64 * (sg % 2) * STRIDE, b_frag0 = 32 * (sg / 2) * STRIDE;
  MatC acc[FM][FN];
  [[unroll]] for (int i = 0; i < FM; ++i) {
    [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = MatC(0);
  }
  for (int it = 0; it < p.iterations; ++it) {
    // The kernel's four 32-deep steps: buffer (it / 2) % 2, K words 8 (it % 2) ..
    const int off = (it & 2) / 2 * TILE_WORDS + (it & 1) * 8;
#if SOURCE == 2
    if ((it & 1) == 0) {
      // store_stage: rows 4 (idx / BKW) .. + 3, word idx % BKW of the other buffer.
      const int other = TILE_WORDS - off;
      [[unroll]] for (int i = 0; i < 2; ++i) {
        const int idx = lid + 256 * i;
        [[unroll]] for (int r = 0; r < 4; ++r) {
          const int row = 4 * (idx / BKW) + r, w = idx % BKW;
          SH(a_sh, other + row * STRIDE + w) = a_word(row, w);
          SH(b_sh, other + row * STRIDE + w) = b_word(row, w);
        }
      }
      barrier();
    }
#endif
    MatA fa[FM];
    MatB fb[FN];
    [[unroll]] for (int i = 0; i < FM; ++i) {
      coopMatLoadNV(fa[i], a_sh, (off + a_frag0 + 16 * i * STRIDE) / 4, STRIDE / 4, false);
    }
    [[unroll]] for (int j = 0; j < FN; ++j) {
      coopMatLoadNV(fb[j], b_sh, (off + b_frag0 + 16 * j * STRIDE) / 4, STRIDE / 4, true);
    }
    [[unroll]] for (int i = 0; i < FM; ++i) {
      [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
  }
  [[unroll]] for (int i = 0; i < FM; ++i) {
    [[unroll]] for (int j = 0; j < FN; ++j) {
      if (i + j > 0) acc[0][0] += acc[i][j];
    }
  }
  const uint subgroup = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
  coopMatStoreNV(acc[0][0], data, 256 + 256 * subgroup, 16, false);
}
#endif
