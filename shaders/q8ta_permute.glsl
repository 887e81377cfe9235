// q8ta_permute: int8x4 input (IN_LAYOUT) -> int8x4 output (OUT_LAYOUT) whose dim k is input dim
// DIMk, over the sizes padded to 4-D (N, C, H, W): out[i0, i1, i2, i3] = in[j] with
// j[DIMk] = ik. The dims are specialization constants 4..7, so every index below is static.
// Invocation i writes one 4 (c) x 4 (h) x 4 (w) tile of the output (walk order TILE_ORDER):
//   DIM0 == 0 (n stays in place): the tile's elements are exactly one input tile (at the tile
//     coordinates permuted the same way), loaded whole (16 words, int8x4_tile.glslh) and
//     transposed in registers: output element (cc, hh, ww) of the tile is input tile element o
//     with o[DIM1] = cc, o[DIM2] = hh, o[DIM3] = ww.
//   otherwise (a batch dim moves): each element is gathered on its own.
// store_tile writes the 16 words with the output zero point in the padding.
// REQUANT 0: bytes are moved as they are. REQUANT 1: each element is requantized as
// runtime/ops/Permute.h defines (float32, each operation rounded on its own):
//   y = float(q - zp_in) * s_in;  q_out = clamp(roundEven(y * inv_s_out) + zp_out, -128, 127).
// Variants: IN_LAYOUT x OUT_LAYOUT over (4W4C, 4H4W, 4C1W) x REQUANT (permute, requant).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "tile_walk.glslh"
#include "int8x4_chunk.glslh"  // requantize_moved

#include "int8x4_tile_move.glslh"  // out_* (binding 0), in_* (binding 1)

layout(constant_id = 4) const int DIM0 = 0;
layout(constant_id = 5) const int DIM1 = 1;
layout(constant_id = 6) const int DIM2 = 2;
layout(constant_id = 7) const int DIM3 = 3;

layout(push_constant) uniform Params {
  ivec4 out_sizes;  // N, C, H, W of the output (the walk's tiles)
  ivec4 in_sizes;   // N, C, H, W of the input
  int tile_count;   // invocations the tile walk launches
  MovedRequant requant;  // int8x4_chunk.glslh
} p;

// One element through the output's parameters (REQUANT) or as it is.
int convert(int q) {
#if REQUANT
  return requantize_moved(q, p.requant);
#else
  return q;
#endif
}

// The output tile at tile coordinate tc from the one input tile holding its elements.
void permute_tile(ivec4 tc, out ivec4 tile[4]) {
  ivec4 itc;
  itc.x = tc.x;
  itc[DIM1] = tc.y;
  itc[DIM2] = tc.z;
  itc[DIM3] = tc.w;
  ivec4 src[4];
  in_load_tile(p.in_sizes, itc, src);
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      int word = 0;
      for (int cc = 0; cc < 4; ++cc) {
        ivec4 o = ivec4(0);  // o.y, o.z, o.w: the element's channel, row, column in the input tile
        o[DIM1] = cc;
        o[DIM2] = hh;
        o[DIM3] = ww;
        word = with_lane(word, cc, convert(lane_of(src[o.z][o.w], o.y)));
      }
      tile[hh][ww] = word;
    }
  }
}

// The output tile at tile coordinate tc, one element at a time.
void gather_tile(ivec4 tc, out ivec4 tile[4]) {
  const ivec4 s = p.out_sizes;
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      int word = 0;
      for (int cc = 0; cc < 4; ++cc) {
        const ivec4 oc = ivec4(tc.x, 4 * tc.y + cc, 4 * tc.z + hh, 4 * tc.w + ww);
        ivec4 ic;
        ic[DIM0] = oc.x;
        ic[DIM1] = oc.y;
        ic[DIM2] = oc.z;
        ic[DIM3] = oc.w;
        // Elements outside the output are padding: store_tile overwrites them.
        const bool inside = oc.y < s.y && oc.z < s.z && oc.w < s.w;
        word = with_lane(word, cc, inside ? convert(in_load_element(p.in_sizes, ic)) : 0);
      }
      tile[hh][ww] = word;
    }
  }
}

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.out_sizes, p.tile_count, tc)) return;
  ivec4 tile[4];
  if (DIM0 == 0) {
    permute_tile(tc, tile);
  } else {
    gather_tile(tc, tile);
  }
  out_store_tile(p.out_sizes, tc, tile, p.requant.out_zp);
}
