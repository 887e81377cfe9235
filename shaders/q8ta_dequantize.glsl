// q8ta_dequantize: packed int8x4 -> float32 tensor (buffer or texture, any float layout).
//   x = float(q - zero_point) * scale     (exact int subtraction, one correctly rounded multiply)
// Invocation i dequantizes the 4 (c) x 4 (h) x 4 (w) tile i and writes the float elements
// inside the tensor (texture texels get 0 in components past the tensor's end).
// Variants: FLOAT_STORAGE (buffer, texture3d) x INT8_LAYOUT (4W4C, 4H4W, 4C1W).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "requant.glslh"  // dequantized_lane
#include "tile_walk.glslh"

#if FLOAT_STORAGE == STORAGE_BUFFER
// The float output's access path for every tile, fixed by the op (float_tile.glslh).
layout(constant_id = 4) const int FLOAT_VECTOR_DIM = -1;
#define FTILE_VECTOR_DIM FLOAT_VECTOR_DIM
#endif
#define FTILE_STORAGE FLOAT_STORAGE
#define FTILE_BINDING 0
#define FTILE_QUALIFIER writeonly
#define FTILE_FN(x) out_##x
#define FTILE_STORE
#include "float_tile.glslh"

#define TILE_LAYOUT INT8_LAYOUT
#define TILE_BINDING 1
#define TILE_QUALIFIER readonly
#define TILE_FN(x) in_##x
#define TILE_LOAD
#include "int8x4_tile.glslh"

layout(push_constant) uniform Params {
  ivec4 sizes;       // N, C, H, W
  ivec4 float_meta;  // float tensor strides or packed dim (float_tile.glslh)
  int tile_count;  // invocations the tile walk launches
  float scale;
  int zero_point;
} p;

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.sizes, p.tile_count, tc)) return;

  ivec4 q[4];
  in_load_tile(p.sizes, tc, q);
  vec4 x[4][4];
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      const int word = q[hh][ww];
      for (int lane = 0; lane < 4; ++lane) {
        x[hh][ww][lane] = dequantized_lane(word, lane, p.zero_point, p.scale);
      }
    }
  }
  out_store_tile(p.sizes, p.float_meta, tc, x);
}
