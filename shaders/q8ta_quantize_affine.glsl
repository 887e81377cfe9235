// q8ta_quantize_affine: float32 tensor (buffer or texture, any float layout) -> packed int8x4,
// one (scale, zero point) per block of the torchao block grid (affine_block.glslh):
//   q = clamp(roundEven(x * inv_scale[b]) + float(zero_point[b]), quant_min, quant_max)
// which is torchao's quantize_affine in the INT zero-point domain,
// `clamp(round(input * (1.0 / scale)) + zero_point, quant_min, quant_max)`, bit for bit:
// inv_scale[b] is 1/scale[b] correctly rounded (affine_reciprocal.glsl, run before this
// kernel), the product is one correctly rounded float32 multiply, roundEven is exact, and adding
// the zero point / clamping in float32 cannot change a value that lands inside int8. A NaN input
// gives quant_min (as the CPU interpreter does).
// Each invocation quantizes one 4 (c) x 4 (h) x 4 (w) tile (walk order: TILE_ORDER) and writes
// its 16 words; padding lanes get p.pad_value (per-block zero points have no single tensor zero
// point: see runtime/ops/AffineQuant.h).
// Variants: FLOAT_STORAGE (buffer, texture3d) x INT8_LAYOUT (4W4C, 4H4W, 4C1W).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glslh"
#include "tile_walk.glslh"
#define AFFINE_SCALES inv_scales  // binding 2: 1/scale per block (affine_reciprocal.glsl)
#include "affine_block.glslh"

#define TILE_LAYOUT INT8_LAYOUT
#define TILE_BINDING 0
#define TILE_QUALIFIER writeonly
#define TILE_FN(x) out_##x
#define TILE_STORE
#include "int8x4_tile.glslh"

#define FTILE_STORAGE FLOAT_STORAGE
#define FTILE_BINDING 1
#define FTILE_QUALIFIER readonly
#define FTILE_FN(x) in_##x
#define FTILE_LOAD
#include "float_tile.glslh"

layout(push_constant) uniform Params {
  AFFINE_TILE_PARAMS
  int quant_min;
  int quant_max;
  int pad_value;
} p;

// Branch-free; an element outside the tensor reads block 0's parameters (affine_blocks_at) and
// the store replaces its code with the padding value.
int quantize(float x, int b) {
  const float q = roundEven(x * inv_scales[b]) + float(zero_points[b]);
  if (isnan(q)) return p.quant_min;
  return int(clamp(q, float(p.quant_min), float(p.quant_max)));
}

void main() {
  ivec4 tc;
  if (!tile_of_invocation(p.sizes, p.tile_count, tc)) return;

  vec4 x[4][4];
  in_load_tile(p.sizes, p.float_meta, tc, x);
  const AffineTileParts parts = affine_tile_parts(p.sizes, tc, p.extent, p.gstride);
  ivec4 q[4];
  for (int hh = 0; hh < 4; ++hh) {
    for (int ww = 0; ww < 4; ++ww) {
      const vec4 v = x[hh][ww];
      const ivec4 b = affine_blocks_at(parts, hh, ww);
      // Channels past C are padding: skipping them (a branch uniform across the tile walk's
      // neighbours) saves their parameter loads and registers, which matters for the common
      // C = 1 case ([M, K] activations seen as [1, 1, M, K]).
      ivec4 codes = ivec4(0);
      for (int lane = 0; lane < 4; ++lane) {
        if (parts.c_in[lane]) codes[lane] = quantize(v[lane], b[lane]);
      }
      q[hh][ww] = pack_lanes(codes);
    }
  }
  out_store_tile(p.sizes, tc, q, p.pad_value);
}
