// q8ta_dequantize_affine: packed int8x4 -> float32 tensor (buffer or texture, any float layout),
// one (scale, zero point) per block of the torchao block grid (affine_block.glslh):
//   x = float(q - zero_point[b]) * scale[b]
// torchao's dequantize_affine (INT domain): int32 subtraction (exact), conversion to float32
// (exact: |q - zp| < 2^24 for int8 q and int32 zero points up to 2^24 - 128 in magnitude),
// one correctly rounded multiply.
// Invocation i dequantizes the 4 (c) x 4 (h) x 4 (w) tile i and writes the float elements
// inside the tensor.
// Variants: FLOAT_STORAGE (buffer, texture3d) x INT8_LAYOUT (4W4C, 4H4W, 4C1W).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "tile_walk.glslh"
#define AFFINE_SCALES scales
#include "affine_block.glslh"

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
  AFFINE_TILE_PARAMS
} p;

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.sizes, p.tile_count, tc)) return;

  ivec4 q[4];
  in_load_tile(p.sizes, tc, q);
  const AffineTileParts parts = affine_tile_parts(p.sizes, tc, p.extent, p.gstride);
  vec4 x[4][4];
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      // Branch-free: an element outside the tensor reads block 0's parameters, is never stored.
      const ivec4 blocks = affine_blocks_at(parts, hh, ww);
      for (int lane = 0; lane < 4; ++lane) {
        const int b = blocks[lane];
        // Channels past C are never stored: skip their parameter loads (uniform branch).
        x[hh][ww][lane] = parts.c_in[lane]
                              ? float(lane_of(q[hh][ww], lane) - zero_points[b]) * scales[b]
                              : 0.0;
      }
    }
  }
  out_store_tile(p.sizes, p.float_meta, tc, x);
}
