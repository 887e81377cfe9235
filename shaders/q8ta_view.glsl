// q8ta_view: a reshape of a packed int8x4 tensor (view_copy, and what flatten / reshape /
// squeeze / unsqueeze become, on int8 data): the output holds the input's elements in the same
// NCHW order under other sizes, in OUT_LAYOUT, read from IN_LAYOUT. Quantization is unchanged;
// the output's padding gets the zero point.
// Invocation i writes one 4 (c) x 4 (h) x 4 (w) tile of the output (walk order TILE_ORDER): each
// element of the tile inside the output takes its NCHW index, finds the input element with the
// same index, and reads that element's byte (word and lane per IN_LAYOUT); store_tile writes the
// 16 words with the padding set.
// Variants: IN_LAYOUT x OUT_LAYOUT over (4W4C, 4H4W, 4C1W).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "tile_walk.glslh"

#include "int8x4_tile_move.glslh"  // out_* (binding 0), in_* (binding 1)

layout(push_constant) uniform Params {
  ivec4 out_sizes;  // N, C, H, W of the output (the walk's tiles)
  ivec4 in_sizes;   // N, C, H, W of the input; same element count
  int tile_count;   // invocations the tile walk launches
  int zero_point;
} p;

// The input element whose NCHW index is `index`.
int input_at(int index) {
  const ivec4 s = p.in_sizes;
  const int w = index % s.w, h = (index / s.w) % s.z, nc = index / (s.w * s.z);
  return in_load_element(s, ivec4(nc / s.y, nc % s.y, h, w));
}

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.out_sizes, p.tile_count, tc)) return;
  const ivec4 s = p.out_sizes;
  ivec4 tile[4];
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      const int h = 4 * tc.z + hh, w = 4 * tc.w + ww;
      int word = 0;
      for (int cc = 0; cc < 4; ++cc) {
        const int c = 4 * tc.y + cc;
        // Elements outside the output are padding: store_tile overwrites them.
        const bool inside = c < s.y && h < s.z && w < s.w;
        const int v = inside ? input_at(((tc.x * s.y + c) * s.z + h) * s.w + w) : 0;
        word = with_lane(word, cc, v);
      }
      tile[hh][ww] = word;
    }
  }
  out_store_tile(s, tc, tile, p.zero_point);
}
