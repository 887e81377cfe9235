// q8ta_pixel_shuffle: int8x4 (N, C_out * R^2, H, W) -> int8x4 (N, C_out, H * R, W * R), both
// in a channels-packed layout (4W4C or 4C1W). Output element (n, c, oh, ow) is input channel
// c * R^2 + (oh % R) * R + (ow % R) at (oh / R, ow / R).
//
// R = 2 (the common case): invocation i takes one input position (n, ih, iw) and one output
// channel block c4: it loads the four input words of channel blocks 4 c4 .. 4 c4 + 3 there
// (each word once in the whole dispatch) and writes the 2 x 2 output words (c4, 2 ih + a,
// 2 iw + b): output (a, b) lane j = byte 2 a + b of input word j, a 4 x 4 byte transpose. Each
// output row gets one 8-byte store of 2 adjacent words; invocations are numbered so that
// neighbours store neighbouring pairs (4C1W: iw fastest; 4W4C: iw % 2, then c4, then iw / 2).
// Other R: invocation i writes output word i (memory order of OUT_LAYOUT, so neighbouring
// invocations store neighbouring words): the four channels 4 c4 .. 4 c4 + 3 at one
// (n, oh, ow), from four input word loads (one per lane).
// Lanes of channels >= C_out and the padding widths of a 4W4C output hold the output zero point.
//
// The geometry is specialization constants, so every division and modulo below is by a
// compile-time constant (a multiply-high and a shift once the driver specializes the pipeline).
//
// REQUANT 0: the input and output share scale and zero point; bytes are moved, no arithmetic.
// REQUANT 1: per lane (runtime/ops/PixelShuffle.h defines it; float32, each op rounded once):
//   y = float(q_in - zp_in) * s_in;  q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)
//   with inv_s_out = float32(1 / s_out), as q8ta_quantize and the conv/linear epilogues round.
// Variants: IN_LAYOUT x OUT_LAYOUT (4W4C, 4C1W) x REQUANT (shuffle, requant).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "int8x4_chunk.glslh"  // requantize_moved

layout(constant_id = 3) const int R = 2;       // upscale factor
layout(constant_id = 4) const int C_OUT = 1;   // output channels
layout(constant_id = 5) const int OUT_H = 1;   // H * R
layout(constant_id = 6) const int OUT_W = 1;   // W * R
layout(constant_id = 7) const int IN_H = 1;
layout(constant_id = 8) const int IN_W = 1;

layout(std430, set = 0, binding = 0) writeonly buffer Out { int out_words[]; };
layout(std430, set = 0, binding = 0) writeonly buffer Out2 { ivec2 out_pairs[]; };
layout(std430, set = 0, binding = 1) readonly buffer In { int in_words[]; };

layout(push_constant) uniform Params {
  int item_count;         // invocations: output words, or (R = 2) input positions x C4_OUT
  MovedRequant requant;   // int8x4_chunk.glslh
} p;

// Unsigned, so that division by these constants needs no sign fix-up.
const uint C4_OUT = uint((C_OUT + 3) / 4);
const uint C4_IN = uint((C_OUT * R * R + 3) / 4);
const uint OUT_W4 = uint((OUT_W + 3) / 4);
const uint IN_W4 = uint((IN_W + 3) / 4);
const uint UR = uint(R), UOUT_W = uint(OUT_W), UOUT_H = uint(OUT_H), UIN_H = uint(IN_H),
           UIN_W = uint(IN_W);

// Word of channel block 0 at input (n, ih, iw) and the word distance between channel blocks.
#if IN_LAYOUT == LAYOUT_4C1W
uint in_base(uint n, uint ih, uint iw) { return (n * UIN_H + ih) * C4_IN * UIN_W + iw; }
const uint IN_BLOCK_STRIDE = UIN_W;
#else
uint in_base(uint n, uint ih, uint iw) {
  return 4u * (((n * UIN_H + ih) * IN_W4 + iw / 4u) * C4_IN) + iw % 4u;
}
const uint IN_BLOCK_STRIDE = 4u;
#endif

#if REQUANT
// One lane (int8x4_chunk.glslh): clamp(roundEven(t) + zp_out) == roundEven(clamp(t, -128 -
// zp_out, 127 - zp_out)) + zp_out, the bounds being integers.
int requantize(int q) {
  return requantize_moved(q, p.requant);
}
#endif

// Lanes of one input word through the output parameters (REQUANT) or as they are.
int convert_word(int w) {
#if REQUANT
  return pack_lanes(ivec4(requantize(lane_of(w, 0)), requantize(lane_of(w, 1)),
                          requantize(lane_of(w, 2)), requantize(lane_of(w, 3))));
#else
  return w;
#endif
}

void shuffle_by_2(uint i) {
  const uint UIN_W2 = (UIN_W + 1u) / 2u;
#if OUT_LAYOUT == LAYOUT_4C1W
  const uint iw = i % UIN_W;
  const uint c4 = (i / UIN_W) % C4_OUT;
  const uint row = i / (UIN_W * C4_OUT);
#else
  const uint half_w = i % 2u;
  const uint c4 = (i / 2u) % C4_OUT;
  const uint iwp = (i / (2u * C4_OUT)) % UIN_W2;
  const uint row = i / (2u * C4_OUT * UIN_W2);
  const uint iw = 2u * iwp + half_w;
#endif
  const uint ih = row % UIN_H, n = row / UIN_H;
  // Word of output (c4, 2 ih + a, 2 iw): the pair for a + 1 is one output row further.
#if OUT_LAYOUT == LAYOUT_4C1W
  const uint out0 = ((n * UOUT_H + 2u * ih) * C4_OUT + c4) * UOUT_W + 2u * iw;
  const uint row_stride = C4_OUT * UOUT_W;
#else
  const uint out0 = 4u * (((n * UOUT_H + 2u * ih) * OUT_W4 + iwp) * C4_OUT + c4) + 2u * half_w;
  const uint row_stride = 4u * OUT_W4 * C4_OUT;
  if (iw >= UIN_W) {  // the padding widths 2 W, 2 W + 1 of the last 4W4C block
    const ivec2 zp = ivec2(splat_byte(p.requant.out_zp));
    out_pairs[out0 / 2u] = zp;
    out_pairs[(out0 + row_stride) / 2u] = zp;
    return;
  }
#endif
  const uint base = in_base(n, ih, iw);
  ivec4 m = ivec4(splat_byte(p.requant.out_zp));  // m[j]: input channel block 4 c4 + j
  for (uint j = 0u; j < 4u; ++j) {
    if (4u * c4 + j < uint(C_OUT)) m[j] = convert_word(in_words[base + (4u * c4 + j) * IN_BLOCK_STRIDE]);
  }
  const ivec4 t = transpose_bytes(m);  // t[2 a + b] = output (2 ih + a, 2 iw + b)
  out_pairs[out0 / 2u] = t.xy;
  out_pairs[(out0 + row_stride) / 2u] = t.zw;
}

void main() {
  const uint i = linear_invocation_id();
  if (i >= uint(p.item_count)) return;
  if (R == 2) {
    shuffle_by_2(i);
    return;
  }

  // Output word i -> (n, oh, c4, ow).
#if OUT_LAYOUT == LAYOUT_4C1W
  const uint ow = i % UOUT_W;
  const uint c4 = (i / UOUT_W) % C4_OUT;
  const uint row = i / (UOUT_W * C4_OUT);
#else
  const uint ow = (i / (4u * C4_OUT)) % OUT_W4 * 4u + i % 4u;
  const uint c4 = (i / 4u) % C4_OUT;
  const uint row = i / (4u * C4_OUT * OUT_W4);
  if (ow >= UOUT_W) {  // a padding width
    out_words[i] = splat_byte(p.requant.out_zp);
    return;
  }
#endif
  const uint oh = row % UOUT_H, n = row / UOUT_H;
  const uint base = in_base(n, oh / UR, ow / UR);
  // Input channel of lane 0; lane j's is R^2 further.
  const uint ci0 = 4u * c4 * UR * UR + (oh % UR) * UR + ow % UR;

  int word = splat_byte(p.requant.out_zp);
  for (uint j = 0u; j < 4u; ++j) {
    if (4u * c4 + j < uint(C_OUT)) {
      const uint ci = ci0 + j * UR * UR;
      const int q = lane_of(in_words[base + (ci / 4u) * IN_BLOCK_STRIDE], int(ci % 4u));
#if REQUANT
      word = bitfieldInsert(word, requantize(q), int(8u * j), 8);
#else
      word = bitfieldInsert(word, q, int(8u * j), 8);
#endif
    }
  }
  out_words[i] = word;
}
