// q8ta_avg_pool2d: PyTorch's avg_pool2d (kernel, stride, padding, ceil_mode, count_include_pad,
// divisor_override) or adaptive_avg_pool2d (p.adaptive) over a channels-packed int8x4 tensor
// (INT8_LAYOUT: 4W4C or 4C1W; output in the same layout), requantized from the input's
// parameters to the output's (runtime/ops/Pool.h):
//   acc = sum over the window's input positions of (q - zp_in)   (int32, exact)
//   m   = float32(s_in / divisor)                                (host, double; p.multipliers)
//   y   = float32(acc) * m;  q = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)
// each float operation rounded on its own (`precise`), float32(acc) exact (|acc| < 2^22,
// checked by the host). Padding adds nothing to the sum (a padded zero quantizes to zp_in).
// Windows along each dim (pool_window): pooling starts at o * stride - padding and ends at
// min(start + kernel, size + padding) (its "extent", PyTorch's pool_size factor), clipped to the
// input; adaptive windows are [floor(o * size / out), ceil((o + 1) * size / out)). The divisor
// is divisor_override, else extent_h * extent_w (count_include_pad) or the clipped h * w: the
// host tabulates m for every (a, b) of that product, a and b from 1 to the widest window
// (p.table_w columns), so the kernel never divides.
//
// Each invocation computes 4 outputs of one (n, oh, c4): widths ow0 .. ow0 + 3 (ow0 = 4 * ow4),
// i.e. one 16-byte chunk in 4W4C (chunk ((n * OH + oh) * OW4 + ow4) * C4 + c4; widths past OW
// are padding words) and 4 consecutive words of one row in 4C1W (row (n * OH + oh) * C4 + c4,
// invocation row * OW4 + ow4). For each input row of the window it reads the words of the widths
// the 4 windows cover with aligned 16-byte loads and adds each word's 4 channels into the sums of
// the windows that contain it. Windows of up to 3 rows whose 4 outputs span at most 4 chunks per
// row (k2s2, k3s2, k3s1, ...) issue all their loads before adding (they are independent, so
// their latencies overlap); larger ones stream row by row. Lanes past C hold the zero point.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
layout(set = 0, binding = 0) writeonly buffer OutWords4 { ivec4 out_words4[]; };
layout(set = 0, binding = 1) readonly buffer InWords { int in_words[]; };
layout(set = 0, binding = 1) readonly buffer InWords4 { ivec4 in_words4[]; };
layout(set = 0, binding = 2) readonly buffer Multipliers { float multipliers[]; };

layout(push_constant) uniform Params {
  ivec4 in_sizes;   // N, C, H, W
  ivec4 out_sizes;  // N, C, OH, OW
  ivec2 kernel;     // (h, w) everywhere below; pooling only
  ivec2 stride;
  ivec2 padding;
  int invocations;  // that do work
  int in_word_count;
  int adaptive;     // 1: adaptive windows (kernel, stride, padding unused)
  int count_include_pad;
  int table_w;      // columns of the multiplier table: m(a, b) = multipliers[(a - 1) * table_w + b - 1]
  int in_zp;
  int out_zp;
  float inv_out_scale;
} p;

// The window of output position o along dim d (0: h, 1: w) of input size `size`, output size
// `outs`: (clipped start, clipped end, extent) — see the header.
ivec3 pool_window(int o, int d, int size, int outs) {
  if (p.adaptive != 0) {
    const int start = (o * size) / outs, end = div_up((o + 1) * size, outs);
    return ivec3(start, end, end - start);
  }
  const int start = o * p.stride[d] - p.padding[d];
  const int end = min(start + p.kernel[d], size + p.padding[d]);
  return ivec3(max(start, 0), min(end, size), end - start);
}

// The 4 channels of word `word`.
ivec4 lanes(int word) {
  return ivec4(lane_of(word, 0), lane_of(word, 1), lane_of(word, 2), lane_of(word, 3));
}

// The 16-byte chunks holding input row h of block (n, c4) from width w_lo on: chunk j is
// in_words4[first + j * step], its word e is width width0 + 4 * j + e (4W4C: chunks of 4 widths,
// C4 chunks apart; 4C1W: the row's W words are contiguous, read in aligned chunks, so width0 may
// lie before the row and the last chunk past it).
struct RowChunks {
  int first, step, width0;
};
RowChunks row_chunks(int n, int c4, int h, int w_lo) {
  const int C4 = div_up(p.in_sizes.y, 4), H = p.in_sizes.z, W = p.in_sizes.w;
#if INT8_LAYOUT == LAYOUT_4W4C
  return RowChunks(((n * H + h) * div_up(W, 4) + w_lo / 4) * C4 + c4, C4, 4 * (w_lo / 4));
#else
  const int row_start = ((n * H + h) * C4 + c4) * W, m4 = (row_start + w_lo) / 4;
  return RowChunks(m4, 1, 4 * m4 - row_start);
#endif
}

// Chunk `index`; the tensor's last one may end early (4C1W): words past the end are not read.
ivec4 load_chunk(int index) {
  if (4 * index + 3 < p.in_word_count) return in_words4[index];
  ivec4 words;
  for (int e = 0; e < 4; ++e) words[e] = in_words[min(4 * index + e, p.in_word_count - 1)];
  return words;
}

// Adds the words of a chunk starting at width `width0` to the sums of the windows `ww` that
// hold them (widths outside [w_lo, w_hi) belong to none).
void add_chunk(ivec4 words, int width0, int w_lo, int w_hi, ivec3 ww[4], inout ivec4 sums[4]) {
  for (int e = 0; e < 4; ++e) {
    const int w = width0 + e;
    if (w < w_lo || w >= w_hi) continue;
    const ivec4 v = lanes(words[e]);
    for (int j = 0; j < 4; ++j) {
      if (w >= ww[j].x && w < ww[j].y) sums[j] += v;
    }
  }
}

// The requantized word of one output: the window's channel sums `sum` over `count` positions,
// divisor (a, b); lanes >= `real` are the zero point.
int requantized_word(ivec4 sum, int count, ivec2 ab, int real) {
  const float m = multipliers[(ab.x - 1) * p.table_w + ab.y - 1];
  const ivec4 acc = sum - count * p.in_zp;
  // Rounding commutes with clamping to integers: clamp first, which also keeps t in
  // round_even_small's range (common.glslh).
  const float lo = float(-128 - p.out_zp), hi = float(127 - p.out_zp);
  int word = 0;
  for (int j = 0; j < 4; ++j) {
    precise float y = small_int_to_float(acc[j]) * m;
    precise float t = clamp(y * p.inv_out_scale, lo, hi);
    const int q = j < real ? round_even_small(t) + p.out_zp : p.out_zp;
    word |= (q & 0xFF) << (8 * j);
  }
  return word;
}

void main() {
  const int i = int(linear_invocation_id());
  if (i >= p.invocations) return;
  const int C = p.out_sizes.y, OH = p.out_sizes.z, OW = p.out_sizes.w;
  const int H = p.in_sizes.z, W = p.in_sizes.w;
  const int C4 = div_up(C, 4), OW4 = div_up(OW, 4);
#if INT8_LAYOUT == LAYOUT_4W4C
  const int c4 = i % C4, ow4 = (i / C4) % OW4, row = i / (C4 * OW4);  // row = n * OH + oh
  const int oh = row % OH, n = row / OH;
#else
  const int ow4 = i % OW4, row = i / OW4;  // row = (n * OH + oh) * C4 + c4
  const int c4 = row % C4, oh = (row / C4) % OH, n = row / (C4 * OH);
#endif
  const int ow0 = 4 * ow4, outputs = min(4, OW - ow0);

  const ivec3 wh = pool_window(oh, 0, H, OH);
  ivec3 ww[4];
  for (int j = 0; j < 4; ++j) ww[j] = pool_window(ow0 + min(j, outputs - 1), 1, W, OW);
  const int w_lo = ww[0].x, w_hi = ww[outputs - 1].y;  // the widths any window covers

  ivec4 sums[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  const int rows = wh.y - wh.x;
  RowChunks rc[3];
  int chunks[3] = int[3](0, 0, 0);
  bool buffered = rows <= 3;
  [[unroll]] for (int r = 0; r < 3; ++r) {
    if (r >= rows) break;
    rc[r] = row_chunks(n, c4, wh.x + r, w_lo);
    chunks[r] = div_up(w_hi - rc[r].width0, 4);
    buffered = buffered && chunks[r] <= 4;
  }
  if (buffered) {
    ivec4 buf[12];
    [[unroll]] for (int r = 0; r < 3; ++r) {
      [[unroll]] for (int j = 0; j < 4; ++j) {
        if (j < chunks[r]) buf[4 * r + j] = load_chunk(rc[r].first + j * rc[r].step);
      }
    }
    [[unroll]] for (int r = 0; r < 3; ++r) {
      [[unroll]] for (int j = 0; j < 4; ++j) {
        if (j < chunks[r]) add_chunk(buf[4 * r + j], rc[r].width0 + 4 * j, w_lo, w_hi, ww, sums);
      }
    }
  } else {
    for (int h = wh.x; h < wh.y; ++h) {
      const RowChunks c = row_chunks(n, c4, h, w_lo);
      for (int j = 0; c.width0 + 4 * j < w_hi; ++j) {
        add_chunk(load_chunk(c.first + j * c.step), c.width0 + 4 * j, w_lo, w_hi, ww, sums);
      }
    }
  }

  const int real = min(4, C - 4 * c4);
  const int pad = splat_byte(p.out_zp);
  ivec4 result = ivec4(pad);
  for (int j = 0; j < outputs; ++j) {
    const int count = (wh.y - wh.x) * (ww[j].y - ww[j].x);
    const ivec2 ab = p.count_include_pad != 0 ? ivec2(wh.z, ww[j].z)
                                              : ivec2(wh.y - wh.x, ww[j].y - ww[j].x);
    result[j] = requantized_word(sums[j], count, ab, real);
  }
#if INT8_LAYOUT == LAYOUT_4W4C
  out_words4[i] = result;
#else
  const int o = row * OW + ow0;  // the first output word
  if (outputs == 4 && o % 4 == 0) {
    out_words4[o / 4] = result;
  } else {
    for (int j = 0; j < outputs; ++j) out_words[o + j] = result[j];
  }
#endif
}
