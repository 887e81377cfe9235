// pixel_shuffle: float tensor (N, C_out * R^2, H, W) -> (N, C_out, H * R, W * R), any storage
// (buffer, 3-D texture) and any width/height/channels-packed layout on either side. Output
// element (n, c, oh, ow) is input element (n, c * R^2 + (oh % R) * R + ow % R, oh / R, ow / R).
//
// Invocation i writes one group of 4 output elements consecutive along the output's packed dim
// (a texel for textures): the packed dim's group index varies fastest, then W, H, C, N (the
// packed one skipped), which is memory order for every buffer layout. Each element is read on
// its own (4 loads, any input layout). Pure copy: float16 values pass through float32 exactly.
//
// A tensor is described by `meta` (as in float_tile.glslh): buffer = element strides (n, c, h,
// w); texture = packed dim in .x, texel (x, y, z) holding 4 consecutive elements of it:
// C -> (w, h, n * C4 + c / 4), W -> (w / 4, h, n * C + c), H -> (w, h / 4, n * C + c).
// Texel components past the tensor's end are written as 0.
// Variants: IN_STORAGE x OUT_STORAGE (buffer, texture3d) x DTYPE (float32, float16).
#version 450
#extension GL_GOOGLE_include_directive : require
#if FLOAT16
#extension GL_EXT_shader_16bit_storage : require
#define ELEM float16_t
#define IMAGE_FORMAT rgba16f
#else
#define ELEM float
#define IMAGE_FORMAT rgba32f
#endif
#include "common.glslh"

layout(constant_id = 3) const int R = 2;  // upscale factor

#if OUT_STORAGE == STORAGE_BUFFER
layout(std430, set = 0, binding = 0) writeonly buffer Out { ELEM out_data[]; };
#else
layout(set = 0, binding = 0, IMAGE_FORMAT) uniform writeonly image3D out_image;
#endif
#if IN_STORAGE == STORAGE_BUFFER
layout(std430, set = 0, binding = 1) readonly buffer In { ELEM in_data[]; };
#else
layout(set = 0, binding = 1, IMAGE_FORMAT) uniform readonly image3D in_image;
#endif

layout(push_constant) uniform Params {
  ivec4 out_sizes;  // N, C_out, H * R, W * R
  ivec4 out_meta;
  ivec4 in_meta;
  int group_count;  // invocations: output groups of 4 along the packed dim
  int in_c;         // C_out * R^2
  int out_pd;       // the output's packed dim (DIM_C, DIM_H, DIM_W)
} p;

int offset_of(ivec4 e, ivec4 strides) {
  return e.x * strides.x + e.y * strides.y + e.z * strides.z + e.w * strides.w;
}

// The texel and component of element (n, c, h, w) of a texture with packed dim `dim`.
ivec3 texel_of(ivec4 e, int dim, int C, out int comp) {
  if (dim == DIM_C) {
    comp = e.y % 4;
    return ivec3(e.w, e.z, e.x * div_up(C, 4) + e.y / 4);
  }
  if (dim == DIM_W) {
    comp = e.w % 4;
    return ivec3(e.w / 4, e.z, e.x * C + e.y);
  }
  comp = e.z % 4;
  return ivec3(e.w, e.z / 4, e.x * C + e.y);
}

float load_input(ivec4 e) {
#if IN_STORAGE == STORAGE_BUFFER
  return float(in_data[offset_of(e, p.in_meta)]);
#else
  int comp;
  const ivec3 pos = texel_of(e, p.in_meta.x, p.in_c, comp);
  return imageLoad(in_image, pos)[comp];
#endif
}

void main() {
  const int i = int(linear_invocation_id());
  if (i >= p.group_count) return;
  const int pd = p.out_pd;
  // Decompose i: packed dim's group fastest, then W, H, C, N.
  ivec4 ext = p.out_sizes;
  ext[pd] = div_up(ext[pd], 4);
  ivec4 e;  // (n, c, h, w) of the group's first element
  int rest = i;
  e[pd] = (rest % ext[pd]) * 4;
  rest /= ext[pd];
  for (int d = 3; d >= 0; --d) {
    if (d == pd) continue;
    e[d] = rest % ext[d];
    rest /= ext[d];
  }

  vec4 v = vec4(0.0);
  for (int k = 0; k < 4; ++k) {
    ivec4 o = e;
    o[pd] += k;
    if (o[pd] >= p.out_sizes[pd]) break;
    const ivec4 src = ivec4(o.x, o.y * R * R + (o.z % R) * R + o.w % R, o.z / R, o.w / R);
    v[k] = load_input(src);
  }

#if OUT_STORAGE == STORAGE_BUFFER
  for (int k = 0; k < 4; ++k) {
    ivec4 o = e;
    o[pd] += k;
    if (o[pd] >= p.out_sizes[pd]) break;
    out_data[offset_of(o, p.out_meta)] = ELEM(v[k]);
  }
#else
  int comp;
  imageStore(out_image, texel_of(e, pd, p.out_sizes.y, comp), v);
#endif
}
