// q8ta_convert: packed int8x4 layout IN_LAYOUT -> OUT_LAYOUT (the identity pair included).
// Quantization parameters are unchanged; padding of the output gets the zero point.
// Invocation i moves one 4 (c) x 4 (h) x 4 (w) tile (the walk order is TILE_ORDER):
// 16 words in, byte-transposed where 4H4W meets a channel-lane layout, 16 words out.
// Variants: IN_LAYOUT x OUT_LAYOUT over (4W4C, 4H4W, 4C1W).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "tile_walk.glslh"

#include "int8x4_tile_move.glslh"  // out_* (binding 0), in_* (binding 1)

layout(push_constant) uniform Params {
  ivec4 sizes;  // N, C, H, W
  int tile_count;  // invocations the tile walk launches
  int zero_point;
} p;

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.sizes, p.tile_count, tc)) return;
  ivec4 tile[4];
  in_load_tile(p.sizes, tc, tile);
  out_store_tile(p.sizes, tc, tile, p.zero_point);
}
