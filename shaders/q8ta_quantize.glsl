// q8ta_quantize: float32 tensor (buffer or texture, any float layout) -> packed int8x4.
//   q = clamp(roundEven(x * inv_scale) + zero_point, quant_min, quant_max)
// inv_scale = 1/scale rounded to float32 on the host, as PyTorch's
// quantized_decomposed.quantize_per_tensor computes it; Vulkan float multiplication is
// correctly rounded (division is not), so every device gives the same bytes as the CPU.
// Each invocation quantizes one 4 (c) x 4 (h) x 4 (w) tile (walk order: TILE_ORDER) and
// writes its 16 words, padding included.
// Variants: FLOAT_STORAGE (buffer, texture3d) x INT8_LAYOUT (4W4C, 4H4W, 4C1W).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "requant.glslh"  // quantize_float
#include "tile_walk.glslh"

#define TILE_LAYOUT INT8_LAYOUT
#define TILE_BINDING 0
#define TILE_QUALIFIER writeonly
#define TILE_FN(x) out_##x
#define TILE_STORE
#include "int8x4_tile.glslh"

#if FLOAT_STORAGE == STORAGE_BUFFER
// The float input's access path for every tile, fixed by the op (float_tile.glslh).
layout(constant_id = 4) const int FLOAT_VECTOR_DIM = -1;
#define FTILE_VECTOR_DIM FLOAT_VECTOR_DIM
#endif
#define FTILE_STORAGE FLOAT_STORAGE
#define FTILE_BINDING 1
#define FTILE_QUALIFIER readonly
#define FTILE_FN(x) in_##x
#define FTILE_LOAD
#include "float_tile.glslh"

layout(push_constant) uniform Params {
  ivec4 sizes;       // N, C, H, W
  ivec4 float_meta;  // float tensor strides or packed dim (float_tile.glslh)
  int tile_count;    // invocations the tile walk launches
  float inv_scale;
  int zero_point;
  int quant_min;
  int quant_max;
} p;

int quantize(float x) {
  return quantize_float(x, p.inv_scale, p.zero_point, p.quant_min, p.quant_max);
}

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.sizes, p.tile_count, tc)) return;

  vec4 x[4][4];
  in_load_tile(p.sizes, p.float_meta, tc, x);
  ivec4 q[4];
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      const vec4 v = x[hh][ww];
      q[hh][ww] = pack_lanes(ivec4(quantize(v.x), quantize(v.y), quantize(v.z), quantize(v.w)));
    }
  }
  out_store_tile(p.sizes, tc, q, p.zero_point);
}
