// q8ta_linear, tiled GEMM (runtime/ops/Linear.h): int8x4 input rows (4H4W) x int8 weights,
// int32 accumulation with the packed int8 dot product.
//
// A workgroup of 16 x 16 invocations computes a tile of BM = 16 * ROWS rows x BN = 128 output
// channels. K is walked in stages of BK4 = 8 words (32 K values): each invocation copies one
// 16-byte block of the input tile and one of the weight tile into shared memory, then every
// invocation (tx, ty) multiplies rows ty + 16 i (i < ROWS) with channels 4 tx .. 4 tx + 3 and
// 64 + 4 tx .. 64 + 4 tx + 3: 2 * ROWS ivec4 accumulators. Interleaving the rows by 16 keeps the
// shared-memory reads of a subgroup on distinct banks or broadcasts; channels are grouped by 4
// because an output word holds 4 channels of one row.
// Register budget: ROWS = 8 gives 64 int32 accumulators + 8 input words + 8 weight words per
// invocation (~90 registers on NVIDIA, two workgroups per SM).
//
// Rows are "padded rows": the input's 4H4W blocks pad each batch's H to a multiple of 4; a
// padded row r is batch r / (4 H4), row r % (4 H4), real when that is < H. Padded rows and
// channels >= N are computed (the weights are zero there) but written as the output zero point
// (int8) or not written (float).
// Variants: OUT_DTYPE (0 int8 4H4W, 1 float32 width-packed, 2 int8 + residual add, 3 float32
// with per-row activation scales, 4 float32 + a float32 residual, 5 / 6 int8
// of GELU erf / tanh, 7 int8 column blocks with their own parameters, 8 = 3 with the row
// scales after the rows in binding 1) x
// INT8_DOT_FALLBACK x SPLIT_K.
//
// K slices (the split-K route, LinearRoute::SplitK: few output tiles, a long K): the grid's z
// dimension splits K's stages into gl_NumWorkGroups.z consecutive ranges of equal length (the
// last may be shorter); workgroup (x, y, z) multiplies its tile over range z only (z count 1:
// the whole K, the plain kernel). With SPLIT_K the workgroup then adds its int32 partial sums
// into the tile's words of the scratch buffer (atomics: exact in any order) and counts its
// arrival in the tile's counter; the workgroup that arrives last finds every other range's sums
// in the scratch (each workgroup's memoryBarrierBuffer orders its sums before its arrival), takes
// the totals, leaving the words at zero for the next execution, resets the counter and runs
// the normal epilogue: the same arithmetic on the same int32 sums as without slices, so the
// bytes are identical. Every scratch access is atomic, so no cache holds a stale copy (the
// scheme of q8ta_mean's STAGE_SLICES).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define VKD_FIXED_LOCAL_SIZE
layout(local_size_x = 16, local_size_y = 16, local_size_z = 1) in;
#include "common.glslh"
#include "int8_dot.glslh"

#define ROWS 8
#define BM (16 * ROWS)
#define BN 128
#define BK4 8

#include "linear_common.glslh"

// COMPACT (specialization constant 7, the device profile's compact_kernels): a stage's 8 steps
// and the 8 rows' stores as loops instead of unrolled. lavapipe compiles the kernel with LLVM
// at its first dispatch: 1.35 s unrolled (512 dot products per stage), 0.43 s compact, and the
// same run time (the README example on 2 cores).
layout(constant_id = 7) const bool COMPACT = false;

// Step kk of a stage: rows ty + 16 i times channels 4 tx .. 4 tx + 3 and 64 + 4 tx .. 64 + 4 tx
// + 3, one int8 dot product per row, channel and 4 K values.
#define STAGE_STEP(kk)                                                                         \
  {                                                                                            \
    const ivec4 w_lo = b_tile[kk][tx], w_hi = b_tile[kk][tx + 16];                             \
    [[unroll]] for (int i = 0; i < ROWS; ++i) {                                                \
      const int x = a_tile[kk][ty + 16 * i];                                                   \
      acc_lo[i] += dot_int8x4_each(x, w_lo);                                                   \
      acc_hi[i] += dot_int8x4_each(x, w_hi);                                                   \
    }                                                                                          \
  }
// The outputs of row ty + 16 i.
#define STORE_ROW(i)                                                                           \
  {                                                                                            \
    const int r = row0 + ty + 16 * i;                                                          \
    if (r >= 4 * p.row_blocks) break;                                                          \
    for (int half_ = 0; half_ < 2; ++half_) {                                                  \
      const int g4 = n4_0 + tx + 16 * half_;                                                   \
      if (g4 < p.n4) store_output(half_ == 0 ? acc_lo[i] : acc_hi[i], r, g4);                  \
    }                                                                                          \
  }

shared int a_tile[BK4][BM];     // [k4][row]: one word = 4 K values of one row
shared ivec4 b_tile[BK4][BN / 4];  // [k4][n4]: 4 channels' words

#if SPLIT_K
// After the bindings of linear_common.glslh (the residual's or the row scales' at 4). Word
// (r * 4 + j) * n4 + g4 holds the sum so far of padded row r, channel 4 g4 + j (consecutive tx
// of a subgroup on consecutive words); after the 4 row_blocks * n_pad sums, one arrival counter
// per tile (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x). Zero-filled by the host
// (runtime/ops/Linear.cpp) and left at zero by each execution's last workgroup of each tile.
#if BINDING_4_TAKEN
#define PARTIAL_BINDING 5
#else
#define PARTIAL_BINDING 4
#endif
layout(std430, binding = PARTIAL_BINDING) coherent buffer Partial { int partial[]; };
shared bool is_last_slice;

int partial_word(int r, int g4, int j) { return (r * 4 + j) * p.n4 + g4; }

// Adds the tile's real rows and channels of `acc` (row ty + 16 i, half h) into the scratch; or,
// with `take`, replaces them by the scratch's totals, leaving zeros there.
#define PARTIAL_ROW(i, take)                                                                   \
  {                                                                                            \
    const int r = row0 + ty + 16 * i;                                                          \
    if (r < 4 * p.row_blocks) {                                                                \
      for (int half_ = 0; half_ < 2; ++half_) {                                                \
        const int g4 = n4_0 + tx + 16 * half_;                                                 \
        if (g4 >= p.n4) continue;                                                              \
        ivec4 v = half_ == 0 ? acc_lo[i] : acc_hi[i];                                          \
        for (int j = 0; j < 4; ++j) {                                                          \
          if (take) v[j] = atomicExchange(partial[partial_word(r, g4, j)], 0);                 \
          else atomicAdd(partial[partial_word(r, g4, j)], v[j]);                               \
        }                                                                                      \
        if (half_ == 0) acc_lo[i] = v; else acc_hi[i] = v;                                     \
      }                                                                                        \
    }                                                                                          \
  }
#endif

void main() {
  const int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
  const int lid = ty * 16 + tx;
  const int row0 = int(gl_WorkGroupID.y) * BM;
  const int n4_0 = int(gl_WorkGroupID.x) * (BN / 4);

  ivec4 acc_lo[ROWS], acc_hi[ROWS];
  [[unroll]] for (int i = 0; i < ROWS; ++i) {
    acc_lo[i] = ivec4(0);
    acc_hi[i] = ivec4(0);
  }

  // This invocation's copy duties: input block (row block a_rb, k4 a_k) and weight block
  // (channel group b_n4, k4 b_k) of each stage.
  const int a_rb = lid / BK4, a_k = lid % BK4;
  const int b_n4 = lid / BK4, b_k = lid % BK4;
  const int g_rb = row0 / 4 + a_rb, g_n4 = n4_0 + b_n4;

  // Software pipelining: the next stage's blocks are loaded into registers before this stage's
  // products, so their memory latency hides behind the arithmetic (one workgroup per SM cannot
  // hide it otherwise; without this a 2048-deep K ran at the same speed for 256 and 1024 rows).
  // This workgroup's K range: stages [z * per_slice, (z + 1) * per_slice) (all of K with one
  // slice). Only the last range can end off a stage boundary, where load_* give zeros past K.
  const int per_slice = div_up(div_up(p.k4, BK4), int(gl_NumWorkGroups.z));
  const int k_begin = int(gl_WorkGroupID.z) * per_slice * BK4;
  const int k_end = min(p.k4, k_begin + per_slice * BK4);
  ivec4 a = load_input(g_rb, k_begin + a_k);
  ivec4 b = load_weight(g_n4, k_begin + b_k);
  for (int k0 = k_begin; k0 < k_end; k0 += BK4) {
    barrier();  // the previous stage's reads are done
    [[unroll]] for (int i = 0; i < 4; ++i) a_tile[a_k][a_rb * 4 + i] = a[i];
    b_tile[b_k][b_n4] = b;
    barrier();
    if (k0 + BK4 < k_end) {
      a = load_input(g_rb, k0 + BK4 + a_k);
      b = load_weight(g_n4, k0 + BK4 + b_k);
    }
    if (COMPACT) {
      [[dont_unroll]] for (int kk = 0; kk < BK4; ++kk) STAGE_STEP(kk)
    } else {
      [[unroll]] for (int kk = 0; kk < BK4; ++kk) STAGE_STEP(kk)
    }
  }

#if SPLIT_K
  [[unroll]] for (int i = 0; i < ROWS; ++i) PARTIAL_ROW(i, false)
  memoryBarrierBuffer();  // this invocation's sums before the arrival below
  barrier();              // every invocation's
  if (lid == 0) {
    const int counter = 4 * p.row_blocks * p.n_pad +
                        int(gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x);
    is_last_slice = atomicAdd(partial[counter], 1) == int(gl_NumWorkGroups.z) - 1;
    if (is_last_slice) atomicExchange(partial[counter], 0);
    memoryBarrierBuffer();  // every range's arrival (and so its sums) before the reads below
  }
  barrier();
  if (!is_last_slice) return;
  [[unroll]] for (int i = 0; i < ROWS; ++i) PARTIAL_ROW(i, true)
#endif

  if (COMPACT) {
    [[dont_unroll]] for (int i = 0; i < ROWS; ++i) STORE_ROW(i)
  } else {
    [[unroll]] for (int i = 0; i < ROWS; ++i) STORE_ROW(i)
  }
}
