// float_masked_mean: sentence-transformers' pooling of hidden states x [B, T, C] with a token
// mask m [B, T] (any float32 values, 1 = token, 0 = padding), in one dispatch:
//   mean[b, c] = (sum_t x[b, t, c] * m[b, t]) / max(sum_t m[b, t], mask_min)
//   NORMALIZE 0 (float_masked_mean, q8ta_masked_mean):  y = mean
//   NORMALIZE 1 (..._normalize, F.normalize(p=2, dim=1)):
//     y[b, c] = mean[b, c] / max(sqrt(sum_c mean[b, c]^2), eps)
// x float32 from a float buffer (INPUT 0), or int8 in a packed layout (INPUT the layout)
// dequantized as float32(q - zero_point) * scale. The bits are those of the CPU reference
// interpreter running the unfused ops one by one (dq, mul, sum, sum, clamp, div;
// linalg_vector_norm, clamp_min, div; compiler/ops/Reduce.cpp): every sum from +0.0 in order
// along its dim (t for the mean, c for the norm), each product, sum and quotient rounded once
// (`precise`, div_rn), the square root correctly rounded (sqrt_rn), clamps passing NaN.
// STAGED 1 (GPUs). The sums are sequential along t, so with an invocation walking its channel's
// tokens the kernel was T / 8 rounds of memory latency per channel (MiniLM's [1, 128, 384] int8:
// 37-43 us on an H200, 6% of the model). The loads and the products x * m do not depend on the
// sums, so the whole workgroup issues them together and only the adds stay in order:
// - A workgroup (512 invocations where the device allows: runtime/ops/Reduce.cpp) pools batch
//   row b (gl_WorkGroupID.x) over blocks of p.block channels (<= the workgroup): every
//   block of the row (NORMALIZE 1: the norm needs all the means in one workgroup), else block
//   gl_WorkGroupID.y (plain means: more workgroups share the loads).
// - A block's tokens go in chunks of `tokens` tokens x its cb channels, at most LOADS * wg
//   elements: invocation l loads and multiplies the chunk's elements l, l + wg, ... (element e:
//   token e / cb, channel e % cb; neighbouring invocations read neighbouring channels) into
//   registers, stores them in shared memory, then issues the NEXT chunk's loads, which are in
//   flight while invocation l < cb adds its channel's values of this chunk in token order.
//   One round of memory latency per chunk, not per token.
// - NORMALIZE 1: a block's means go to staged[c0 ..], below the staging area of the later
//   blocks (which starts at their first channel, so MAX_CHANNELS floats hold both).
// - A 4H4W int8 input whose mask fits after the C means (p.channel_chains 1): no chunks; each channel's
//   invocation loads its 16-byte token blocks ahead of its adds (chain_means below).
// STAGED 0 (CPU devices: one thread runs the workgroup, barriers are coroutine switches and
// there is no latency to hide; staged took 1.0 ms on lavapipe at MiniLM's shape, this 0.2 ms): invocation l walks the
// channels l, l + wg, ... itself, TOKEN_BLOCK tokens' loads at a time, then adds them in order.
// Both: the token count in order from +0.0 (STAGED: from the mask staged in shared memory;
// STAGED 0: TOKEN_BLOCK mask loads at a time); the means of NORMALIZE 1 in staged[c], whose
// squares invocation 0 sums in channel order for the norm it hands to the others.
// NORMALIZE 2 (the float_masked_mean_rows family): the normalization alone, of means [B, C] a
// plain float_masked_mean wrote into binding 1 (INPUT 0), read where NORMALIZE 1 reads
// staged[c]: the way down of a row too wide for the device's staging area
// (runtime/ops/Reduce.cpp), with the same bits. Its mask binding is the means again, unread.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"
#include "exact_div.glslh"  // div_rn
#include "requant.glslh"    // dequantized_lane
#if NORMALIZE
#include "sqrt_rn.glslh"
#endif

layout(set = 0, binding = 0) writeonly buffer OutFloats { float out_floats[]; };
#if INPUT == 0
layout(set = 0, binding = 1) readonly buffer InFloats { float in_floats[]; };
#else
#define TILE_LAYOUT INPUT
#define TILE_BINDING 1
#define TILE_QUALIFIER readonly
#define TILE_FN(x) in_##x
#define TILE_LOAD
#include "int8x4_tile.glslh"
#endif
layout(set = 0, binding = 2) readonly buffer MaskFloats { float mask_floats[]; };

// The widest hidden size pooled (the runtime checks C against it; a normalized row's means must
// also fit the staging area). The staging area (STAGED) is STAGE_FLOATS floats, as much as
// LOADS per invocation fill where the device has the shared memory (less the two scalars below)
// (runtime/ops/Reduce.cpp: on an H200 32 tokens of 384 channels a chunk, 4 chunks at T = 128).
#define MAX_CHANNELS 4096
#define TOKEN_BLOCK 8
#define LOADS 24
layout(constant_id = 3) const int STAGE_FLOATS = MAX_CHANNELS;

layout(push_constant) uniform Params {
  ivec4 sizes;       // 1, B, T, C of the input
  ivec4 in_strides;  // float input: element strides of (unused), b, t, c
  ivec4 strides;     // the mask's b, t; the output's b, c
  float mask_min;    // the token count's lower bound (clamp(min=...))
  float eps;         // the norm's lower bound (F.normalize's clamp_min)
  float scale;       // int8 input: its dequantization
  int zero_point;
  int block;   // channels per block (<= the workgroup size)
  int channel_chains;  // STAGED, a 4H4W input: 1 = each channel summed by its own invocation
} p;

#if STAGED || NORMALIZE
// STAGED: the mask's tokens, then chunks of products; NORMALIZE: the means (the staged chunks of
// a block above them).
shared float staged[STAGE_FLOATS];
#endif
#if NORMALIZE
shared float shared_norm;  // the norm of the means, from invocation 0
#endif
#if STAGED && INPUT == LAYOUT_4H4W
shared float shared_count;  // chain_means: the token count, from invocation 0
#endif

float hidden(int b, int t, int c) {
#if INPUT == 0
  return in_floats[b * p.in_strides.y + t * p.in_strides.z + c * p.in_strides.w];
#else
  return float(in_load_element(p.sizes, ivec4(0, b, t, c)) - p.zero_point) * p.scale;
#endif
}

float mask(int b, int t) { return mask_floats[b * p.strides.x + t * p.strides.y]; }

#if STAGED || NORMALIZE
// The in-order sum from `acc` of the n values staged[first + k * step]: 8 shared loads issued
// before their 8 adds, so the adds' chain does not wait on a load each (the order is unchanged).
float add_staged(float acc, int first, int step, int n) {
  precise float sum = acc;
  int k = 0;
  for (; k + 8 <= n; k += 8) {
    float v[8];
    [[unroll]] for (int i = 0; i < 8; ++i) v[i] = staged[first + (k + i) * step];
    [[unroll]] for (int i = 0; i < 8; ++i) sum = sum + v[i];
  }
  for (; k < n; ++k) sum = sum + staged[first + k * step];
  return sum;
}
#endif

// x * m, rounded once as the reference's mul.
float kept_value(int b, int t, int c) {
  precise float product = hidden(b, t, c) * mask(b, t);
  return product;
}

void store_mean(int b, int c, float mean) {
#if NORMALIZE
  staged[c] = mean;
#else
  out_floats[b * p.strides.z + c * p.strides.w] = mean;
#endif
}

#if STAGED
// This invocation's elements of the chunk of tokens t0 .. and channels c0 .. c0 + cb - 1 that
// has n elements (zeros past n). Element l + j * wg is token t0 + dt, channel c0 + dc.
void load_chunk(int b, int t0, int c0, int cb, int n, out float kept[LOADS]) {
  const int l = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
  const int step_t = wg / cb, step_c = wg % cb;
  int dt = l / cb, dc = l % cb;
  // Every load issued unconditionally (an element past n reads the chunk's first one and is
  // dropped): with the loads under a branch each, the H200 ran them ~4 at a time (a chunk of 24
  // took ~4 us of the kernel's 28).
  [[unroll]] for (int j = 0; j < LOADS; ++j) {
    const bool inside = l + j * wg < n;
    const float v = kept_value(b, t0 + (inside ? dt : 0), c0 + (inside ? dc : 0));
    kept[j] = inside ? v : 0.0;
    dt += step_t;
    dc += step_c;
    if (dc >= cb) {
      dc -= cb;
      ++dt;
    }
  }
}
#endif

#if STAGED && INPUT == LAYOUT_4H4W
// A 4H4W input where the mask fits the staging area after the C means (p.channel_chains 1, the
// runtime's check): invocation l sums channel c itself, in token order, from its 16-byte token
// blocks (4 tokens x its 4-channel group, the 4 invocations of a group reading the same block),
// CHAIN_BLOCKS of them loaded ahead of the adds, and the mask from shared memory (staged[C + t]).
// The chain of adds then waits on no load (the products are off the chain): MiniLM's [1, 128,
// 384] took 19 us on an H200 through chunks staged in shared memory, each add a shared load.
#define CHAIN_BLOCKS 8

void load_token_blocks(int b, int tb0, int c4, out ivec4 q[CHAIN_BLOCKS]) {
  const int last = div_up(p.sizes.z, 4) - 1;
  [[unroll]] for (int g = 0; g < CHAIN_BLOCKS; ++g) {
    const int t = 4 * min(tb0 + g, last);  // past the tokens: the last block again, unused
    q[g] = in_words[int8x4_position(LAYOUT_4H4W, p.sizes, 0, b, t, c4).x / 4];
  }
}

// The in-order sum from +0.0 of x[b, t, c] * m[b, t] over the tokens (kept_value's products).
float channel_sum(int b, int c) {
  const int T = p.sizes.z, C = p.sizes.w, lane = c % 4;
  precise float acc = 0.0;
  ivec4 q[CHAIN_BLOCKS], next[CHAIN_BLOCKS];
  load_token_blocks(b, 0, c - lane, q);
  for (int tb0 = 0; 4 * tb0 < T; tb0 += CHAIN_BLOCKS) {
    load_token_blocks(b, tb0 + CHAIN_BLOCKS, c - lane, next);
    [[unroll]] for (int g = 0; g < CHAIN_BLOCKS; ++g) {
      [[unroll]] for (int i = 0; i < 4; ++i) {
        const int t = 4 * (tb0 + g) + i;
        const float x = dequantized_lane(q[g][i], lane, p.zero_point, p.scale);
        precise float product = x * staged[C + min(t, T - 1)];
        if (t < T) acc = acc + product;
      }
    }
    q = next;
  }
  return acc;
}

// The means of channels first .. last - 1 of batch row b, one channel per invocation.
void chain_means(int b, int first, int last) {
  const int l = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
  const int T = p.sizes.z, C = p.sizes.w;
  for (int t = l; t < T; t += wg) staged[C + t] = mask(b, t);
  barrier();
  // The token count, in order, by invocation 0 (before its channel sums; the others start
  // theirs).
  if (l == 0) shared_count = add_staged(0.0, C, 1, T);
  // The invocation's first channel (its only one where the block fits the workgroup) summed
  // before the count is read; any further channel after.
  const int c0 = first + l;
  const float sum0 = c0 < last ? channel_sum(b, c0) : 0.0;
  barrier();
  const float count = shared_count;
  const float denominator = count < p.mask_min ? p.mask_min : count;
  if (c0 < last) store_mean(b, c0, div_rn(sum0, denominator));
  for (int c = c0 + wg; c < last; c += wg) store_mean(b, c, div_rn(channel_sum(b, c), denominator));
}
#endif

// The means of the chunked paths (the staged chunks, or the CPU devices' walk).
void chunk_means(int b) {
  const int l = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
  const int T = p.sizes.z, C = p.sizes.w;
  precise float count = 0.0;
#if STAGED
  // The token count: the mask staged a workgroup of tokens at a time (one load each, together),
  // every invocation adding them in order from shared memory.
  for (int t0 = 0; t0 < T; t0 += wg) {
    const int n = min(wg, T - t0);
    barrier();  // the previous tokens are added
    if (l < n) staged[l] = mask(b, t0 + l);
    barrier();
    count = add_staged(count, 0, 1, n);
  }
  barrier();  // every invocation has its count: the area is the chunks' now
#else
  for (int t0 = 0; t0 < T; t0 += TOKEN_BLOCK) {
    const int n = min(TOKEN_BLOCK, T - t0);
    float m[TOKEN_BLOCK];
    for (int k = 0; k < TOKEN_BLOCK; ++k) m[k] = mask(b, t0 + min(k, n - 1));  // past T: unused
    for (int k = 0; k < n; ++k) count = count + m[k];
  }
#endif
  const float denominator = count < p.mask_min ? p.mask_min : count;
#if STAGED
#if NORMALIZE
  const int first = 0, last = C;
#else
  const int first = int(gl_WorkGroupID.y) * p.block, last = min(C, first + p.block);
#endif
  for (int c0 = first; c0 < last; c0 += p.block) {
    const int cb = min(p.block, last - c0);
    const int base = NORMALIZE == 1 ? c0 : 0;  // staged[0 .. c0): the means so far
    precise float acc = 0.0;
    const int tokens = min(LOADS * wg, STAGE_FLOATS - base) / cb;  // >= 1: cb <= C - c0
    float kept[LOADS];
    load_chunk(b, 0, c0, cb, min(tokens, T) * cb, kept);
    for (int t0 = 0; t0 < T; t0 += tokens) {
      const int n = min(tokens, T - t0);
      barrier();  // the previous chunk is summed
      [[unroll]] for (int j = 0; j < LOADS; ++j) {
        if (l + j * wg < n * cb) staged[base + l + j * wg] = kept[j];
      }
      barrier();
      if (t0 + n < T) load_chunk(b, t0 + n, c0, cb, min(tokens, T - t0 - n) * cb, kept);
      if (l < cb) acc = add_staged(acc, base + l, cb, n);
    }
    const float mean = div_rn(acc, denominator);
    barrier();  // NORMALIZE 1: the last chunk is summed, its area holds the block's means now
    if (l < cb) store_mean(b, c0 + l, mean);
  }
#else
  for (int c = l; c < C; c += wg) {
    precise float acc = 0.0;
    for (int t0 = 0; t0 < T; t0 += TOKEN_BLOCK) {
      const int n = min(TOKEN_BLOCK, T - t0);
      float kept[TOKEN_BLOCK];
      for (int k = 0; k < TOKEN_BLOCK; ++k) kept[k] = kept_value(b, t0 + min(k, n - 1), c);
      for (int k = 0; k < n; ++k) acc = acc + kept[k];
    }
    store_mean(b, c, div_rn(acc, denominator));
  }
#endif
}

#if NORMALIZE == 2
float mean_of(int b, int c) { return in_floats[b * p.in_strides.y + c * p.in_strides.w]; }
#elif NORMALIZE
float mean_of(int b, int c) { return staged[c]; }
#endif

void main() {
  const int b = int(gl_WorkGroupID.x);
  const int l = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
  const int C = p.sizes.w;
#if NORMALIZE != 2
#if STAGED && INPUT == LAYOUT_4H4W
  if (p.channel_chains == 1) {
#if NORMALIZE
    chain_means(b, 0, C);
#else
    const int first = int(gl_WorkGroupID.y) * p.block;
    chain_means(b, first, min(C, first + p.block));
#endif
  } else
#endif
  {
    chunk_means(b);
  }
#endif
#if NORMALIZE
  barrier();
  // The squares in channel order, 8 loads ahead of their adds (as add_staged), by invocation 0
  // alone (the whole workgroup repeating the chain made it issue-bound on its one SM), which
  // hands the norm to the others through shared memory.
  if (l == 0) {
    precise float squares = 0.0;
    int c = 0;
    for (; c + 8 <= C; c += 8) {
      float v[8];
      [[unroll]] for (int i = 0; i < 8; ++i) v[i] = mean_of(b, c + i);
      [[unroll]] for (int i = 0; i < 8; ++i) {
        precise float sq = v[i] * v[i];
        squares = squares + sq;
      }
    }
    for (; c < C; ++c) {
      const float v = mean_of(b, c);
      precise float sq = v * v;
      squares = squares + sq;
    }
    const float norm = sqrt_rn(squares);
    shared_norm = norm < p.eps ? p.eps : norm;
  }
  barrier();
  for (int c = l; c < C; c += wg) {
    out_floats[b * p.strides.z + c * p.strides.w] = div_rn(mean_of(b, c), shared_norm);
  }
#endif
}
