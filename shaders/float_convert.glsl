// float_convert: float32 tensor -> float32 tensor with another storage and/or layout
// (buffer strides or texture packed dim come in push constants, so 4 variants cover every
// pair). Invocation i copies the 4 (c) x 4 (h) x 4 (w) tile i.
// Variants: SRC_STORAGE x DST_STORAGE over (buffer, texture3d).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "tile_walk.glslh"

#define FTILE_STORAGE DST_STORAGE
#define FTILE_BINDING 0
#define FTILE_QUALIFIER writeonly
#define FTILE_FN(x) out_##x
#define FTILE_STORE
#include "float_tile.glslh"
#undef FTILE_STORAGE
#undef FTILE_BINDING
#undef FTILE_QUALIFIER
#undef FTILE_FN
#undef FTILE_STORE

#define FTILE_STORAGE SRC_STORAGE
#define FTILE_BINDING 1
#define FTILE_QUALIFIER readonly
#define FTILE_FN(x) in_##x
#define FTILE_LOAD
#include "float_tile.glslh"

layout(push_constant) uniform Params {
  ivec4 sizes;     // N, C, H, W
  ivec4 dst_meta;  // strides or packed dim of the output
  ivec4 src_meta;  // strides or packed dim of the input
  int tile_count;  // invocations the tile walk launches
} p;

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.sizes, p.tile_count, tc)) return;
  vec4 tile[4][4];
  in_load_tile(p.sizes, p.src_meta, tc, tile);
  out_store_tile(p.sizes, p.dst_meta, tc, tile);
}
