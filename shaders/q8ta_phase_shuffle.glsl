// q8ta_phase_shuffle: the second step of q8ta_conv_transpose2d (runtime/ops/ConvTranspose2d.h).
// The first, an ordinary q8ta_conv2d, wrote every stride phase of the transposed convolution as
// its own channels of Z (int8x4 4W4C, already requantized); this kernel moves them into the
// output (OUT_LAYOUT: 4W4C or 4C1W):
//   out[n][co][oy][ox] = Z[n][(g * P + ry * STRIDE_W + rx) * COUT_G4 + co - g * COUT_G][ay][ax]
//   with oy + PAD_H = ay * STRIDE_H + ry (ox likewise), g = co / COUT_G, P = STRIDE_H * STRIDE_W.
// Each invocation writes one 16-byte chunk (4 consecutive words) of the output, each word
// decoded from its own index (4C1W chunks cross rows). A word is 4 channels of one pixel: when a
// group's channels are whole words (groups 1, or COUT_G % 4 == 0) they are one whole word of Z,
// copied; otherwise each lane reads its own byte. Lanes of channels >= C and the padding widths
// of a 4W4C output hold the output zero point. No arithmetic: Z holds the final values.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"

#define INT8_LAYOUT OUT_LAYOUT
#define GATHER_BY_WORD
#include "int8x4_chunk.glslh"
#include "int8x4_gather.glslh"

// The geometry as specialization constants: every division below is by a constant.
layout(constant_id = 3) const int C = 1;        // output channels
layout(constant_id = 4) const int OUT_H = 1;
layout(constant_id = 5) const int OUT_W = 1;
layout(constant_id = 6) const int Z_C4 = 1;     // Z's channel blocks
layout(constant_id = 7) const int Z_H = 1;
layout(constant_id = 8) const int Z_W = 1;
layout(constant_id = 9) const int STRIDE_H = 1;
layout(constant_id = 10) const int STRIDE_W = 1;
layout(constant_id = 11) const int PAD_H = 0;
layout(constant_id = 12) const int PAD_W = 0;
layout(constant_id = 13) const int COUT_G = 1;  // output channels per group
layout(constant_id = 14) const int COUT_G4 = 4; // COUT_G rounded up to 4: Z channels per phase

layout(set = 0, binding = 1) readonly buffer ZWords { int z_words[]; };

layout(push_constant) uniform Params {
  int chunk_count;  // ceil(output words / 4): invocations that do work
  int word_count;   // output words
  int batches;      // N
  int out_zp;
} p;

const int C4 = (C + 3) / 4, OUT_W4 = (OUT_W + 3) / 4, Z_W4 = (Z_W + 3) / 4;
const int PHASES = STRIDE_H * STRIDE_W;
const bool WHOLE_WORDS = COUT_G % 4 == 0 || COUT_G == C;

// Z's word of channels 4 zc4 .. + 3 at (a, b) of image n (4W4C).
int z_word(int n, int zc4, int a, int b) {
  return z_words[4 * (((n * Z_H + a) * Z_W4 + b / 4) * Z_C4 + zc4) + b % 4];
}

// Z's channel of output channel co in phase `phase`.
int z_channel(int co, int phase) {
  const int g = co / COUT_G;
  return (g * PHASES + phase) * COUT_G4 + co - g * COUT_G;
}

// Output word q, lanes >= `valid` set to the zero point.
int output_word(int q, int valid) {
  if (valid == 0) return splat_byte(p.out_zp);
  // Pixel (n, oy, ox) and channel block c4 of word q.
#if OUT_LAYOUT == LAYOUT_4W4C
  const int block = q / 4;
  const int ox = 4 * ((block / C4) % OUT_W4) + q % 4, c4 = block % C4;
  const int row = block / (C4 * OUT_W4);
#else
  const int ox = q % OUT_W, c4 = (q / OUT_W) % C4;
  const int row = q / (OUT_W * C4);
#endif
  const int oy = row % OUT_H, n = row / OUT_H;
  const int ay = (oy + PAD_H) / STRIDE_H, ax = (ox + PAD_W) / STRIDE_W;
  const int phase = ((oy + PAD_H) % STRIDE_H) * STRIDE_W + (ox + PAD_W) % STRIDE_W;
  if (WHOLE_WORDS) {
    return pad_lanes(z_word(n, z_channel(4 * c4, phase) / 4, ay, ax), valid, p.out_zp);
  }
  int word = splat_byte(p.out_zp);
  for (int j = 0; j < valid; ++j) {
    const int zc = z_channel(4 * c4 + j, phase);
    word = with_lane(word, j, lane_of(z_word(n, zc / 4, ay, ax), zc % 4));
  }
  return word;
}

void main() {
  const int k = int(linear_invocation_id());
  if (k < p.chunk_count) gather_chunk(k, p.word_count, ivec4(p.batches, C, OUT_H, OUT_W));
}
