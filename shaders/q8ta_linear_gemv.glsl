// q8ta_linear for few rows (runtime/ops/Linear.h; the route for M <= 4): memory-bound by design.
//
// A workgroup of WG = 128 invocations computes one row block (4 padded rows) x NG * 4 = 8
// output channels. Invocation t reads input blocks k4 = t, t + WG, ... and, for each of its NG
// channel groups, the weight block (group, k4); the weights are packed channel-major for this
// route (linear_weights.glslh), so a subgroup's loads are one contiguous run per group and a
// workgroup streams 2 contiguous runs of K bytes x 4 channels. Each invocation keeps 4 rows x 8
// channels of partial sums, UNROLL k steps of loads in flight. The sums are reduced across the
// workgroup (SG_REDUCE 1: subgroupAdd, then one partial per subgroup in shared memory; 0: a
// shared-memory tree for devices without subgroup arithmetic), then invocation g * 4 + row
// (< 4 NG) applies the epilogue to the 4 channels of group g in that row and writes them.
// Sweep on an H100 (M1, GB/s of weights over independent copies, 2048^2 / 4096^2 / 4096 x
// 11008; copy peak 2840): WG 64 NG 2 tree 1205 / 1732 / 1703; WG 256 NG 2 subgroup 646 / 1321 /
// 1299; WG 256 NG 1 subgroup 1059 / 1959 / 1987; WG 128 NG 2 subgroup (this) 1573 / 2284 / 2381.
// SG_REDUCE 2 (a short K, where the reduction above costs more than the products: a 1 x 512 ->
// 9059 classifier head is one K block per invocation): each subgroup computes its own NG
// channel groups over the whole K, its lanes walking K with the subgroup's stride, and reduces
// with subgroupAdd alone (no shared memory, no barrier); a workgroup covers NG x its subgroups
// groups, 4x the channels with 32-wide subgroups (runtime/ops/ConvPlan.cpp:
// gemv_per_subgroup says where; subgroups of at least 4 NG lanes).
// Variants: OUT_DTYPE (0 int8 4H4W, 1 float32 width-packed, 2 int8 + residual add, 3 float32
// with per-row activation scales, 4 float32 + a float32 residual, 5 / 6 int8
// of GELU erf / tanh, 7 int8 column blocks with their own parameters, 8 = 3 with the row
// scales after the rows in binding 1) x
// INT8_DOT_FALLBACK x SG_REDUCE.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define VKD_FIXED_LOCAL_SIZE
#define WG 128
#define NG 2
#define UNROLL 4
#if SG_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#if SG_REDUCE == 2
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "int8_dot.glslh"

#include "linear_common.glslh"

#if SG_REDUCE != 2
// [invocation][g * 4 + row]: 4 channels of one row.
shared ivec4 partial[WG][NG * 4];
#endif

// acc[g * 4 + row] += the 4 channels' dot products of input row `row` (one K word each).
void accumulate(inout ivec4 acc[NG * 4], int g, ivec4 x, ivec4 w) {
  [[unroll]] for (int row = 0; row < 4; ++row) {
    acc[g * 4 + row] += dot_int8x4_each(x[row], w);
  }
}

#if SG_REDUCE == 2
// The subgroup's totals of the 8 = NG * 4 words, scattered: lane l gets word (l / (lanes / 8)) % 8
// (each word's total lands in lanes / 8 lanes). Three halving steps over lane bits lanes / 2,
// lanes / 4, lanes / 8 (each lane keeps the half its bit selects and adds its partner's copy of
// that half: 4 + 2 + 1 words shuffled), then plain butterfly adds over the lower bits: 7 +
// log2(lanes / 8) shuffles of a word instead of subgroupAdd's 8 log2(lanes).
ivec4 reduce_scatter(ivec4 acc[NG * 4], int lane, int lanes) {
  ivec4 v4[4], v2[2];
  bool hi = (lane & (lanes / 2)) != 0;
  [[unroll]] for (int i = 0; i < 4; ++i) {
    v4[i] = (hi ? acc[i + 4] : acc[i]) + subgroupShuffleXor(hi ? acc[i] : acc[i + 4], lanes / 2);
  }
  hi = (lane & (lanes / 4)) != 0;
  [[unroll]] for (int i = 0; i < 2; ++i) {
    v2[i] = (hi ? v4[i + 2] : v4[i]) + subgroupShuffleXor(hi ? v4[i] : v4[i + 2], lanes / 4);
  }
  hi = (lane & (lanes / 8)) != 0;
  ivec4 v = (hi ? v2[1] : v2[0]) + subgroupShuffleXor(hi ? v2[0] : v2[1], lanes / 8);
  for (int m = lanes / 16; m >= 1; m /= 2) v += subgroupShuffleXor(v, m);
  return v;
}

void main() {
  const int lane = int(gl_SubgroupInvocationID), lanes = int(gl_SubgroupSize);
  const int rb = int(gl_WorkGroupID.y);
  const int n4_0 = (int(gl_WorkGroupID.x) * int(gl_NumSubgroups) + int(gl_SubgroupID)) * NG;
  if (n4_0 >= p.n4) return;  // a whole subgroup past N (no barrier follows)
  // The word this lane will hold (reduce_scatter): group `word / 4`, row `word % 4`; what its
  // epilogue reads (constants, residual) is loaded now, in flight with the products' loads.
  const int word = (lane / (lanes / 8)) % 8, g4 = n4_0 + word / 4;
  const OutputOperands out_operands = load_output_operands(rb * 4 + word % 4, g4);

  ivec4 acc[NG * 4];
  [[unroll]] for (int i = 0; i < NG * 4; ++i) acc[i] = ivec4(0);
  int g4s[NG];
  [[unroll]] for (int g = 0; g < NG; ++g) g4s[g] = min(n4_0 + g, p.n4 - 1);
  // UNROLL steps per iteration, every load issued unconditionally: a step past K reads this
  // lane's first word again with a zero input (adding nothing), so a K that is not a multiple
  // of UNROLL x lanes (384: 3 words a lane) keeps all its loads in flight at once.
  for (int k = lane; k < p.k4; k += UNROLL * lanes) {
    ivec4 x[UNROLL], w[UNROLL][NG];
    [[unroll]] for (int u = 0; u < UNROLL; ++u) {
      const bool in_k = k + u * lanes < p.k4;
      const int ku = in_k ? k + u * lanes : k;
      x[u] = in_blocks[rb * p.k4 + ku];
      if (!in_k) x[u] = ivec4(0);
      [[unroll]] for (int g = 0; g < NG; ++g) w[u][g] = w_blocks[weight_block_channel_major(g4s[g], ku, p.k4)];
    }
    [[unroll]] for (int u = 0; u < UNROLL; ++u) {
      [[unroll]] for (int g = 0; g < NG; ++g) accumulate(acc, g, x[u], w[u][g]);
    }
  }
  // The first of the lanes holding each word stores it.
  const ivec4 total = reduce_scatter(acc, lane, lanes);
  if (lane % (lanes / 8) == 0 && g4 < p.n4) store_output_with(total, rb * 4 + word % 4, g4, out_operands);
}
#else
void main() {
  const int t = int(gl_LocalInvocationID.x);
  const int rb = int(gl_WorkGroupID.y);
  const int n4_0 = int(gl_WorkGroupID.x) * NG;

  ivec4 acc[NG * 4];
  [[unroll]] for (int i = 0; i < NG * 4; ++i) acc[i] = ivec4(0);
  // Channel groups past n4 repeat the last one (computed, never written).
  int g4s[NG];
  [[unroll]] for (int g = 0; g < NG; ++g) g4s[g] = min(n4_0 + g, p.n4 - 1);
  // UNROLL steps of the k walk per iteration, loads first: more bytes in flight per invocation
  // is what a memory-bound loop needs.
  int k = t;
  for (; k + (UNROLL - 1) * WG < p.k4; k += UNROLL * WG) {
    ivec4 x[UNROLL], w[UNROLL][NG];
    [[unroll]] for (int u = 0; u < UNROLL; ++u) {
      x[u] = in_blocks[rb * p.k4 + k + u * WG];
      [[unroll]] for (int g = 0; g < NG; ++g) w[u][g] = w_blocks[weight_block_channel_major(g4s[g], k + u * WG, p.k4)];
    }
    [[unroll]] for (int u = 0; u < UNROLL; ++u) {
      [[unroll]] for (int g = 0; g < NG; ++g) accumulate(acc, g, x[u], w[u][g]);
    }
  }
  for (; k < p.k4; k += WG) {
    const ivec4 x = in_blocks[rb * p.k4 + k];
    [[unroll]] for (int g = 0; g < NG; ++g) accumulate(acc, g, x, w_blocks[weight_block_channel_major(g4s[g], k, p.k4)]);
  }
#if SG_REDUCE
  [[unroll]] for (int i = 0; i < NG * 4; ++i) acc[i] = subgroupAdd(acc[i]);
  if (subgroupElect()) {
    [[unroll]] for (int i = 0; i < NG * 4; ++i) partial[gl_SubgroupID][i] = acc[i];
  }
  barrier();
  if (t < NG * 4) {
    for (int s = 1; s < int(gl_NumSubgroups); ++s) partial[0][t] += partial[s][t];
  }
#else
  for (int i = 0; i < NG * 4; ++i) partial[t][i] = acc[i];
  barrier();
  for (int stride = WG / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      for (int i = 0; i < NG * 4; ++i) partial[t][i] += partial[t + stride][i];
    }
    barrier();
  }
#endif
  if (t >= NG * 4) return;

  const int g = t / 4, row_lane = t % 4;
  const int g4 = n4_0 + g;
  if (g4 >= p.n4) return;
  store_output(partial[0][t], rb * 4 + row_lane, g4);
}
#endif
