// q8ta_attention: scaled dot-product attention of int8 Q [B, Tq, H*D], K and V [B, Tk, H*D]
// (4H4W int8x4, as the linears write them: head h is the columns h*D .. h*D+D-1, so the head
// split is only which words a workgroup reads), with a float32 additive mask broadcast as
// [Bm, 1, Lm, Tk] (Bm 1 or B, Lm 1 or Tq), written as int8 [B, Tq, H*D] (4H4W). The numerics,
// which runtime/ops/Attention.h and the tests' reference state the same way:
//   a[l, j] = sum over the head's D dims of (q - zp_q) * (k - zp_k)       exact int32
//   s[l, j] = float32(a) * (s_q * s_k * scale) + mask[l, j]                 float32
//     (causal: -inf where j > l)
//     mask_affine (q8ta_attention_mask_affine): the mask the kernel adds is made from the one it
//     reads, m' = (m * a0 + b0) * a1 + b1 with each multiply and add rounded to float32 on its
//     own (precise: no fused multiply-add), what aten.rsub.Scalar (a = -alpha, b = other) and
//     aten.mul.Scalar (a = other, b = -0.0) compute one after the other: bit for bit the mask
//     those two ops would have written (BERT's (1 - mask) * -10000 from the 0/1 token mask)
//   online softmax over the key tiles (flash style, max-subtracted): m the running max of s,
//     p[l, j] = exp(s[l, j] - m), each tile rescaling the earlier sums by exp(m_old - m_new)
//     (a key whose s is -inf has p = 0; a row with every s -inf has output 0)
//   y[l, d] = (sum_j p[l, j] * float32(v[j, d] - zp_v)) * (s_v / sum_j p[l, j])
//   q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127)   (the project's rounding)
// exp and the summation order are the device's: the int8 result agrees with an exact
// computation within one step where y * inv_s_out lies next to a rounding boundary.
// Q, K and V may be column ranges of wider tensors (AttentionColumns in runtime/ops/Attention.h:
// the three of one [B, T, 3 H*D] tensor a merged linear writes): each is read with its own row
// width (q_w4, kv_w4 words) from its first word (q_w0, k_w0, v_w0); the output is H*D wide (w4).
// FLOAT_IO = 1 (the float op `attention`): float32 Q, K, V and output in width-packed buffers
// [B, T, H*D], D at most 64; s = (q . k in float32) * scale + mask, the same softmax,
// y = sum_j p * v / sum_j p. Its tiles hold one row per vec4 "chunk" (CHUNK_ROWS = 1) where the
// int8 variant's 16-byte chunks hold 4 rows of one word.
//
// One workgroup of WG invocations per (block of BQ query rows, head, batch): group (x, y, z) =
// (query block, head, batch). Invocation t owns query row r = t / PARTS of the block and part
// p = t % PARTS of it. The block's Q words stay in shared memory; the head's K and V stream
// through shared memory in tiles of TK keys (rows padded by one word: no bank conflicts), each
// tile's 16-byte chunks loaded into registers while the tile before is computed. Per tile:
//   store:   the chunks loaded before (4 rows of one word each; keys past Tk: zeros) go to shared
//            memory, and the next tile's loads (its chunks and this invocation's mask values)
//            are issued
//   scores:  invocation (r, p) computes its row against keys p, p + PARTS, ... of the tile
//            (int8 dot products of 4 lanes at a time, the zero points folded in through the
//            rows' and keys' lane sums), adds the mask, and leaves the maximum of its scores
//   softmax: each of the row's invocations reads the row's PARTS maxima, rescales its running
//            sum and its accumulators by exp(old max - new max) and writes its keys' p
//   P.V:     invocation (r, p) adds p * (v - zp_v) of the keys of its range of the tile (p / 8)
//            to the head's words p % 8, p % 8 + 8, ... (4 dims each) of row r
// At the end the row's sums are added up, the other key ranges' accumulators are added to the
// first's through shared memory, and the first range requantizes its words and writes them;
// rows past Tq inside the last 4-row group (the layout's padding) get the output zero point.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define VKD_FIXED_LOCAL_SIZE
// 256 invocations for 4 query rows of a small head (tiles of 64 or 128 keys): each invocation
// half the keys of the 128-invocation form (measured in docs/BENCHMARKS.md); the runtime's
// AttentionForm::workgroup (plan_int8_attention) mirrors this.
#if defined(QUERY_ROWS) && QUERY_ROWS == 4 && defined(SMALL_HEAD) && SMALL_HEAD != 0
#define WG 256
#else
#define WG 128
#endif
#ifndef SMALL_HEAD
#define SMALL_HEAD 0  // the float family has the one form
#endif
// Query rows per workgroup: 8 (two 4-row chunks), or 4 (QUERY_ROWS 4, int8: twice the
// workgroups, each with half the rows, for grids too small to fill the device).
#ifndef QUERY_ROWS
#define QUERY_ROWS 8
#endif
#define BQ QUERY_ROWS
#define PARTS (WG / BQ)                         // invocations per query row: 16, 32 or 64
#define WORD_PARTS 8                            // P.V: invocations sharing a row's words
#define KEY_SPLIT (PARTS / WORD_PARTS)          // P.V: the tile's keys in this many ranges
#if FLOAT_IO
#define TK 16          // keys per tile
#define MAX_D4 16      // vec4s of one head's row: D <= 64
#define CHUNK_ROWS 1   // rows of one loaded chunk: a vec4 of one row
#define Chunk vec4
#define Elem vec4      // a shared tile's element: 4 dims of one row
#elif SMALL_HEAD
// Heads of D <= 32 (BERT-class encoders: MiniLM's 12 x 32; SMALL_HEAD 1) or D <= 64 (ViT-Ti's
// 3 x 64; SMALL_HEAD 2): tiles of 128 / 64 keys instead of 32 (a sequence of 128 is one pass:
// a quarter of the barriers and load round trips), the same shared K / V words as the large
// form's 32 x 32.
#define TK (SMALL_HEAD == 1 ? 128 : 64)       // keys per tile
#define MAX_D4 (SMALL_HEAD == 1 ? 8 : 16)     // words of one head's row: D <= 32 / 64
#define CHUNK_ROWS 4   // rows of one loaded chunk: 16 bytes of 4H4W, one word of 4 rows
#define Chunk ivec4
#define Elem int
#else
#define TK 32          // keys per tile
#define MAX_D4 32      // words of one head's row: D <= 128
#define CHUNK_ROWS 4   // rows of one loaded chunk: 16 bytes of 4H4W, one word of 4 rows
#define Chunk ivec4
#define Elem int
#endif
#define ROW (MAX_D4 + 1)                              // a shared row's stride (a spare element)
// P.V: independent partial sums per word (every form's key range, TK / KEY_SPLIT = 8 .. 32
// keys, is a multiple).
#define PV_CHAINS 4
#define LOADS ((TK / CHUNK_ROWS) * MAX_D4 / WG)       // K (and V) chunks per invocation per tile
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "int8_dot.glslh"

#if FLOAT_IO
layout(set = 0, binding = 0) writeonly buffer OutFloats { vec4 out_vec4s[]; };
#else
layout(set = 0, binding = 0) writeonly buffer OutWords { int out_words[]; };
#endif
#ifndef SHARED_KV
#define SHARED_KV 0
#endif
layout(set = 0, binding = 1) readonly buffer QWords { Chunk q_chunks[]; };
#if SHARED_KV
// K and V are views of one tensor, read at their first chunks k_w0 and v_w0 (the column blocks
// of q8ta_linear_qkv's output, or two tensors placed in one buffer by the runtime): one
// binding, 4 storage buffers in all, for a device allowing fewer than 5 a stage (the Android
// baseline's 4).
layout(set = 0, binding = 2) readonly buffer KvWords { Chunk kv_chunks[]; };
#define k_chunks kv_chunks
#define v_chunks kv_chunks
layout(set = 0, binding = 3) readonly buffer Mask { float mask[]; };
#else
layout(set = 0, binding = 2) readonly buffer KWords { Chunk k_chunks[]; };
layout(set = 0, binding = 3) readonly buffer VWords { Chunk v_chunks[]; };
layout(set = 0, binding = 4) readonly buffer Mask { float mask[]; };
#endif

layout(push_constant) uniform Params {
  int tq, tk;          // query rows, key rows
  int w4;              // words of an output row: H * D / 4
  int d4;              // words of one head's row: D / 4
  int mask_rows;       // 1 (one mask row for every query) or tq
  int mask_batches;    // 1 (one mask for every batch) or B
  int q_zp, k_zp, v_zp, out_zp;  // float: 0
  float qk_scale;      // s_q * s_k * scale (float: scale)
  float v_scale;       // s_v (float: 1)
  float inv_out_scale;
  int causal;          // 1: key j > query row l is masked out (PyTorch's is_causal)
  int mask_affine;     // 1: the mask read is made into m' (the header): a0, b0, a1, b1
  float mask_a0, mask_b0, mask_a1, mask_b1;
  int q_w4, kv_w4;       // words of a row of Q, of K and V (w4 unless they are column ranges)
  int q_w0;            // the first word of Q in its rows (0 unless a column range)
  int k_w0, v_w0;      // the chunk K, V start at: their first word in their rows (0 unless
                       // column ranges) plus their place in their one binding (SHARED_KV)
} p;

shared Elem q_tile[BQ * ROW];
shared Elem k_tile[TK * ROW];  // after the last tile: a key range's accumulators
shared Elem v_tile[TK * ROW];
shared float p_tile[BQ * (TK + 1)];  // the tile's p
shared float part_max[WG];           // per invocation: the maximum of its scores of the tile
shared float part_sum[WG];           // per invocation: its running sum, after the last tile

// The chunk of a tensor of `rows` rows holding rows CHUNK_ROWS*c .. CHUNK_ROWS*c+CHUNK_ROWS-1
// of word (float: vec4) `w` of the `w4` of a row in batch `b`. int8, 16 bytes of 4H4W:
// component = row % 4, lanes = 4 widths; float: the row's 4 dims.
int chunk_at(int b, int rows, int c, int w, int w4) {
  return (b * div_up(rows, CHUNK_ROWS) + c) * w4 + w;
}

#if FLOAT_IO
Elem chunk_row(Chunk c, int j) { return c; }
// The value of 4 dims of V.
vec4 value_of(Elem e) { return e; }
// A key range's accumulators of row word `at`, through k_tile after the last tile.
void stash(int at, vec4 v) { k_tile[at] = v; }
vec4 unstash(int at) { return k_tile[at]; }
#else
Elem chunk_row(Chunk c, int j) { return c[j]; }
vec4 value_of(Elem e) {
  return vec4(lane_of(e, 0), lane_of(e, 1), lane_of(e, 2), lane_of(e, 3)) - float(p.v_zp);
}
void stash(int at, vec4 v) {
  for (int c = 0; c < 4; ++c) k_tile[4 * at + c] = floatBitsToInt(v[c]);
}
vec4 unstash(int at) {
  vec4 v;
  for (int c = 0; c < 4; ++c) v[c] = intBitsToFloat(k_tile[4 * at + c]);
  return v;
}
#endif

// The mask value added to the scores: as read, or made from it (mask_affine, in the header).
float mask_value(float m) {
  if (p.mask_affine == 0) return m;
  precise float scaled = m * p.mask_a0;
  precise float shifted = scaled + p.mask_b0;
  precise float scaled2 = shifted * p.mask_a1;
  precise float made = scaled2 + p.mask_b1;
  return made;
}

// This invocation's chunks of the K and V tile of keys k0 .. k0+TK-1 (zeros past Tk), and the
// mask of its keys of that tile (from mask_base, its row's).
void fetch(int b, int k0, int w0, int mask_base, out Chunk kc[LOADS], out Chunk vc[LOADS],
           out float mk[TK / PARTS]) {
  const int part = int(gl_LocalInvocationIndex) % PARTS;
  for (int k = 0; k < TK / PARTS; ++k) {
    const int key = k0 + part + k * PARTS;
    mk[k] = key < p.tk ? mask_value(mask[mask_base + key]) : 0.0;
  }
  for (int l = 0; l < LOADS; ++l) {
    const int i = int(gl_LocalInvocationIndex) + l * WG, c4 = i / p.d4, w = i - c4 * p.d4;
    const bool inside = i < (TK / CHUNK_ROWS) * p.d4 && k0 + CHUNK_ROWS * c4 < p.tk;
    const int at = inside ? chunk_at(b, p.tk, k0 / CHUNK_ROWS + c4, w0 + w, p.kv_w4) : 0;
    kc[l] = inside ? k_chunks[at + p.k_w0] : Chunk(0);
    vc[l] = inside ? v_chunks[at + p.v_w0] : Chunk(0);
  }
}

void store_tile(Chunk kc[LOADS], Chunk vc[LOADS]) {
  for (int l = 0; l < LOADS; ++l) {
    const int i = int(gl_LocalInvocationIndex) + l * WG, c4 = i / p.d4, w = i - c4 * p.d4;
    if (i >= (TK / CHUNK_ROWS) * p.d4) break;
    for (int j = 0; j < CHUNK_ROWS; ++j) {
      k_tile[(CHUNK_ROWS * c4 + j) * ROW + w] = chunk_row(kc[l], j);
      v_tile[(CHUNK_ROWS * c4 + j) * ROW + w] = chunk_row(vc[l], j);
    }
  }
}

// Row r's score against key row j of the tile, before the mask: exact int32 sums with the
// zero points folded in (row_fold: D * zp_q * zp_k - zp_k * the row's lane sum), or the float
// dot product.
float score(int r, int j, int row_fold) {
#if FLOAT_IO
  float a = 0.0;
  for (int w = 0; w < p.d4; ++w) a += dot(q_tile[r * ROW + w], k_tile[j * ROW + w]);
  return a * p.qk_scale;
#else
  int a = row_fold, k_sum = 0;
  for (int w = 0; w < p.d4; ++w) {
    const int kw = k_tile[j * ROW + w];
    a += dot_int8x4(q_tile[r * ROW + w], kw);
    k_sum += dot_int8x4(kw, 0x01010101);
  }
  return float(a - p.q_zp * k_sum) * p.qk_scale;
#endif
}

const float kNegInf = -1.0 / 0.0;
const int kOnes = 0x01010101;

void main() {
  const int t = int(gl_LocalInvocationIndex);
  const int q0 = int(gl_WorkGroupID.x) * BQ, head = int(gl_WorkGroupID.y);
  const int b = int(gl_WorkGroupID.z);
  const int d4 = p.d4, w0 = head * d4;
  const int r = t / PARTS, part = t % PARTS, row = q0 + r;
  const int word_part = part % WORD_PARTS, key_range = part / WORD_PARTS;

  // The first tile's K, V and mask loads go out first, in flight with the query words'.
  const int mrow = p.mask_rows == 1 ? 0 : min(row, p.tq - 1);
  const int mask_base = ((p.mask_batches == 1 ? 0 : b) * p.mask_rows + mrow) * p.tk;
  Chunk kc[LOADS], vc[LOADS];
  float mk[TK / PARTS];
  fetch(b, 0, w0, mask_base, kc, vc, mk);
  // The block's query words (int8: rows past tq in a chunk hold the padding; others zeros).
  for (int i = t; i < (BQ / CHUNK_ROWS) * d4; i += WG) {
    const int c4 = i / d4, w = i - c4 * d4;
    const bool inside = q0 + CHUNK_ROWS * c4 < p.tq;
    const Chunk c =
        inside ? q_chunks[chunk_at(b, p.tq, q0 / CHUNK_ROWS + c4, p.q_w0 + w0 + w, p.q_w4)]
               : Chunk(0);
    for (int j = 0; j < CHUNK_ROWS; ++j) q_tile[(CHUNK_ROWS * c4 + j) * ROW + w] = chunk_row(c, j);
  }
  barrier();
  int row_fold = 0;
#if !FLOAT_IO
  int q_sum = 0;  // row r's lane sum (the zero-point correction)
  for (int w = 0; w < d4; ++w) q_sum += dot_int8x4(q_tile[r * ROW + w], kOnes);
  row_fold = 4 * d4 * p.q_zp * p.k_zp - p.k_zp * q_sum;
#endif

  float run_max = kNegInf, run_sum = 0.0;
  // (acc is indexed by constants only: a register array, never local memory.)
  vec4 acc[MAX_D4 / WORD_PARTS];
  for (int i = 0; i < MAX_D4 / WORD_PARTS; ++i) acc[i] = vec4(0.0);

  for (int k0 = 0; k0 < p.tk; k0 += TK) {
    barrier();  // the previous tile's readers are done
    store_tile(kc, vc);
    const float tile_mask[TK / PARTS] = mk;
    if (k0 + TK < p.tk) fetch(b, k0 + TK, w0, mask_base, kc, vc, mk);
    barrier();

    // Scores of row r against keys part, part + PARTS, ...
    float s[TK / PARTS];
    float top = kNegInf;
    for (int k = 0; k < TK / PARTS; ++k) {
      const int j = part + k * PARTS, key = k0 + j;
      const bool seen = key < p.tk && (p.causal == 0 || key <= row);
      s[k] = seen ? score(r, j, row_fold) + tile_mask[k] : kNegInf;
      top = max(top, s[k]);
    }
    part_max[t] = top;
    barrier();

    // Softmax: the row's maximum so far, the rescale of the earlier sums, this tile's p.
    for (int i = 0; i < PARTS; ++i) top = max(top, part_max[r * PARTS + i]);
    const float new_max = max(run_max, top);
    const float rescale = run_max == kNegInf ? 0.0 : exp(run_max - new_max);
    run_max = new_max;
    run_sum *= rescale;
    for (int i = 0; i < MAX_D4 / WORD_PARTS; ++i) acc[i] *= rescale;
    for (int k = 0; k < TK / PARTS; ++k) {
      const float e = s[k] == kNegInf ? 0.0 : exp(s[k] - new_max);
      p_tile[r * (TK + 1) + part + k * PARTS] = e;
      run_sum += e;
    }
    barrier();

    // P.V: row r, keys of range key_range, words word_part, word_part + WORD_PARTS, ...: the
    // range's keys PV_CHAINS at a time (their shared loads issued together), each into its own
    // partial sum, the partials added in pairs at the end: PV_CHAINS independent chains of
    // multiply-adds instead of one (one chain of load, unpack and multiply-add per key took 2
    // us of MiniLM's 9 on the H200).
    for (int i = 0; i < MAX_D4 / WORD_PARTS; ++i) {
      const int w = word_part + i * WORD_PARTS;
      if (w >= d4) break;
      vec4 part[PV_CHAINS];
      [[unroll]] for (int c = 0; c < PV_CHAINS; ++c) part[c] = vec4(0.0);
      const int first = key_range * (TK / KEY_SPLIT);
      [[unroll]] for (int j = first; j < first + TK / KEY_SPLIT; j += PV_CHAINS) {
        float pj[PV_CHAINS];
        Elem vj[PV_CHAINS];
        [[unroll]] for (int c = 0; c < PV_CHAINS; ++c) {
          pj[c] = p_tile[r * (TK + 1) + j + c];
          vj[c] = v_tile[(j + c) * ROW + w];
        }
        [[unroll]] for (int c = 0; c < PV_CHAINS; ++c) part[c] += pj[c] * value_of(vj[c]);
      }
      acc[i] += (part[0] + part[1]) + (part[2] + part[3]);
    }
  }

  // The row's sum; the other key ranges' accumulators added to the first's, pairwise.
  part_sum[t] = run_sum;
  barrier();  // also: every tile read is done, k_tile is free
  float total = 0.0;
  for (int i = 0; i < PARTS; ++i) total += part_sum[r * PARTS + i];
  // Pairwise: ranges h .. 2h - 1 stash theirs, ranges 0 .. h - 1 add them, for h = KEY_SPLIT / 2
  // .. 1 (log2 KEY_SPLIT rounds of two barriers; the stash holds KEY_SPLIT / 2 x BQ x MAX_D4).
  for (int h = KEY_SPLIT / 2; h >= 1; h /= 2) {
    for (int i = 0; i < MAX_D4 / WORD_PARTS; ++i) {
      const int w = word_part + i * WORD_PARTS;
      if (key_range >= h && key_range < 2 * h && w < d4) {
        stash(((key_range - h) * BQ + r) * MAX_D4 + w, acc[i]);
      }
    }
    barrier();
    for (int i = 0; i < MAX_D4 / WORD_PARTS; ++i) {
      const int w = word_part + i * WORD_PARTS;
      if (key_range < h && w < d4) acc[i] += unstash((key_range * BQ + r) * MAX_D4 + w);
    }
    barrier();
  }
  if (key_range != 0) return;

  const float k = total > 0.0 ? p.v_scale / total : 0.0;
#if FLOAT_IO
  if (row >= p.tq) return;
  for (int i = 0; i < MAX_D4 / WORD_PARTS; ++i) {
    const int w = word_part + i * WORD_PARTS;
    if (w >= d4) break;
    out_vec4s[chunk_at(b, p.tq, row, w0 + w, p.w4)] = acc[i] * k;
  }
#else
  // Requantize and write row r's words (padding rows of the last 4-row group: zp_out).
  if (row >= 4 * div_up(p.tq, 4)) return;
  const float lo = float(-128 - p.out_zp), hi = float(127 - p.out_zp);
  for (int i = 0; i < MAX_D4 / WORD_PARTS; ++i) {
    const int w = word_part + i * WORD_PARTS;
    if (w >= d4) break;
    int word = splat_byte(p.out_zp);
    if (row < p.tq) {
      const vec4 y = acc[i] * k * p.inv_out_scale;
      ivec4 q;
      for (int c = 0; c < 4; ++c) q[c] = round_even_small(clamp(y[c], lo, hi)) + p.out_zp;
      word = pack_lanes(q);
    }
    out_words[4 * chunk_at(b, p.tq, row / 4, w0 + w, p.w4) + row % 4] = word;
  }
#endif
}
