// choose_qparams_affine: per block of the torchao block grid, the scale (float32) and zero point
// (int32) torchao's choose_qparams_affine computes (preserve_zero, INT zero-point domain):
//   min_neg = min(amin(block), 0), max_pos = max(amax(block), 0)    (a NaN anywhere -> NaN)
//   SYMMETRIC:                 scale = max(-min_neg, max_pos) / (float(qmax - qmin) / 2)
//   SYMMETRIC_NO_CLIPPING_ERR: scale = smin > smax ? smin : smax,
//                              smin = min_neg / float(qmin), smax = max_pos / float(qmax)
//   both symmetric:            zero_point = trunc((qmax + qmin + 1) / 2)
//   then (all):                scale = max(scale, eps) unless NaN
//   ASYMMETRIC:                scale = max((max_pos - min_neg) / float(qmax - qmin), eps),
//                              zero_point = clamp(qmin - roundEven(min_neg / scale), qmin, qmax)
//                              (NaN -> 0)
// Every division is correctly rounded (exact_div.glslh), every other step is one correctly
// rounded float32 operation, so the results equal torch's CPU bits.
// Two modes (push constant `serial`, chosen by the op from the block's element count):
//   cooperative (large blocks): one workgroup (WG invocations) per block; each invocation folds
//     the block elements i = local id, local id + WG, ... (w fastest) into a min / max / NaN
//     flag, a shared-memory tree combines them, and invocation 0 writes the block's two values;
//   serial (blocks of at most a few hundred elements, e.g. groups of 32): invocation g of the
//     dispatch handles block g alone, so no invocation idles and no barrier is needed.
// Workgroups beyond maxComputeWorkGroupCount[0] continue along the y dimension of the grid.
// Variants: FLOAT_STORAGE (buffer, texture3d).
#version 450
#extension GL_GOOGLE_include_directive : require
#define VKD_FIXED_LOCAL_SIZE
#define WG 128
layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;
#include "common.glslh"
#include "exact_div.glslh"

layout(set = 0, binding = 0) writeonly buffer Scales { float scales[]; };
layout(set = 0, binding = 1) writeonly buffer ZeroPoints { int zero_points[]; };

#define FTILE_STORAGE FLOAT_STORAGE
#define FTILE_BINDING 2
#define FTILE_QUALIFIER readonly
#define FTILE_FN(x) in_##x
#include "float_tile.glslh"  // declarations only (no FTILE_LOAD): elements are read one by one

layout(push_constant) uniform Params {
  ivec4 sizes;       // N, C, H, W
  ivec4 float_meta;  // float tensor strides or packed dim (float_tile.glslh)
  ivec4 extent;      // block extent along (n, c, h, w)
  ivec4 count;       // blocks along (n, c, h, w)
  int block_count;
  int quant_min;
  int quant_max;
  int mapping;       // 0 SYMMETRIC, 1 SYMMETRIC_NO_CLIPPING_ERR, 2 ASYMMETRIC
  float eps;
  int serial;        // 1: one invocation per block, 0: one workgroup per block
} p;

shared float s_min[WG];
shared float s_max[WG];
shared uint s_nan[WG];

float load_element(ivec4 e) {
#if FLOAT_STORAGE == STORAGE_BUFFER
  return in_data[e.x * p.float_meta.x + e.y * p.float_meta.y + e.z * p.float_meta.z +
                 e.w * p.float_meta.w];
#else
  const int C = p.sizes.y;
  if (p.float_meta.x == DIM_C) {
    return imageLoad(in_image, ivec3(e.w, e.z, e.x * div_up(C, 4) + e.y / 4))[e.y % 4];
  } else if (p.float_meta.x == DIM_W) {
    return imageLoad(in_image, ivec3(e.w / 4, e.z, e.x * C + e.y))[e.w % 4];
  }
  return imageLoad(in_image, ivec3(e.w, e.z / 4, e.x * C + e.y))[e.z % 4];
#endif
}

#define kNaN uintBitsToFloat(0x7FC00000u)  // the quiet NaN torch's CPU ops produce

// First element (n, c, h, w) of block `block` (row-major over the grid).
ivec4 block_origin(int block) {
  ivec4 g;
  int rest = block;
  g.w = rest % p.count.w; rest /= p.count.w;
  g.z = rest % p.count.z; rest /= p.count.z;
  g.y = rest % p.count.y; g.x = rest / p.count.y;
  return g * p.extent;
}

// Element i of a block (w fastest), relative to its origin.
ivec4 block_element(int i) {
  ivec4 e;
  e.w = i % p.extent.w; i /= p.extent.w;
  e.z = i % p.extent.z; i /= p.extent.z;
  e.y = i % p.extent.y; e.x = i / p.extent.y;
  return e;
}

void fold(float v, inout float mn, inout float mx, inout bool nan) {
  if (isnan(v)) {
    nan = true;
  } else {
    mn = min(mn, v);
    mx = max(mx, v);
  }
}

// The block's scale and zero point from its min / max (see the top of the file).
void write_qparams(int block, float block_min, float block_max, bool any_nan) {
  const float min_neg = any_nan ? kNaN : min(block_min, 0.0);
  const float max_pos = any_nan ? kNaN : max(block_max, 0.0);
  const int qmin = p.quant_min, qmax = p.quant_max;
  precise float scale;
  int zero_point;
  if (p.mapping == 2) {
    scale = div_rn(max_pos - min_neg, float(qmax - qmin));
    if (!isnan(scale)) scale = max(scale, p.eps);
    const precise float zp = float(qmin) - roundEven(div_rn(min_neg, scale));
    zero_point = isnan(zp) ? 0 : int(clamp(zp, float(qmin), float(qmax)));
  } else {
    if (p.mapping == 0) {
      // float(qmax - qmin) / 2 is exact (an integer below 2^9, halved).
      scale = div_rn(max(-min_neg, max_pos), float(qmax - qmin) * 0.5);
    } else {
      const float smin = div_rn(min_neg, float(qmin));
      const float smax = div_rn(max_pos, float(qmax));
      scale = smin > smax ? smin : smax;
    }
    if (any_nan) scale = kNaN;
    if (!isnan(scale)) scale = max(scale, p.eps);
    zero_point = (qmax + qmin + 1) / 2;  // GLSL int division truncates toward zero, like int()
  }
  scales[block] = scale;
  zero_points[block] = zero_point;
}

void main() {
  const int group = int(gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y);
  const int tid = int(gl_LocalInvocationID.x);
  const int elements = p.extent.x * p.extent.y * p.extent.z * p.extent.w;
  float mn = uintBitsToFloat(0x7F800000u), mx = -mn;
  bool nan = false;

  if (p.serial != 0) {
    const int block = group * WG + tid;
    if (block >= p.block_count) return;
    const ivec4 origin = block_origin(block);
    for (int i = 0; i < elements; ++i) fold(load_element(origin + block_element(i)), mn, mx, nan);
    write_qparams(block, mn, mx, nan);
    return;
  }

  const int block = group;
  if (block >= p.block_count) return;  // uniform per workgroup: no barrier is skipped unevenly
  const ivec4 origin = block_origin(block);
  for (int i = tid; i < elements; i += WG) {
    fold(load_element(origin + block_element(i)), mn, mx, nan);
  }
  s_min[tid] = mn;
  s_max[tid] = mx;
  s_nan[tid] = nan ? 1u : 0u;
  barrier();
  for (int stride = WG / 2; stride > 0; stride /= 2) {
    if (tid < stride) {
      s_min[tid] = min(s_min[tid], s_min[tid + stride]);
      s_max[tid] = max(s_max[tid], s_max[tid + stride]);
      s_nan[tid] |= s_nan[tid + stride];
    }
    barrier();
  }
  if (tid == 0) write_qparams(block, s_min[0], s_max[0], s_nan[0] != 0u);
}
