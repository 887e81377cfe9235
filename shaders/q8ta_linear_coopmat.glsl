// q8ta_linear on int8 cooperative matrices (VK_NV_cooperative_matrix, 16x16x32 int8 x int8 ->
// int32): the same arithmetic as q8ta_linear_gemm.glsl (runtime/ops/Linear.h), the products on
// the tensor cores.
//
// A workgroup of WARPS_M x WARPS_N subgroups of 32 computes a tile of BM = 16 FM WARPS_M rows x
// BN = WN WARPS_N channels (128 x 128, or 128 x 32 with TILE 1; TILE 2 below). K is walked in stages of BKW words (4 int8 each):
// the invocations copy the stage's input blocks (4H4W: 4 rows x 4 K per 16 bytes) and weight
// blocks (4 channels x 4 K) into shared memory as row-major [row][K] and [channel][K] int8
// tiles; subgroup s then multiplies rows 16 FM (s % WARPS_M) .. + 16 FM - 1 with channels
// WN (s / WARPS_M) .. + WN - 1: FM x FN accumulator matrices of 16 x 16 int32 (4 x 2 = 64
// registers per invocation here), BKW / 8 32-deep steps per stage.
//
// Software pipeline: stages s + 1 and s + 2 are in flight in registers while stage s is
// multiplied out of shared buffer s % 2; the barrier after storing stage s also orders every
// read of that buffer (stage s - 2) before the writes, so one barrier per stage suffices (one
// stage ahead measured 190 TOPS at 4096^3 on an H100, two stages ahead 280 TOPS).
// Why shared memory at all: the 4H4W input interleaves 4 rows per 16 bytes, which no strided
// cooperative-matrix load can read, and each staged tile is reused by several subgroups.
// Rows are padded rows and out-of-range channels / K are zero, as in the GEMM kernel; the
// epilogue goes through a per-subgroup 16 x 16 scratch in shared memory so each invocation
// gets whole 4-channel words for linear_common.glslh's store_output.
// Where the time goes (H100, M512 K4096 N4096, one workgroup per SM): without the global
// loads 0.62 us per 64-K stage, without the products 0.58 us, both 0.9 us; the per-stage time
// is the same with 64 workgroups as with 128 (M512 vs M1024 at K=N=2048), so it is per SM, not
// L2 bandwidth. bench_int8_coopmat.glsl takes this loop apart (coopmat_ceiling/* PERF cases):
// fragments from shared 790-1051 TOPS, plus the barrier per stage 666, plus the stage's shared
// stores ~400: the staging round trip itself caps this design near 400 before global latency.
//
// A KHR variant needs only common/coopmat_nv.glslh's types changed (and coopMatLoad / MulAdd
// names) once the toolchain's glslang knows GL_KHR_cooperative_matrix.
// Variants: OUT_DTYPE (0 int8 4H4W, 1 float32 width-packed, 2 int8 + residual add, 3 float32
// with per-row activation scales, 4 float32 + a float32 residual, 5 / 6 int8
// of GELU erf / tanh, 7 int8 column blocks with their own parameters) x
// TILE (the tile shape below: 0 the wide 128 x 128, 1 the narrow 128 x 32, 2 the short 32 x 32
// with K split over 4 subgroups, 3 the same over 8, 4 and 5 those with 16 x 32 tiles).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define VKD_FIXED_LOCAL_SIZE

// Tile shape: a WARPS_M x WARPS_N grid of subgroups, each 16 FM rows x WN channels; BKW K words
// per stage. Sweep on an H100 (TOPS at 4096^3 / M512 K4096 N4096 / M1024 K2048 N2048):
//   2x4, WN 32, BKW 16 (this):      277 / 288 / 245
//   4x2, WN 64, BKW 8:              265 / 160 / 137
//   4x4 (512 invocations), WN 32, BKW 8: 278 / 165 / 147
//   2x4, WN 64, BKW 8:              279 / 162 / 141
//   2x2 (128 invocations), WN 64, BKW 16: 223 / 233 / 193
// Every shape tops out near 280 TOPS; the larger ones only lose workgroups on mid-sized layers.
// Loading one A fragment at a time (fewer live registers) changed nothing measurable.
// Second sweep (vkd_custom_ops --kernel-stats; this kernel: 176 registers, 40 KiB shared, so
// one workgroup per SM):
//   each invocation transposing 4 K words of a row in registers and storing 16-byte vectors
//   (4x fewer shared stores): 162 registers, 240 / 243 / 211 (worse);
//   the same with BKW 8: 128 registers, 24 KiB, two workgroups per SM: 282 / 183 / 169;
//   2x2, WN 64 with vector stores: 255 registers, 182 / 197 / 169.
// Twice the occupancy did not help either, so the ceiling is not latency hiding inside an SM;
// nor is it plainly L2 bandwidth (~2.2 TB/s at 280 TOPS for 128 x 128 tiles): the 256 x 128
// tile of the first sweep (4x4) pulls 25% less per product and also stops at 278. Not yet
// identified; candidates are the shared-memory fragment loads the driver generates for int8
// (to be read from its SASS) and the store -> barrier -> load round trip per stage. Loading the
// B fragments straight from global memory (weights packed [N][K], no B staging) measured
// 85 TOPS: 3.3x slower, so staging both operands stays.
// TILE 1, narrow (few output channels or a short K; runtime/ops/ConvPlan.cpp's narrow_max_*
// with the measurements): 4 x 1 subgroups of 32 rows x 32 channels, a 128 x 32 tile of 128
// invocations: no workgroup multiplies 96 zero channels where N <= 32, and a small layer gets
// 4x the workgroups, each with a quarter of the epilogue.
// TILE 2, short (few rows: a transformer's 128 tokens, where even the narrow grid leaves most
// SMs idle and each workgroup walks all of K one latency-bound stage after another): a 32 x 32
// tile of 4 subgroups, subgroup s multiplying the whole tile over K's stages s, s + 4, ... out
// of its own shared buffers (subgroup barriers only, one stage ahead in registers); then the
// four partial tiles are added up through shared memory and each invocation stores 2 words.
// 16x the narrow grid's workgroups, each with a quarter of its K chain.
// TILE 3, the short tile over 8 subgroups (256 invocations, 40 KiB of shared buffers): each
// with an eighth of K's stages, for grids of few tiles (ConvPlan.cpp's short_split8_max_tiles).
// TILE 4 and 5: TILE 2 and 3 with 16-row tiles (FM 1): twice the workgroups, each with half the
// products and loads of A (the partial tiles go through the B buffers alone). The planner's
// choice for few rows (ConvPlan.cpp's short16_max_rows; measured in docs/BENCHMARKS.md).
#if TILE == 1
#define WARPS_M 4
#define WARPS_N 1
#define FM 2
#elif TILE >= 2
#define WARPS_M 1
#define WARPS_N 1
#if TILE >= 4
#define FM 1
#else
#define FM 2
#endif
#if TILE == 2 || TILE == 4
#define K_SPLIT 4
#else
#define K_SPLIT 8
#endif
#else
#define WARPS_M 2
#define WARPS_N 4
#define FM 4
#endif
#ifndef K_SPLIT
#define K_SPLIT 1
#endif
#define WN 32
#define BKW 16
#define NT (32 * WARPS_M * WARPS_N * K_SPLIT)  // invocations
// Who loads and stores a stage: the workgroup, or (short tile) each subgroup its own.
#define LOADERS (K_SPLIT > 1 ? 32 : NT)
layout(local_size_x = NT, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "coopmat_nv.glslh"
#include "linear_common.glslh"

#define BM (16 * FM * WARPS_M)
#define BN (WN * WARPS_N)
#define STRIDE (BKW + 4)        // shared row stride in words: 16-byte aligned rows, and the +4
                                // spreads the 8 rows of a fragment read over distinct banks
#define FN (WN / 16)
#define A_WORDS (BM * STRIDE)
#define B_WORDS (BN * STRIDE)
#define A_TOTAL (BM / 4 * BKW)  // 16-byte blocks per stage, and per invocation (A_PER, B_PER)
#define B_TOTAL (BN / 4 * BKW)
#define A_PER ((A_TOTAL + LOADERS - 1) / LOADERS)
#define B_PER ((B_TOTAL + LOADERS - 1) / LOADERS)
// Shared buffers: two for the workgroup's stages, or one per subgroup (short tile).
#define BUFFERS (K_SPLIT > 1 ? K_SPLIT : 2)

// [buffer][row][K word] and [buffer][channel][K word], declared as 16-byte vectors so the
// cooperative-matrix loads read whole vectors (offsets and the stride are multiples of 4
// words); the A buffers double as the epilogue's scratch (256 words per subgroup) once the
// products are done. SH(arr, w) is word w of a tile array.
shared uvec4 a_sh[BUFFERS * A_WORDS / 4];
shared uvec4 b_sh[BUFFERS * B_WORDS / 4];
#define SH(arr, w) arr[(w) >> 2][(w) & 3]
#define EPILOGUE_SCRATCH a_sh
#include "coopmat_epilogue.glslh"

// Blocks lid + LOADERS i of a stage: row block / channel group idx / BKW, K word idx % BKW (BKW
// consecutive invocations read one contiguous run).
struct StageBlocks {
  ivec4 a[A_PER];
  ivec4 b[B_PER];
};

StageBlocks load_stage(int rb0, int n40, int lid, int k0) {
  StageBlocks s;
  [[unroll]] for (int i = 0; i < A_PER; ++i) {
    const int idx = lid + LOADERS * i;
    s.a[i] = (A_TOTAL % LOADERS == 0 || idx < A_TOTAL) ? load_input(rb0 + idx / BKW, k0 + idx % BKW) : ivec4(0);
  }
  [[unroll]] for (int i = 0; i < B_PER; ++i) {
    const int idx = lid + LOADERS * i;
    s.b[i] = (B_TOTAL % LOADERS == 0 || idx < B_TOTAL) ? load_weight(n40 + idx / BKW, k0 + idx % BKW) : ivec4(0);
  }
  return s;
}

void store_stage(StageBlocks s, int buf, int lid) {
  [[unroll]] for (int i = 0; i < A_PER; ++i) {
    const int idx = lid + LOADERS * i;
    if (A_TOTAL % LOADERS == 0 || idx < A_TOTAL) {
      [[unroll]] for (int r = 0; r < 4; ++r) {
        SH(a_sh, buf * A_WORDS + (4 * (idx / BKW) + r) * STRIDE + idx % BKW) = s.a[i][r];
      }
    }
  }
  [[unroll]] for (int i = 0; i < B_PER; ++i) {
    const int idx = lid + LOADERS * i;
    if (B_TOTAL % LOADERS == 0 || idx < B_TOTAL) {
      [[unroll]] for (int c = 0; c < 4; ++c) {
        SH(b_sh, buf * B_WORDS + (4 * (idx / BKW) + c) * STRIDE + idx % BKW) = s.b[i][c];
      }
    }
  }
}

// The products of one staged tile: BKW / 8 steps of FM x FN 16 x 16 x 32 products.
void multiply_stage(int buf, int a_frag0, int b_frag0) {
  [[unroll]] for (int kw = 0; kw < BKW; kw += 8) {
    MatA fa[FM];
    MatB fb[FN];
    [[unroll]] for (int i = 0; i < FM; ++i) {
      coopMatLoadNV(fa[i], a_sh, (buf * A_WORDS + a_frag0 + 16 * i * STRIDE + kw) / 4, STRIDE / 4, false);
    }
    [[unroll]] for (int j = 0; j < FN; ++j) {
      // B is K x N; [channel][K] in shared memory is its column-major form.
      coopMatLoadNV(fb[j], b_sh, (buf * B_WORDS + b_frag0 + 16 * j * STRIDE + kw) / 4, STRIDE / 4, true);
    }
    [[unroll]] for (int i = 0; i < FM; ++i) {
      [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
  }
}

#if K_SPLIT > 1
// Subgroup sg's partial BM x 32 tile, row-major int32 (stride BN), in its own shared buffers:
// rows 0-15 over its A buffer, rows 16-31 over its B buffer (each BM x STRIDE >= 16 x BN words;
// FM 1: its 16 rows over the B buffer, 32 x STRIDE words).
#define PARTIAL_WORD(sg, words, row, col) ((sg) * (words) + ((row) % 16) * BN + (col))
#define TILE_WORDS (BM * BN / 4)
#define WORDS_PER_INVOCATION ((TILE_WORDS + NT - 1) / NT)  // output words each invocation stores
// FM 1 (16-row tiles): the partial tiles over the B buffers alone (16 x BN words each).
#if FM == 1
#define PARTIAL_IN_A(row) false
#else
#define PARTIAL_IN_A(row) ((row) < 16)
#endif

void main() {
  const int lane = int(gl_SubgroupInvocationID), sg = int(gl_SubgroupID);
  const int row0 = int(gl_WorkGroupID.y) * BM;
  const int n4_0 = int(gl_WorkGroupID.x) * (BN / 4);
  [[unroll]] for (int i = 0; i < FM; ++i) {
    [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = MatC(0);
  }
  // Invocation lid stores the tile's words lid + NT t (row w / 8, channel group w % 8, below);
  // what their epilogue reads goes out first, in flight with the products.
  const int lid = int(gl_LocalInvocationIndex);
  OutputOperands operands[WORDS_PER_INVOCATION];
  [[unroll]] for (int t = 0; t < WORDS_PER_INVOCATION; ++t) {
    const int w = lid + NT * t;
    operands[t] = load_output_operands(row0 + min(w, TILE_WORDS - 1) / (BN / 4), n4_0 + w % (BN / 4));
  }
  // Stages sg, sg + K_SPLIT, ...: the next one's loads in flight while this one is multiplied.
  StageBlocks next = load_stage(row0 / 4, n4_0, lane, sg * BKW);
  for (int k0 = sg * BKW; k0 < p.k4; k0 += K_SPLIT * BKW) {
    const StageBlocks cur = next;
    if (k0 + K_SPLIT * BKW < p.k4) next = load_stage(row0 / 4, n4_0, lane, k0 + K_SPLIT * BKW);
    subgroupMemoryBarrierShared();  // the previous stage's fragment reads are done
    subgroupBarrier();
    store_stage(cur, sg, lane);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    multiply_stage(sg, 0, 0);
  }
  // The partial tile over this subgroup's own buffers, then every subgroup's.
  subgroupMemoryBarrierShared();
  subgroupBarrier();
  [[unroll]] for (int j = 0; j < FN; ++j) {
#if FM == 1
    coopMatStoreNV(acc[0][j], b_sh, PARTIAL_WORD(sg, B_WORDS, 0, 16 * j) / 4, BN / 4, false);
#else
    coopMatStoreNV(acc[0][j], a_sh, PARTIAL_WORD(sg, A_WORDS, 0, 16 * j) / 4, BN / 4, false);
    coopMatStoreNV(acc[1][j], b_sh, PARTIAL_WORD(sg, B_WORDS, 16, 16 * j) / 4, BN / 4, false);
#endif
  }
  barrier();
  // Invocation lid: the tile's words lid + NT t, each the sum of the K_SPLIT partials.
  [[unroll]] for (int t = 0; t < WORDS_PER_INVOCATION; ++t) {
    const int w = lid + NT * t, row = w / (BN / 4), g = w % (BN / 4);
    if (TILE_WORDS % NT != 0 && w >= TILE_WORDS) break;
    ivec4 sum = ivec4(0);
    [[unroll]] for (int s = 0; s < K_SPLIT; ++s) {
      sum += ivec4(PARTIAL_IN_A(row) ? a_sh[PARTIAL_WORD(s, A_WORDS, row, 4 * g) / 4]
                                     : b_sh[PARTIAL_WORD(s, B_WORDS, row, 4 * g) / 4]);
    }
    const int r = row0 + row, g4 = n4_0 + g;
    if (r < 4 * p.row_blocks && g4 < p.n4) store_output_with(sum, r, g4, operands[t]);
  }
}
#else
void main() {
  const int lid = int(gl_LocalInvocationIndex);
  const int sg = int(gl_SubgroupID);
  const int row0 = int(gl_WorkGroupID.y) * BM;
  const int n4_0 = int(gl_WorkGroupID.x) * (BN / 4);
  const int sub_row0 = 16 * FM * (sg % WARPS_M), sub_col0 = WN * (sg / WARPS_M);
  const int a_frag0 = sub_row0 * STRIDE, b_frag0 = sub_col0 * STRIDE;

  [[unroll]] for (int i = 0; i < FM; ++i) {
    [[unroll]] for (int j = 0; j < FN; ++j) acc[i][j] = MatC(0);
  }

  // Stage s is held in `even` / `odd` (s % 2) until stored into shared buffer s % 2.
  StageBlocks even = load_stage(row0 / 4, n4_0, lid, 0);
  StageBlocks odd = load_stage(row0 / 4, n4_0, lid, BKW);
  for (int k0 = 0; k0 < p.k4; k0 += 2 * BKW) {
    store_stage(even, 0, lid);
    barrier();
    if (k0 + 2 * BKW < p.k4) even = load_stage(row0 / 4, n4_0, lid, k0 + 2 * BKW);
    multiply_stage(0, a_frag0, b_frag0);
    if (k0 + BKW >= p.k4) break;
    store_stage(odd, 1, lid);
    barrier();
    if (k0 + 3 * BKW < p.k4) odd = load_stage(row0 / 4, n4_0, lid, k0 + 3 * BKW);
    multiply_stage(1, a_frag0, b_frag0);
  }

  STORE_ACCUMULATORS();
}
#endif

// Fragment (i, j) of subgroup (sg % WARPS_M, sg / WARPS_M): rows row0 + 16 FM (sg % WARPS_M) +
// 16 i .., channels WN (sg / WARPS_M) + 16 j ..; padded rows past the last row block are not
// stored.
ivec2 output_place(int i, int j, ivec2 slot) {
  const int sg = int(gl_SubgroupID);
  const int r = int(gl_WorkGroupID.y) * BM + 16 * FM * (sg % WARPS_M) + 16 * i + slot.x;
  const int g4 = int(gl_WorkGroupID.x) * (BN / 4) + (WN * (sg / WARPS_M) + 16 * j + slot.y) / 4;
  return ivec2(r < 4 * p.row_blocks ? r : -1, g4);
}
