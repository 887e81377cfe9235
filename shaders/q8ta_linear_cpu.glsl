// q8ta_linear, the register-tiled GEMM: no shared memory, no barrier (runtime/ops/Linear.h;
// the GEMM route where the device profile has cpu_kernels, i.e. lavapipe, SHARE 1, or
// register_tiled_gemm, GPUs whose shared memory is ordinary cached memory, SHARE 0). How
// llvmpipe runs a compute shader decides its
// shape: a workgroup runs on one thread, each subgroup of 8 invocations as one 8-lane SIMD
// vector; a storage-buffer or shared-memory load whose address is not built from constants and
// push constants alone becomes a loop over the 8 lanes (a scalar load and a bounds check per
// lane and component, ~8 instructions each), and a barrier a coroutine switch. So: no shared
// memory and no barrier, every value loaded once per subgroup and shared by subgroupBroadcast
// (an extract and a splat), and as many multiply-adds per loaded word as the registers allow,
// in plain int32 arithmetic on bytes unpacked once per loaded word (the packed dot product is
// lowered to the same shifts and multiplies, but unpacks both operands for every product).
//
// Invocation = 4 rows (one 4H4W row block, gl_GlobalInvocationID.x) x the workgroup's
// 4 TILE_N4 output channels (channel groups 4 TILE_N4 gl_WorkGroupID.y ..): acc[4 g + j] holds
// channel 4 g + j of the tile for the 4 rows (component = row). Each step covers 8 / TILE_N4
// K blocks: lane l loads the weight block of channel group l % TILE_N4 at K block l / TILE_N4,
// and the 8 blocks reach every lane by broadcast; each lane loads its own input words. Rows
// past the tensor load the last row block and are not stored, so every lane takes part in
// every broadcast.
// Variants: OUT_DTYPE (0 int8 4H4W, 1 float32 width-packed, 2 int8 + a residual add, 3 float32
// with per-row activation scales, 4 float32 + a float32 residual, 5 / 6 int8
// of GELU erf / tanh, 7 int8 column blocks with their own parameters, 8 = 3 with the row
// scales after the rows in binding 1) x
// TILE_N4 (4: 16 channels, for N <= 16; 8: 32 channels, 32 ivec4 accumulators, which measured
// ~20% faster than 16 where N fills them) x
// SHARE: subgroup (1: the 8 weight blocks of a step loaded once per subgroup of 8 and
// broadcast, CPU devices) or loads (0: every invocation loads the 8 blocks itself; no subgroup
// operation, no shared memory, any subgroup size and workgroup: the register-tiled GEMM of
// GPUs where shared memory is ordinary cached memory, Mali (DeviceProfile::register_tiled_gemm),
// whose caches serve the neighbours' same loads).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if SHARE
#extension GL_KHR_shader_subgroup_ballot : require
#endif
#include "common.glslh"

#include "linear_common.glslh"

#define K_STEP (8 / TILE_N4)  // K blocks per step

// Byte b of each component of v, sign-extended.
ivec4 byte_of(ivec4 v, int b) { return (v << (24 - 8 * b)) >> 24; }
int byte_of(int v, int b) { return (v << (24 - 8 * b)) >> 24; }

// The weight block of channel group G of the tile at K block k0 + KK: from the lane that loaded
// it (SHARE 1: lane TILE_N4 KK + G), or loaded here (a group past N4 reads the last real one:
// computed, never stored; a K block past K4 meets the padding's zero weights).
#if SHARE
#define WEIGHT_BLOCK(G, KK) subgroupBroadcast(wq, TILE_N4 * (KK) + (G))
#else
#define WEIGHT_BLOCK(G, KK) w_blocks[weight_block(min(n4_0 + (G), p.n4 - 1), k0 + (KK), p.n4)]
#endif

// acc[4 G + j] += the 4 rows' K bytes xb[0..3] times those of channel 4 G + j, whose word is
// component j of the weight block of group G at the step's K block KK.
#define MAC_GROUP(G, KK)                                                                   \
  {                                                                                        \
    const ivec4 w_ = WEIGHT_BLOCK(G, KK);                                                  \
    [[unroll]] for (int j = 0; j < 4; ++j) {                                               \
      acc[4 * (G) + j] += xb[0] * byte_of(w_[j], 0) + xb[1] * byte_of(w_[j], 1) +          \
                          xb[2] * byte_of(w_[j], 2) + xb[3] * byte_of(w_[j], 3);           \
    }                                                                                      \
  }

// K block k0 + KK of the step: this invocation's input words, then the channel groups' weight
// blocks. A K block past K4 (the step's tail) reads K block K4 - 1 again, which meets the zero
// weights of the padding (linear_weights.glslh: stages of 8).
#define K_BLOCK(KK)                                                                        \
  {                                                                                        \
    const ivec4 x = in_blocks[rb_load * p.k4 + min(k0 + (KK), p.k4 - 1)];                  \
    const ivec4 xb[4] = ivec4[4](byte_of(x, 0), byte_of(x, 1), byte_of(x, 2), byte_of(x, 3)); \
    MAC_GROUP(0, KK)                                                                       \
    MAC_GROUP(1, KK)                                                                       \
    MAC_GROUP(2, KK)                                                                       \
    MAC_GROUP(3, KK)                                                                       \
    MAC_GROUPS_4_TO_7(KK)                                                                  \
  }
#if TILE_N4 == 8
#define MAC_GROUPS_4_TO_7(KK) MAC_GROUP(4, KK) MAC_GROUP(5, KK) MAC_GROUP(6, KK) MAC_GROUP(7, KK)
#else
#define MAC_GROUPS_4_TO_7(KK)
#endif

void main() {
  const int rb = int(gl_GlobalInvocationID.x);
  const int rb_load = min(rb, p.row_blocks - 1);
  const int n4_0 = TILE_N4 * int(gl_WorkGroupID.y);
#if SHARE
  // This lane's weight block of each step: channel group lane % TILE_N4, K block lane /
  // TILE_N4. Channel groups past N4 load the last real group's weights: computed, never stored.
  const int lane = int(gl_SubgroupInvocationID);
  const int w_n4 = min(n4_0 + lane % TILE_N4, p.n4 - 1), w_k = lane / TILE_N4;
#endif

  ivec4 acc[4 * TILE_N4];
  [[unroll]] for (int i = 0; i < 4 * TILE_N4; ++i) acc[i] = ivec4(0);

  for (int k0 = 0; k0 < p.k4; k0 += K_STEP) {
#if SHARE
    const ivec4 wq = w_blocks[weight_block(w_n4, k0 + w_k, p.n4)];
#endif
    K_BLOCK(0)
#if K_STEP == 2
    K_BLOCK(1)
#endif
  }

  if (rb >= p.row_blocks) return;
  // One channel group's 4 stores per iteration, not unrolled: unrolled, the TILE_N4 x 4
  // requantizing stores were most of the code LLVM compiles at the first dispatch (lavapipe,
  // the README example's first process 10.8 -> 2.5 s with Mesa's cache off: its 4 fused-add
  // pipelines took 1.5-1.9 s each). The next group's accumulators then move down to acc[0..3]:
  // constant indices only, so the array stays in registers.
  [[dont_unroll]] for (int g = 0; g < TILE_N4; ++g) {
    const int g4 = n4_0 + g;
    if (g4 >= p.n4) break;
    [[unroll]] for (int i = 0; i < 4; ++i) {
      store_output(ivec4(acc[0][i], acc[1][i], acc[2][i], acc[3][i]), 4 * rb + i, g4);
    }
    [[unroll]] for (int i = 0; i < 4 * TILE_N4 - 4; ++i) acc[i] = acc[i + 4];
  }
}
