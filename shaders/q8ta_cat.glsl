// q8ta_cat: int8x4 inputs copied into consecutive slices of the output along one dim, DIM (N, C,
// H or W of the 4-D view), each requantized to the output's quantization where its own differs:
//   out[.., lo_i + j, ..] = requant_i(in_i[.., src_start + j * src_step, ..])
// q8ta_cat (runtime/ops/Concat.h) binds up to 4 inputs with src_start 0, src_step 1 and lo_i the
// sum of the extents before input i; q8ta_slice binds one input with lo 0 and its own start and
// step. All tensors share the packed layout INT8_LAYOUT and every size but DIM's.
//
// Invocation t writes output tile t (4 c x 4 h x 4 w, walk order TILE_ORDER) when this dispatch
// owns it: a cat of more than 4 inputs is several dispatches over windows of up to 4 inputs, the
// tiles split between them by where they start along DIM ([own_lo, own_hi)), so that every
// element of a window's tiles comes from the window's inputs and every tile is written once.
// In tile registers the lanes are always channels (int8x4_tile.glslh), so one code path serves
// every layout:
// - with step 1, each input a tile overlaps contributes the one or two input tiles holding its
//   elements (two when its slice starts mid-tile, e.g. a channel offset that is no multiple of
//   4 straddles int8x4 words), shifted into place (bytes across words for DIM = C, whole words
//   for H and W) and merged by position: a tile inside one input is one or two tile loads, one
//   on a boundary between inputs a few more;
// - a slice with step > 1 gathers its elements one by one (word and lane of each from
//   int8x4_position).
// Requantization (input i with bit i of `requant` set), per element, each operation rounded once
// (`precise`), as q8ta_clamp computes it and compiler/reference/QuantChain.h checks it:
//   y = float32(q - zp_i) * s_i;  q_out = clamp(roundEven(y * inv_s_out) + zp_out, qmin, qmax)
// Inputs without the bit keep their bytes (same scale and zero point as the output, full int8
// range: the requantization would give every value back). Elements outside the output are
// stored as zp_out (store_tile).
// Variants: INT8_LAYOUT (4W4C, 4H4W, 4C1W) x WINDOW, the inputs a dispatch binds: 4, or 2 for a
// device allowing fewer than 5 storage buffers a stage (the Android baseline's 4; its windows
// then hold 2 inputs each); DIM is specialization constant 4.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "tile_walk.glslh"

layout(constant_id = 4) const int DIM = 1;  // 0 N, 1 C, 2 H, 3 W
const int SPAN = DIM == 0 ? 1 : 4;          // elements of a tile along DIM

#define TILE_LAYOUT INT8_LAYOUT

#define TILE_BINDING 0
#define TILE_QUALIFIER writeonly
#define TILE_FN(x) out_##x
#define TILE_STORE
#include "int8x4_tile.glslh"
#undef TILE_BINDING
#undef TILE_QUALIFIER
#undef TILE_FN
#undef TILE_STORE

// Inputs 0..WINDOW-1 at bindings 1..WINDOW (the host repeats an input in the slots it does not
// use).
#define TILE_QUALIFIER readonly
#define TILE_LOAD
#define TILE_BINDING 1
#define TILE_FN(x) in0_##x
#include "int8x4_tile.glslh"
#undef TILE_BINDING
#undef TILE_FN
#define TILE_BINDING 2
#define TILE_FN(x) in1_##x
#include "int8x4_tile.glslh"
#undef TILE_BINDING
#undef TILE_FN
#if WINDOW == 4
#define TILE_BINDING 3
#define TILE_FN(x) in2_##x
#include "int8x4_tile.glslh"
#undef TILE_BINDING
#undef TILE_FN
#define TILE_BINDING 4
#define TILE_FN(x) in3_##x
#include "int8x4_tile.glslh"
#undef TILE_BINDING
#undef TILE_FN
#endif
#undef TILE_QUALIFIER
#undef TILE_LOAD
#undef TILE_LAYOUT

layout(push_constant) uniform Params {
  ivec4 out_sizes;     // N, C, H, W of the output
  ivec4 in_extent;     // size along DIM of inputs 0..3 (their other sizes are the output's)
  ivec4 in_lo;         // where input i starts along DIM in the output
  ivec4 in_zp;
  vec4 in_scale;
  int count;           // inputs bound (1..4)
  int own_lo;          // the tiles starting along DIM in [own_lo, own_hi) are this dispatch's
  int own_hi;
  int src_start;       // output index lo_i + j reads input index src_start + j * src_step
  int src_step;
  int tile_count;      // invocations the tile walk launches
  int requant;         // bit i: input i is requantized
  int out_zp;
  float inv_out_scale;
  float t_min;         // float(qmin - zp_out)
  float t_max;         // float(qmax - zp_out)
} p;

// The input holding output index x along DIM: the last whose slice starts at or before x.
int input_of(int x) {
  int i = 0;
  for (int k = 1; k < p.count; ++k) {
    if (p.in_lo[k] <= x) i = k;
  }
  return i;
}

ivec4 input_sizes(int i) {
  ivec4 s = p.out_sizes;
  s[DIM] = p.in_extent[i];
  return s;
}

void load_input_tile(int i, ivec4 tc, out ivec4 tile[4]) {
  const ivec4 s = input_sizes(i);
  if (i == 0) {
    in0_load_tile(s, tc, tile);
  } else if (i == 1) {
    in1_load_tile(s, tc, tile);
#if WINDOW == 4
  } else if (i == 2) {
    in2_load_tile(s, tc, tile);
  } else {
    in3_load_tile(s, tc, tile);
#endif
  }
}

// Word `word` of input i (the tile header declares 4W4C / 4H4W buffers as ivec4 arrays).
#if INT8_LAYOUT == LAYOUT_4C1W
#define WORD_OF(x, word) x##_words[word]
#else
#define WORD_OF(x, word) x##_words[(word) >> 2][(word) & 3]
#endif
int input_word(int i, int word) {
  if (i == 0) return WORD_OF(in0, word);
#if WINDOW == 4
  if (i == 1) return WORD_OF(in1, word);
  if (i == 2) return WORD_OF(in2, word);
  return WORD_OF(in3, word);
#else
  return WORD_OF(in1, word);
#endif
}

bool requantizes(int i) { return ((p.requant >> i) & 1) != 0; }

int requantized(int q, int i) {
  // |q - zp| <= 255: exact through the mantissa (common.glslh). Rounding commutes with clamping
  // to integers: clamp first, then round through the mantissa.
  precise float y = small_int_to_float(q - p.in_zp[i]) * p.in_scale[i];
  precise float t = clamp(y * p.inv_out_scale, p.t_min, p.t_max);
  return round_even_small(t) + p.out_zp;
}

void requantize_tile(int i, inout ivec4 tile[4]) {
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      int word = tile[hh][ww];
      for (int lane = 0; lane < 4; ++lane) {
        word = with_lane(word, lane, requantized(lane_of(word, lane), i));
      }
      tile[hh][ww] = word;
    }
  }
}

// Input i's part of the output tile at `tc` (step 1): input indices s0 .. s0 + SPAN - 1 along
// DIM in the tile's positions 0 .. SPAN - 1, from the input tile holding s0 and, when s0 is not
// tile-aligned, the next one, shifted into place by r = s0 mod SPAN elements. s0 is negative
// where the output tile starts before the input; positions the input does not hold come out
// as 0 (or whatever a neighbouring input element is: merge_positions keeps only the input's).
void input_part(int i, ivec4 tc, int s0, out ivec4 tile[4]) {
  const int r = ((s0 % SPAN) + SPAN) % SPAN;
  const int first = (s0 - r) / SPAN;  // -1 when the tile starts before the input
  ivec4 low[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  ivec4 high[4] = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  ivec4 src = tc;
  src[DIM] = first;
  // A tile overlapping the input has s0 < extent, so the first tile exists when first >= 0;
  // the next one only when the input reaches it.
  if (first >= 0) load_input_tile(i, src, low);
  if (r == 0) {
    tile = low;
    return;
  }
  src[DIM] = first + 1;
  if (SPAN * src[DIM] < p.in_extent[i]) load_input_tile(i, src, high);
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      if (DIM == 1) {  // lanes r..3 of the low word, then lanes 0..r-1 of the high one
        tile[hh][ww] = int(uint(low[hh][ww]) >> (8 * r)) | (high[hh][ww] << (32 - 8 * r));
      } else if (DIM == 2) {  // rows
        tile[hh][ww] = hh + r < 4 ? low[hh + r][ww] : high[hh + r - 4][ww];
      } else {  // DIM == 3: widths
        tile[hh][ww] = ww + r < 4 ? low[hh][ww + r] : high[hh][ww + r - 4];
      }
    }
  }
}

// Positions first .. last along DIM (lanes for C, rows for H, widths for W) of `part` into
// `tile`.
void merge_positions(inout ivec4 tile[4], ivec4 part[4], int first, int last) {
  const uint lanes = (last >= 3 ? 0xFFFFFFFFu : (1u << (8 * (last + 1))) - 1u) &
                     ~((1u << (8 * first)) - 1u);
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      const int at = DIM == 2 ? hh : DIM == 3 ? ww : 0;
      if (DIM == 1) {
        tile[hh][ww] = int((uint(tile[hh][ww]) & ~lanes) | (uint(part[hh][ww]) & lanes));
      } else if (at >= first && at <= last) {
        tile[hh][ww] = part[hh][ww];
      }
    }
  }
}

// The output tile at `tc` starting at output index t0 along DIM and ending at t_last (step 1):
// one part per input it overlaps (one inside an input, up to 4 on the boundaries between
// inputs), each requantized when its input is, merged by position.
void joined_tile(ivec4 tc, int t0, int t_last, out ivec4 tile[4]) {
  const int first = input_of(t0), last = input_of(t_last);
  tile = ivec4[4](ivec4(0), ivec4(0), ivec4(0), ivec4(0));
  for (int i = first; i <= last; ++i) {
    ivec4 part[4];
    input_part(i, tc, p.src_start + t0 - p.in_lo[i], part);
    if (requantizes(i)) requantize_tile(i, part);
    if (first == last) {
      tile = part;
      return;
    }
    const int end = i + 1 < p.count ? p.in_lo[i + 1] : t_last + 1;  // the input's end, clipped
    merge_positions(tile, part, max(p.in_lo[i], t0) - t0, min(end, t_last + 1) - 1 - t0);
  }
}

// The output tile at `tc` gathered element by element (any input, any step).
void gathered_tile(ivec4 tc, out ivec4 tile[4]) {
  const ivec4 s = p.out_sizes;
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      int word = 0;
      for (int cc = 0; cc < 4; ++cc) {
        ivec4 e = ivec4(tc.x, 4 * tc.y + cc, 4 * tc.z + hh, 4 * tc.w + ww);
        if (e.y >= s.y || e.z >= s.z || e.w >= s.w) continue;  // padding: store_tile fills it
        const int x = e[DIM];
        const int i = input_of(x);
        e[DIM] = p.src_start + (x - p.in_lo[i]) * p.src_step;
        const ivec2 at = int8x4_position(INT8_LAYOUT, input_sizes(i), e.x, e.y, e.z, e.w);
        int v = lane_of(input_word(i, at.x), at.y);
        if (requantizes(i)) v = requantized(v, i);
        word = with_lane(word, cc, v);
      }
      tile[hh][ww] = word;
    }
  }
}

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.out_sizes, p.tile_count, tc)) return;
  const int t0 = SPAN * tc[DIM];  // first output index of the tile along DIM
  if (t0 < p.own_lo || t0 >= p.own_hi) return;
  const int t_last = min(t0 + SPAN, p.out_sizes[DIM]) - 1;
  ivec4 tile[4];
  if (p.src_step == 1) {
    joined_tile(tc, t0, t_last, tile);
  } else {
    gathered_tile(tc, tile);
  }
  out_store_tile(p.out_sizes, tc, tile, p.out_zp);
}
