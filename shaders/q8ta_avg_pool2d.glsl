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
// Each invocation computes 4 outputs of OUT_ROWS output rows of one (n, c4) (1, or 2 in the fixed
// variant where windows share rows): rows oh = OUT_ROWS * ohg + o, widths ow0 .. ow0 + 3 (ow0 =
// 4 * ow4), i.e. one 16-byte chunk per row in 4W4C (chunk ((n * OH + oh) * OW4 + ow4) * C4 + c4;
// widths past OW are padding words; invocation ((n * OHG + ohg) * OW4 + ow4) * C4 + c4) and 4
// consecutive words of one row in 4C1W (row (n * OH + oh) * C4 + c4; invocation ((n * OHG +
// ohg) * C4 + c4) * OW4 + ow4). The m of a window of the full kernel (every interior one) is the
// push constant p.full_m; only border windows read the table.
//
// WINDOWS_FIXED (avg_pool2d whose windows fit: kernel h * w <= 257, 3 * stride_w + kernel_w <=
// MAX_SPAN; the host picks it): kernel, stride and padding are specialization constants, so the
// driver unrolls every loop and all positions below are compile-time. The 4 windows cover the
// SPAN = 3 * SW + KW input widths x0 .. x0 + SPAN - 1 (x0 = ow0 * SW - PW); for each of the KH
// input rows inside the input, each of those widths' words is added once into its column sum,
// the 4 channels at a time in 16-bit fields (u = word ^ 0x80808080 holds q + 128 unsigned: lo +=
// u & 0x00FF00FF takes channels 0 and 2, hi += (u >> 8) & 0x00FF00FF channels 1 and 3; at most
// 257 positions of <= 255 cannot carry out of a field). Columns outside the input are then
// zeroed, window j's sums are its KW columns j * SW .. j * SW + KW - 1 added, and acc = field -
// 128 * count (- count * zp_in): the same exact int32 sum as the general path. With 2 output
// rows, each input row is loaded once and added to the column sums of the rows that take it.
//
// WINDOWS_GENERAL (adaptive windows and larger kernels): for each input row of the window it reads
// the words of the widths the 4 windows cover with aligned 16-byte loads and adds each word's 4
// channels into the sums of the windows that contain it. Windows of up to 3 rows whose 4 outputs
// span at most 4 chunks per row issue all their loads before adding (they are independent, so
// their latencies overlap); larger ones stream row by row. Lanes past C hold the zero point.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

#define WINDOWS_GENERAL 0
#define WINDOWS_FIXED 1

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
  float full_m;     // m(kernel h, kernel w): the multiplier of every window of the full kernel
} p;

#if WINDOWS == WINDOWS_FIXED
// The node's window geometry (h, w): kernel, stride, padding (the same values as p.kernel ...).
layout(constant_id = 3) const int KH = 1;
layout(constant_id = 4) const int KW = 1;
layout(constant_id = 5) const int SH = 1;
layout(constant_id = 6) const int SW = 1;
layout(constant_id = 7) const int PH = 0;
layout(constant_id = 8) const int PW = 0;
// Output rows per invocation: 2 where windows overlap by at least half along h (2 * SH <= KH,
// e.g. k3s1: 4 input rows give 2 output rows instead of 3 rows each), else 1 (the host's choice).
layout(constant_id = 9) const int OUT_ROWS = 1;
const int SPAN = 3 * SW + KW;  // input widths the 4 windows of an invocation cover
const int MAX_SPAN = 16;       // the host's bound on SPAN (register arrays below)
const int MAX_OUT_ROWS = 2;
#else
const int OUT_ROWS = 1;
#endif

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

// The requantized word of one output: the window's channel sums `sum` over `count` positions,
// divisor (a, b); lanes >= `real` are the zero point.
int requantized_word(ivec4 sum, int count, ivec2 ab, int real) {
  const float m = ab == p.kernel ? p.full_m : multipliers[(ab.x - 1) * p.table_w + ab.y - 1];
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

#if WINDOWS == WINDOWS_FIXED
// Column sums of the invocation's SPAN widths for its output row o (col_lo[o * MAX_SPAN + c]):
// (q + 128) over that row's window rows in 16-bit fields (col_lo: channels 0 and 2, col_hi:
// channels 1 and 3; see the header).
uint col_lo[MAX_OUT_ROWS * MAX_SPAN], col_hi[MAX_OUT_ROWS * MAX_SPAN];

// The SPAN words of input row h of block (n, c4) from width x0 = 4 * ow4 * SW - PW, split into
// their (lo, hi) fields of q + 128. Widths outside the input read a clamped in-bounds word;
// column_sums zeroes their columns.
void load_row(int n, int c4, int ow4, int h, out uint lo[MAX_SPAN], out uint hi[MAX_SPAN]) {
  const int C4 = div_up(p.in_sizes.y, 4), H = p.in_sizes.z, W = p.in_sizes.w;
  uint u[MAX_SPAN];
#if INT8_LAYOUT == LAYOUT_4W4C
  // Column c is word (c - PW) & 3 of chunk ow4 * SW + ((c - PW) >> 2) of the row: 4 * ow4 * SW
  // is a multiple of 4, so which word of which chunk is compile-time; 16-byte loads.
  const int W4 = div_up(W, 4), row = (n * H + h) * W4;
  [[unroll]] for (int k = (-PW) >> 2; k <= (SPAN - 1 - PW) >> 2; ++k) {
    const ivec4 words = in_words4[(row + clamp(ow4 * SW + k, 0, W4 - 1)) * C4 + c4];
    [[unroll]] for (int e = 0; e < 4; ++e) {
      const int c = 4 * k + e + PW;
      if (c >= 0 && c < SPAN) u[c] = uint(words[e]);
    }
  }
#else
  const int row = ((n * H + h) * C4 + c4) * W, x0 = 4 * ow4 * SW - PW;
  [[unroll]] for (int c = 0; c < SPAN; ++c) u[c] = uint(in_words[row + clamp(x0 + c, 0, W - 1)]);
#endif
  [[unroll]] for (int c = 0; c < SPAN; ++c) {
    u[c] ^= 0x80808080u;
    lo[c] = u[c] & 0x00FF00FFu;
    hi[c] = (u[c] >> 8) & 0x00FF00FFu;
  }
}

// Fills col_lo / col_hi for output rows oh0 .. oh0 + OUT_ROWS - 1 of block (n, c4), widths of
// ow4: each input row inside the input is loaded once and added to the rows whose window holds it.
void column_sums(int n, int c4, int ow4, int oh0) {
  const int H = p.in_sizes.z, W = p.in_sizes.w;
  [[unroll]] for (int c = 0; c < OUT_ROWS * MAX_SPAN; ++c) {
    col_lo[c] = 0u;
    col_hi[c] = 0u;
  }
  [[unroll]] for (int r = 0; r < (OUT_ROWS - 1) * SH + KH; ++r) {
    const int h = oh0 * SH - PH + r;
    if (h < 0 || h >= H) continue;
    uint lo[MAX_SPAN], hi[MAX_SPAN];
    load_row(n, c4, ow4, h, lo, hi);
    [[unroll]] for (int o = 0; o < OUT_ROWS; ++o) {
      if (r < o * SH || r >= o * SH + KH) continue;  // compile-time
      [[unroll]] for (int c = 0; c < SPAN; ++c) {
        col_lo[o * MAX_SPAN + c] += lo[c];
        col_hi[o * MAX_SPAN + c] += hi[c];
      }
    }
  }
  const int x0 = 4 * ow4 * SW - PW;
  [[unroll]] for (int c = 0; c < SPAN; ++c) {
    if (x0 + c >= 0 && x0 + c < W) continue;
    [[unroll]] for (int o = 0; o < OUT_ROWS; ++o) {
      col_lo[o * MAX_SPAN + c] = 0u;
      col_hi[o * MAX_SPAN + c] = 0u;
    }
  }
}

// The channel sums (of q, lanes in order) of window j of output row o, `count` positions: its
// columns j * SW .. j * SW + KW - 1.
ivec4 window_sum(int o, int j, int count) {
  uint lo = 0u, hi = 0u;
  [[unroll]] for (int t = 0; t < KW; ++t) {
    lo += col_lo[o * MAX_SPAN + j * SW + t];
    hi += col_hi[o * MAX_SPAN + j * SW + t];
  }
  return ivec4(lo & 0xFFFFu, hi & 0xFFFFu, lo >> 16, hi >> 16) - 128 * count;
}

#else
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

// The channel sums of the 4 windows ww (rows wh) of block (n, c4): sum of q, lanes in order.
void window_sums(int n, int c4, int ow4, int oh, ivec3 wh, ivec3 ww[4], int outputs,
                 out ivec4 sums[4]) {
  sums = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  const int w_lo = ww[0].x, w_hi = ww[outputs - 1].y;  // the widths any window covers
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

}

#endif

void main() {
  const int i = int(linear_invocation_id());
  if (i >= p.invocations) return;
  const int C = p.out_sizes.y, OH = p.out_sizes.z, OW = p.out_sizes.w;
  const int H = p.in_sizes.z, W = p.in_sizes.w;
  const int C4 = div_up(C, 4), OW4 = div_up(OW, 4), OHG = div_up(OH, OUT_ROWS);
  // Invocation i computes output rows OUT_ROWS * ohg .. (clipped to OH), widths 4 * ow4 .. + 3.
#if INT8_LAYOUT == LAYOUT_4W4C
  const int c4 = i % C4, ow4 = (i / C4) % OW4, g = i / (C4 * OW4);  // g = n * OHG + ohg
  const int ohg = g % OHG, n = g / OHG;
#else
  const int ow4 = i % OW4, g = i / OW4;  // g = (n * OHG + ohg) * C4 + c4
  const int c4 = g % C4, ohg = (g / C4) % OHG, n = g / (C4 * OHG);
#endif
  const int ow0 = 4 * ow4, outputs = min(4, OW - ow0);
  const int real = min(4, C - 4 * c4);
  ivec3 ww[4];  // outputs past OW repeat the last one (their words are padding)
  [[unroll]] for (int j = 0; j < 4; ++j) ww[j] = pool_window(ow0 + min(j, outputs - 1), 1, W, OW);
#if WINDOWS == WINDOWS_FIXED
  column_sums(n, c4, ow4, OUT_ROWS * ohg);
#endif

  [[unroll]] for (int o = 0; o < OUT_ROWS; ++o) {
    const int oh = OUT_ROWS * ohg + o;
    if (oh >= OH) break;
    const ivec3 wh = pool_window(oh, 0, H, OH);
    ivec4 result = ivec4(splat_byte(p.out_zp));
#if WINDOWS == WINDOWS_GENERAL
    ivec4 sums[4];
    window_sums(n, c4, ow4, oh, wh, ww, outputs, sums);
#endif
    [[unroll]] for (int j = 0; j < 4; ++j) {
      if (j >= outputs) break;
      const int count = (wh.y - wh.x) * (ww[j].y - ww[j].x);
#if WINDOWS == WINDOWS_FIXED
      const ivec4 sum = window_sum(o, j, count);
#else
      const ivec4 sum = sums[j];
#endif
      const ivec2 ab = p.count_include_pad != 0 ? ivec2(wh.z, ww[j].z)
                                                : ivec2(wh.y - wh.x, ww[j].y - ww[j].x);
      result[j] = requantized_word(sum, count, ab, real);
    }
#if INT8_LAYOUT == LAYOUT_4W4C
    out_words4[((n * OH + oh) * OW4 + ow4) * C4 + c4] = result;
#else
    const int first = ((n * OH + oh) * C4 + c4) * OW + ow0;  // the first output word
    if (outputs == 4 && first % 4 == 0) {
      out_words4[first / 4] = result;
    } else {
      for (int j = 0; j < outputs; ++j) out_words[first + j] = result[j];
    }
#endif
  }
}
