// q8ta_convert: packed int8x4 layout IN_LAYOUT -> OUT_LAYOUT (the identity pair included).
// Quantization parameters are unchanged; padding of the output gets the zero point.
// Invocation i moves one 4 (c) x 4 (h) x 4 (w) tile (the walk order is TILE_ORDER):
// 16 words in, byte-transposed where 4H4W meets a channel-lane layout, 16 words out.
// Variants: IN_LAYOUT x OUT_LAYOUT over (4W4C, 4H4W, 4C1W).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "tile_walk.glslh"

#define TILE_LAYOUT OUT_LAYOUT
#define TILE_BINDING 0
#define TILE_QUALIFIER writeonly
#define TILE_FN(x) out_##x
#define TILE_STORE
#include "int8x4_tile.glslh"
#undef TILE_LAYOUT
#undef TILE_BINDING
#undef TILE_QUALIFIER
#undef TILE_FN
#undef TILE_STORE

#define TILE_LAYOUT IN_LAYOUT
#define TILE_BINDING 1
#define TILE_QUALIFIER readonly
#define TILE_FN(x) in_##x
#define TILE_LOAD
#include "int8x4_tile.glslh"

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
