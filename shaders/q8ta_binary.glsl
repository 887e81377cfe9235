// q8ta_binary: the element-wise int8 ops of two operands, OP_ADD (q8ta_add) and OP_MUL
// (q8ta_mul): out = requantize(dequantize(a) OP dequantize(b)), three int8x4 tensors sharing one
// packed layout (INT8_LAYOUT), each with its own scale and zero point. Per element, every
// operation rounded on its own (`precise`: no fused multiply-add), so the CPU reference
// (test/reference/ElementwiseReference.h) and the compiler's interpreter of the dq, dq -> op ->
// q graph it replaces match bit for bit:
//   fa = float32(qa - zp_a) * s_a;  fb = float32(qb - zp_b) * s_b;  y = fa + fb  |  y = fa * fb
//   q  = clamp(roundEven(y * inv_s_out) + zp_out, act_min, act_max),  inv_s_out = float32(1/s_out)
// (for mul, mathematically q = zp_out + round((qa - zp_a) * (qb - zp_b) * s_a * s_b / s_out),
// computed as that float32 chain, not as one fixed-point multiplier). The arithmetic is
// requant.glslh's binary_word, which the conv / linear epilogue's fused residual add also runs.
// b is either a's shape (B_SAME), [N or 1, C, 1, 1] (B_CHANNEL: one value per (batch,)
// channel) or [1, 1, 1, 1] (B_SCALAR); the host swaps the operands when a is the broadcast one
// (float addition and multiplication are commutative, so the bytes do not change).
//
// Each invocation computes one 16-byte chunk (4 consecutive words) of the output: the words
// of a, b and out at the same index hold the same elements, as the three share a layout and
// a's sizes (B_SAME), so the kernel walks the word arrays linearly with coalesced 16-byte loads
// and stores. Only the padding (lanes and words outside the tensor) needs the chunk's position,
// which is written as out's zero point whatever the arithmetic says (act range may exclude it).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "int8x4_chunk.glslh"

#define OP_ADD BINARY_ADD  // requant.glslh
#define OP_MUL BINARY_MUL

#define B_SAME 0
#define B_CHANNEL 1
#define B_SCALAR 2

// Scalar and 16-byte views of each buffer (4C1W rows of odd width end mid-chunk).
layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = 0) writeonly buffer OutWords4 { ivec4 out_words4[]; };
layout(set = 0, binding = 1) readonly buffer AWords { int a_words[]; };
layout(set = 0, binding = 1) readonly buffer AWords4 { ivec4 a_words4[]; };
layout(set = 0, binding = 2) readonly buffer BWords { int b_words[]; };
layout(set = 0, binding = 2) readonly buffer BWords4 { ivec4 b_words4[]; };

layout(push_constant) uniform Params {
  ivec4 sizes;        // N, C, H, W of a and out
  int chunk_count;    // ceil(word_count / 4): invocations that do work
  int word_count;     // words of out
  int b_mode;         // B_SAME | B_CHANNEL | B_SCALAR
  int b_batched;      // B_CHANNEL: 1 when b is [N, C, 1, 1], 0 when [1, C, 1, 1]
  BinaryQuant q;      // requant.glslh
} p;

// The requantized sum or product of one word of a and one of b, lanes >= `valid` set to out_zp.
int op_word(int wa, int wb, int valid) {
  return pad_lanes(binary_word(wa, wb, p.q, OP), valid, p.q.out_zp);
}

void main() {
  const int k = int(linear_invocation_id());
  if (k >= p.chunk_count) return;
  const int C = p.sizes.y, H = p.sizes.z, W = p.sizes.w;
  const int C4 = div_up(C, 4), H4 = div_up(H, 4), W4 = div_up(W, 4);

  ivec4 wa, wb;
  const int b_scalar = splat_byte(lane_of(b_words[0], 0));
#if INT8_LAYOUT == LAYOUT_4W4C
  // Chunk k = ((n*H + h)*W4 + w4)*C4 + c4: word ww is width 4*w4 + ww, lanes are channels.
  const int c4 = k % C4, nb = p.b_batched * (k / (C4 * W4 * H));
  wa = a_words4[k];
  wb = p.b_mode == B_SAME ? b_words4[k]
     : p.b_mode == B_CHANNEL ? ivec4(b_words4[nb * C4 + c4].x)  // [N, C, 1, 1]: word 0 of a chunk
                             : ivec4(b_scalar);
#elif INT8_LAYOUT == LAYOUT_4H4W
  // Chunk k = ((n*C + c)*H4 + h4)*W4 + w4: word hh is height 4*h4 + hh, lanes are widths.
  const int nc = k / (W4 * H4), c = nc % C;
  wa = a_words4[k];
  // [N, C, 1, 1] in 4H4W: (n, c)'s value is lane 0 of word 0 of chunk n*C + c.
  const int b_chunk = p.b_batched != 0 ? nc : c;
  wb = p.b_mode == B_SAME ? b_words4[k]
     : p.b_mode == B_CHANNEL ? ivec4(splat_byte(lane_of(b_words4[b_chunk].x, 0)))
                             : ivec4(b_scalar);
#else  // LAYOUT_4C1W: word i = ((n*H + h)*C4 + c4)*W + w, lanes are channels; chunks cross rows.
  if (4 * k + 3 < p.word_count) {
    wa = a_words4[k];
    wb = p.b_mode == B_SAME ? b_words4[k] : ivec4(b_scalar);
  } else {
    for (int j = 0; j < 4; ++j) {
      const int i = min(4 * k + j, p.word_count - 1);  // words past the end are not stored
      wa[j] = a_words[i];
      wb[j] = p.b_mode == B_SAME ? b_words[i] : b_scalar;
    }
  }
  for (int j = 0; j < 4; ++j) {
    const int row = (4 * k + j) / W, c4 = row % C4;
    // [N, C, 1, 1] in 4C1W: word n*C4 + c4, n = row / (C4 * H).
    if (p.b_mode == B_CHANNEL) wb[j] = b_words[p.b_batched * (row / (C4 * H)) * C4 + c4];
  }
#endif

  const ivec4 valid = chunk_valid_lanes(k, p.sizes);  // real lanes (0: a word of padding)
  ivec4 result;
  for (int j = 0; j < 4; ++j) result[j] = op_word(wa[j], wb[j], valid[j]);

#if INT8_LAYOUT == LAYOUT_4C1W
  if (4 * k + 3 < p.word_count) {
    out_words4[k] = result;
  } else {
    for (int j = 0; j < 4; ++j) {
      if (4 * k + j < p.word_count) out_words[4 * k + j] = result[j];
    }
  }
#else
  out_words4[k] = result;
#endif
}
