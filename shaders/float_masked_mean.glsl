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
// STAGED 0 (CPU devices: one thread runs the workgroup, barriers are coroutine switches and
// there is no latency to hide; staged took 1.0 ms on lavapipe at MiniLM's shape, this 0.2 ms): invocation l walks the
// channels l, l + wg, ... itself, TOKEN_BLOCK tokens' loads at a time, then adds them in order.
// Both: every invocation counts the tokens itself (TOKEN_BLOCK mask loads at a time); the
// means of NORMALIZE 1 in staged[c], whose squares every invocation sums in channel order.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"
#include "exact_div.glslh"  // div_rn
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

// The widest hidden size pooled (the runtime checks C against it): 16 KiB of shared memory,
// Vulkan's guaranteed minimum. The staging area (STAGED) is STAGE_FLOATS >= MAX_CHANNELS floats,
// as much as LOADS per invocation fill where the device has the shared memory
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
  int blocks;  // STAGED, a 4H4W input: 1 = chunks loaded as whole 16-byte blocks (below)
} p;

#if STAGED || NORMALIZE
// STAGED: the mask's tokens, then chunks of products; NORMALIZE: the means (the staged chunks of
// a block above them).
shared float staged[STAGE_FLOATS];
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
// A 4H4W input (p.blocks 1: the runtime checks that 4-token chunks fit the staging area): the
// chunk is loaded as whole 16-byte blocks of 4 tokens x 4 channels, 16 products each, instead of
// one element per load (each of which reads a 16-byte vector for its byte). Block e = l + j * wg
// of a chunk of n tokens from t0 (a multiple of 4) and cb channels from c0 (likewise): token
// block e / cg, channel group e % cg (cg = cb / 4 rounded up).
#define BLOCK_LOADS 4
struct Blocks {
  ivec4 q[BLOCK_LOADS];  // component i: token 4 tb + i, 4 channels as int8 lanes
  vec4 m[BLOCK_LOADS];   // the mask of those 4 tokens
};

void load_blocks(int b, int t0, int c0, int cb, int n, out Blocks blk) {
  const int l = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
  const int cg = div_up(cb, 4), count = div_up(n, 4) * cg;
  [[unroll]] for (int j = 0; j < BLOCK_LOADS; ++j) {
    const int e = l + j * wg < count ? l + j * wg : 0;  // past the chunk: block 0, unused
    const int t = t0 + 4 * (e / cg), c = c0 + 4 * (e % cg);
    blk.q[j] = in_words[int8x4_position(LAYOUT_4H4W, p.sizes, 0, b, t, c).x / 4];
    [[unroll]] for (int i = 0; i < 4; ++i) blk.m[j][i] = mask(b, min(t + i, p.sizes.z - 1));
  }
}

// Each block's products x * m (as kept_value: the dequantization, then the mul, each rounded
// once) into the chunk's staging area at base + token * cb + channel.
void store_blocks(Blocks blk, int base, int cb, int n) {
  const int l = int(gl_LocalInvocationID.x), wg = int(gl_WorkGroupSize.x);
  const int cg = div_up(cb, 4), count = div_up(n, 4) * cg;
  [[unroll]] for (int j = 0; j < BLOCK_LOADS; ++j) {
    const int e = l + j * wg;
    if (e >= count) break;
    const int dt0 = 4 * (e / cg), dc0 = 4 * (e % cg);
    for (int i = 0; i < 4 && dt0 + i < n; ++i) {
      for (int k = 0; k < 4 && dc0 + k < cb; ++k) {
        const float x = float(lane_of(blk.q[j][i], k) - p.zero_point) * p.scale;
        precise float product = x * blk.m[j][i];
        staged[base + (dt0 + i) * cb + dc0 + k] = product;
      }
    }
  }
}
#endif

void main() {
  const int b = int(gl_WorkGroupID.x);
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
#if INPUT == LAYOUT_4H4W
    if (p.blocks == 1) {
      // Chunks of whole token blocks: at most BLOCK_LOADS blocks per invocation.
      const int tokens =
          4 * min(BLOCK_LOADS * wg / div_up(cb, 4), (STAGE_FLOATS - base) / (4 * cb));
      Blocks blk;
      load_blocks(b, 0, c0, cb, min(tokens, T), blk);
      for (int t0 = 0; t0 < T; t0 += tokens) {
        const int n = min(tokens, T - t0);
        barrier();  // the previous chunk is summed
        store_blocks(blk, base, cb, n);
        barrier();
        if (t0 + n < T) load_blocks(b, t0 + n, c0, cb, min(tokens, T - t0 - n), blk);
        if (l < cb) acc = add_staged(acc, base + l, cb, n);
      }
    } else
#endif
    {
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
#if NORMALIZE
  barrier();
  // The squares in channel order, 8 loads ahead of their adds (as add_staged).
  precise float squares = 0.0;
  int c = 0;
  for (; c + 8 <= C; c += 8) {
    float v[8];
    [[unroll]] for (int i = 0; i < 8; ++i) v[i] = staged[c + i];
    [[unroll]] for (int i = 0; i < 8; ++i) {
      precise float sq = v[i] * v[i];
      squares = squares + sq;
    }
  }
  for (; c < C; ++c) {
    precise float sq = staged[c] * staged[c];
    squares = squares + sq;
  }
  float norm = sqrt_rn(squares);
  norm = norm < p.eps ? p.eps : norm;
  for (int c = l; c < C; c += wg) out_floats[b * p.strides.z + c * p.strides.w] = div_rn(staged[c], norm);
#endif
}
