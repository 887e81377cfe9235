// q8ta_mean: mean over H and W of a channels-packed int8x4 tensor (INT8_LAYOUT: 4W4C or 4C1W),
// either with keepdim ([N, C, H, W] -> [N, C, 1, 1], output in the same layout) or, with
// p.out_rows, flattened into [N, C] rows in 4H4W (q8ta_mean_flat: the layout q8ta_linear reads,
// so a classifier head's pooled features need no conversion), requantized from the input's
// parameters to the output's (runtime/ops/Pool.h):
//   acc = sum(q) - count * zp_in (int32, exact);  m = float32(s_in / count) (host, double)
//   y = float32(acc) * m;  q = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)
// each float operation rounded on its own (`precise`), float32(acc) exact (|acc| < 2^24,
// checked by the host).
//
// STAGE_WHOLE: one workgroup of WG invocations per (n, c4) block (group id x = c4, y = n):
// invocation t sums the words of positions t, t + WG, ... of the H*W plane (4 channel sums
// each), UNROLL positions WG apart per loop step so that their loads are in flight together; the
// partial sums are then reduced in shared memory, and invocation 0 requantizes and writes the
// output chunk (4W4C: word 0 of the chunk real, words 1..3 = widths past 1 = padding; rows: the
// word of row n in its block of 4 rows, and the workgroups of the last row n = N - 1 also write
// the block's rows past N, which are padding).
// STAGE_SLICES, in the same single dispatch: a large plane with few (n, c4) blocks is split
// into p.slices consecutive ranges of p.slice_len positions, so that enough workgroups run;
// workgroup (c4, n, z) sums range z as above, then its invocation 0 adds the 4 channel sums
// into the block's accumulator (int32 atomics: exact, in any order) and counts its arrival.
// The invocation that sees the count reach p.slices is the last of the block: every other
// range's sums are in the accumulator by then (each workgroup's memoryBarrierBuffer orders its
// sums before its arrival, and the last one's orders its arrival before its reads), so it takes
// the totals, requantizes and writes as STAGE_WHOLE does, and leaves the accumulator and the
// count at 0 for the next execution (the op creates them zero-filled, runtime/ops/Pool.cpp).
// Every access to the accumulator is atomic, so no cache holds a stale copy.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define VKD_FIXED_LOCAL_SIZE
#define WG 128
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
// Positions (WG apart) per loop step whose loads are issued together: the host's choice
// (runtime/ops/Pool.cpp), more for long ranges.
layout(constant_id = 3) const int UNROLL = 4;

#define STAGE_WHOLE 0
#define STAGE_SLICES 1

layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = 0) writeonly buffer OutWords4 { ivec4 out_words4[]; };
layout(set = 0, binding = 1) readonly buffer InWords { int in_words[]; };
#if STAGE == STAGE_SLICES
// Per (n, c4) block b: words 8b..8b+3 the channel sums so far, 8b+4 the arrived ranges.
layout(set = 0, binding = 2) coherent buffer Accumulators { int accum[]; };
#endif

layout(push_constant) uniform Params {
  ivec4 sizes;  // N, C, H, W of the input
  int in_zp;
  int out_zp;
  float mean_scale;     // float32(s_in / (H * W))
  float inv_out_scale;  // float32(1 / s_out)
  int out_rows;         // 1: output [N, C] in 4H4W; 0: [N, C, 1, 1] in INT8_LAYOUT
  int slices;           // ranges per (n, c4) block (1: STAGE_WHOLE)
  int slice_len;        // positions per range
} p;

shared ivec4 partial[WG];

// The input word of position (h, w) of block (n, c4).
int word_at(int n, int c4, int h, int w) {
  const int C4 = div_up(p.sizes.y, 4), H = p.sizes.z, W = p.sizes.w;
#if INT8_LAYOUT == LAYOUT_4W4C
  return in_words[4 * (((n * H + h) * div_up(W, 4) + w / 4) * C4 + c4) + w % 4];
#else
  return in_words[((n * H + h) * C4 + c4) * W + w];  // a row is contiguous
#endif
}

// The 4 channel sums of block (n, c4) over plane positions [begin, end), reduced over the
// workgroup: the total in invocation 0.
ivec4 workgroup_sum(int n, int c4, int begin, int end) {
  const int t = int(gl_LocalInvocationID.x), W = p.sizes.w;
  // (h, w) of position pos, advanced by WG positions without a division per step.
  const int step_h = WG / W, step_w = WG % W;
  int pos = begin + t, h = pos / W, w = pos % W;
  ivec4 sum = ivec4(0);
  for (; pos < end; pos += UNROLL * WG) {
    int v[UNROLL];  // positions pos + k * WG; 0 (no contribution) past the range
    [[unroll]] for (int k = 0; k < UNROLL; ++k) {
      v[k] = 0;
      if (pos + k * WG < end) v[k] = word_at(n, c4, h, w);
      w += step_w;
      h += step_h;
      if (w >= W) {
        w -= W;
        ++h;
      }
    }
    [[unroll]] for (int k = 0; k < UNROLL; ++k) {
      sum += ivec4(lane_of(v[k], 0), lane_of(v[k], 1), lane_of(v[k], 2), lane_of(v[k], 3));
    }
  }
  partial[t] = sum;
  barrier();
  for (int half_size = WG / 2; half_size > 0; half_size /= 2) {
    if (t < half_size) partial[t] += partial[t + half_size];
    barrier();
  }
  return partial[0];
}

// Requantizes the channel sums `sum` of block (n, c4) and writes the output word.
void write_mean(int n, int c4, ivec4 sum) {
  const int C = p.sizes.y, C4 = div_up(C, 4), count = p.sizes.z * p.sizes.w;
  const ivec4 acc = sum - count * p.in_zp;
  const int real = min(4, C - 4 * c4);
  int word = 0;
  // Rounding commutes with clamping to integers: clamp t first, which also keeps it in
  // round_even_small's range (common.glslh).
  const float lo = float(-128 - p.out_zp), hi = float(127 - p.out_zp);
  for (int j = 0; j < 4; ++j) {
    precise float y = float(acc[j]) * p.mean_scale;
    precise float t = clamp(y * p.inv_out_scale, lo, hi);
    const int q = j < real ? round_even_small(t) + p.out_zp : p.out_zp;
    word |= (q & 0xFF) << (8 * j);
  }
  const int pad = splat_byte(p.out_zp);
  if (p.out_rows != 0) {
    // [N, C] in 4H4W (sizes (1, 1, N, C)): word 4*((n/4)*C4 + c4) + n%4, lanes = channels.
    const int block = 4 * ((n / 4) * C4 + c4);
    out_words[block + n % 4] = word;
    if (n == p.sizes.x - 1) {
      for (int r = n % 4 + 1; r < 4; ++r) out_words[block + r] = pad;
    }
    return;
  }
#if INT8_LAYOUT == LAYOUT_4W4C
  // Output [N, C, 1, 1]: chunk (n*1 + 0)*C4 + c4; widths 1..3 are padding.
  out_words4[n * C4 + c4] = ivec4(word, pad, pad, pad);
#else
  out_words[n * C4 + c4] = word;
#endif
}

#if STAGE == STAGE_SLICES
// Invocation 0 of range z's workgroup: adds its sums to block (n, c4)'s accumulator; the last
// range to arrive requantizes the block and resets the accumulator (see the top).
void accumulate_range(int n, int c4, ivec4 sum) {
  const int a = 8 * (n * div_up(p.sizes.y, 4) + c4);
  for (int j = 0; j < 4; ++j) atomicAdd(accum[a + j], sum[j]);
  memoryBarrierBuffer();  // the sums before the arrival
  if (atomicAdd(accum[a + 4], 1) != p.slices - 1) return;
  memoryBarrierBuffer();  // every range's arrival (and so its sums) before the reads below
  ivec4 total;
  for (int j = 0; j < 4; ++j) total[j] = atomicExchange(accum[a + j], 0);
  atomicExchange(accum[a + 4], 0);
  write_mean(n, c4, total);
}
#endif

void main() {
  const int c4 = int(gl_WorkGroupID.x), n = int(gl_WorkGroupID.y), z = int(gl_WorkGroupID.z);
  const int count = p.sizes.z * p.sizes.w;
  const int begin = z * p.slice_len, end = min(begin + p.slice_len, count);
  const ivec4 sum = workgroup_sum(n, c4, begin, end);
  if (gl_LocalInvocationID.x != 0) return;
#if STAGE == STAGE_SLICES
  accumulate_range(n, c4, sum);
#else
  write_mean(n, c4, sum);
#endif
}
