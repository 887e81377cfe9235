// q8ta_channel_shuffle: int8x4 [N, C, H, W] -> int8x4 [N, C, H, W], both in INT8_LAYOUT:
// output channel c is input channel (c % G) * (C / G) + c / G at the same (n, h, w), i.e.
// view [N, G, C/G, H, W] -> transpose(1, 2) -> view [N, C, H, W] (ShuffleNet).
// Invocation k writes 16-byte chunk k of the output (words 4k .. 4k+3), walking both word
// arrays linearly:
//   4H4W: a chunk is 4 rows x 4 widths of one channel, so it is the input chunk of the source
//         channel at the same (n, rows, widths): one 16-byte load.
//   4W4C, and 4C1W with W % 4 == 0: a chunk is 4 widths x 4 channels of one (n, h); lane j of
//         its words comes from the input chunk of source channel s_j's block at the same
//         (n, h, widths): four 16-byte loads, which neighbouring invocations share in cache
//         (the source blocks of one (n, h, widths) are consecutive chunks in 4W4C).
//   4C1W with W % 4 != 0: chunks cross rows; each word gathers its 4 lanes with word loads.
// REQUANT 0: bytes are moved as they are. REQUANT 1: each element is requantized as
// runtime/ops/Permute.h defines (float32, each operation rounded on its own):
//   y = float(q - zp_in) * s_in;  q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127).
// Padding (channels >= C, widths past W in 4W4C, rows / widths past H / W in 4H4W) holds the
// output zero point. C, H, W and G are specialization constants, so every division and modulo
// is by a compile-time constant (a multiply-high and a shift once the driver specializes the
// pipeline): with them as push constants the index arithmetic, not memory, bounded the kernel.
// Variants: INT8_LAYOUT (4W4C, 4H4W, 4C1W) x REQUANT (shuffle, requant).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "int8x4_chunk.glslh"

// Scalar and 16-byte views of each buffer.
layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = 0) writeonly buffer OutWords4 { ivec4 out_words4[]; };
layout(set = 0, binding = 1) readonly buffer InWords { int in_words[]; };
layout(set = 0, binding = 1) readonly buffer InWords4 { ivec4 in_words4[]; };

layout(constant_id = 3) const int C = 1;  // channels
layout(constant_id = 4) const int H = 1;
layout(constant_id = 5) const int W = 1;
layout(constant_id = 6) const int G = 1;  // groups
const int GROUP_SIZE = C / G;
const ivec4 SIZES = ivec4(1, C, H, W);  // what int8x4_chunk.glslh reads (N is never needed)

layout(push_constant) uniform Params {
  int chunk_count;   // ceil(word_count / 4): invocations that do work
  int word_count;    // words of in and out
  MovedRequant requant;  // int8x4_chunk.glslh
} p;

// The input channel of output channel c; a padding channel (c >= C) reads the last real one,
// whose value the padding replaces anyway.
int source_channel(int c) {
  c = min(c, C - 1);
  return (c % G) * GROUP_SIZE + c / G;
}

// A word of the output: requantized (REQUANT) and lanes >= `valid` set to the zero point.
int finish_word(int w, int valid) {
#if REQUANT
  int word = 0;
  for (int lane = 0; lane < 4; ++lane) {
    word |= requantize_moved(lane_of(w, lane), p.requant) << (8 * lane);
  }
  w = word;
#endif
  return pad_lanes(w, valid, p.requant.out_zp);
}

#if INT8_LAYOUT == LAYOUT_4H4W
// Chunk k = ((n*C + c)*H4 + h4)*W4 + w4: the source channel's chunk at the same position.
ivec4 shuffled_chunk(int k) {
  const int plane = div_up(H, 4) * div_up(W, 4);  // chunks per channel
  const int c = (k / plane) % C;
  return in_words4[k + (source_channel(c) - c) * plane];
}
#else
// Word distance between neighbouring channel blocks at one (n, h, w).
const int BLOCK_STRIDE = INT8_LAYOUT == LAYOUT_4W4C ? 4 : W;

// The channel block of word i.
int block_of_word(int i) { return (i / BLOCK_STRIDE) % div_up(C, 4); }

// Chunk k lies in one (n, h) row of 4 widths: lane j of each word from the chunk holding
// source channel s_j's block at the same widths.
ivec4 shuffled_chunk(int k) {
  const int c4 = block_of_word(4 * k);
  const int step = BLOCK_STRIDE / 4;  // chunks between neighbouring blocks
  ivec4 words = ivec4(0);
  for (int j = 0; j < 4; ++j) {
    const int s = source_channel(4 * c4 + j);
    const ivec4 src = in_words4[k + (s / 4 - c4) * step];
    for (int w = 0; w < 4; ++w) words[w] = with_lane(words[w], j, lane_of(src[w], s % 4));
  }
  return words;
}

// Word i (a 4C1W row of odd width may end inside a chunk): each lane from its source word.
int shuffled_word(int i) {
  const int c4 = block_of_word(i);
  const int base = i - c4 * BLOCK_STRIDE;  // channel block 0 at the same (n, h, w)
  int word = 0;
  for (int j = 0; j < 4; ++j) {
    const int s = source_channel(4 * c4 + j);
    word = with_lane(word, j, lane_of(in_words[base + (s / 4) * BLOCK_STRIDE], s % 4));
  }
  return word;
}
#endif

void main() {
  const int k = int(linear_invocation_id());
  if (k >= p.chunk_count) return;
  const ivec4 valid = chunk_valid_lanes(k, SIZES);
#if INT8_LAYOUT == LAYOUT_4C1W
  if (W % 4 != 0) {
    for (int j = 0; j < 4 && 4 * k + j < p.word_count; ++j) {
      out_words[4 * k + j] = finish_word(shuffled_word(4 * k + j), valid[j]);
    }
    return;
  }
#endif
  const ivec4 words = shuffled_chunk(k);
  ivec4 result;
  for (int j = 0; j < 4; ++j) result[j] = finish_word(words[j], valid[j]);
  out_words4[k] = result;
}
