// Where upsample_nearest2d and upsample_bilinear2d read their input, as PyTorch 2.14 computes it
// on the CPU for an NCHW tensor (what the graph IR holds), turned into the integers the
// q8ta_upsample kernels read: one table entry per output row and per output column, computed
// once when the compiler's reference runs or the runtime builds the node (shared by both, so they
// read the same pixels with the same weights).
//
// `scale`: the scale factor ATen was given for that dim (scales_h / scales_w, or an entry of
// scale_factors, which F.interpolate passes on unless recompute_scale_factor); <= 0 or NaN means
// none, as in ATen. PyTorch's step per dim is
//   nearest:  float32(1.0 / scale) when a scale is given, else float32(in) / float32(out)
//   bilinear: align_corners: float32(in - 1) / float32(out - 1) (0 when out == 1); else nearest's
// (`float` below: each operation rounded to float32).
//
// Nearest: ATen has two CPU kernels that disagree. Its channels-last kernel (nearest_idx in
// ATen/native/UpSample.h) copies the index when out == in and halves it when out == 2 in; its
// generic kernel always computes
//   src = min(floor(float32(dst) * step), in - 1)                                  (float32)
// PyTorch 2.14 (_use_channels_last_kernel_2d, cpu/UpSampleKernel.cpp) takes the channels-last
// one for an NCHW tensor when out_h + out_w <= 128 (a speed threshold), so the rule depends on
// both dims' output sizes: nearest_size_shortcuts. (PyTorch 1.13 took it only for tensors that
// are channels-last contiguous, such as one-channel ones.) The two differ only for a scale
// factor giving such a size without being 1 or 2 (2.05 on 9 rows: 18); a channels-last input
// with more than 3 channels, which always takes the channels-last kernel, is not modelled.
// Bilinear (compute_source_index_and_lambda, in float32; PyTorch 1.13 computed `real` in double):
//   out == in: (dst, dst, 0); else
//   real = float32(step * float32(dst))                              (align_corners)
//   real = max(fma(step, float32(dst) + 0.5, -0.5), 0)  (otherwise, rounded once: ATen's AVX2
//          and AVX-512 kernels contract it, measured; its baseline kernel for CPUs without
//          AVX2 rounds the product too, at most one float32 step of `real` apart)
//   i0 = min(floor(real), in - 1), i1 = i0 + (i0 < in - 1), lambda1 = min(real - i0, 1)
// and the kernel's fixed-point weight of i1 is w1 = roundEven(lambda1 * 2^20) (i0's: 2^20 - w1),
// within 2^-21 of PyTorch's lambda1 (and of its lambda0 = float32(1 - lambda1) within 2^-21 +
// 2^-25). 20 bits are what an exact integer interpolation of int8 data can carry into a float32
// result: sum_ab W_a W_b (q_ab - zp) fits in 48 bits (255 * 2^40), whose high 24 bits are then
// exact in float32 (shaders/q8ta_upsample.glsl).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace vkd {

// Fixed-point precision of the bilinear weights: w / 2^kBilinearWeightBits.
constexpr int kBilinearWeightBits = 20;
constexpr int32_t kBilinearWeightOne = int32_t(1) << kBilinearWeightBits;

// One output row or column of a bilinear upsample: the two input indices and the weight of
// the second one (the first one's is kBilinearWeightOne - w1).
struct LinearTap {
  int32_t i0 = 0, i1 = 0, w1 = 0;
  bool operator==(const LinearTap& o) const { return i0 == o.i0 && i1 == o.i1 && w1 == o.w1; }
};

inline bool has_upsample_scale(double scale) { return scale > 0.0; }  // false for NaN too

// The output size ATen gives an upsample with a scale factor and no output size:
// floor(double(in) * scale); +-2^62 for a product past it (a huge, infinite or NaN scale:
// converting such a double is undefined), which no tensor's size cap lets through
// (TensorLimits.h).
inline int64_t upsample_output_size(int64_t in, double scale) {
  const double out = std::floor(static_cast<double>(in) * scale);
  if (out > -0x1p62 && out < 0x1p62) return static_cast<int64_t>(out);
  return out < 0 ? -(int64_t{1} << 62) : int64_t{1} << 62;
}

// PyTorch's compute_scales_value<float>.
inline float upsample_step(int64_t in, int64_t out, double scale) {
  return has_upsample_scale(scale) ? static_cast<float>(1.0 / scale)
                                   : static_cast<float>(in) / static_cast<float>(out);
}

// Whether ATen's CPU upsample_nearest2d copies / halves the indices of a dim whose output size
// equals / doubles its input (its channels-last kernel) rather than stepping by 1 / scale: for
// an NCHW input, exactly when the output has out_h + out_w <= 128 (header comment).
inline bool nearest_size_shortcuts(int64_t out_h, int64_t out_w) { return out_h + out_w <= 128; }

// The input index each of the `out` output indices copies (upsample_nearest2d, one dim);
// `size_shortcuts`: nearest_size_shortcuts of the output.
inline std::vector<int32_t> nearest_source_indices(int64_t in, int64_t out, double scale,
                                                   bool size_shortcuts) {
  std::vector<int32_t> src(static_cast<size_t>(out));
  const float step = upsample_step(in, out, scale);
  for (int64_t d = 0; d < out; ++d) {
    int64_t s = 0;
    if (size_shortcuts && out == in) {
      s = d;
    } else if (size_shortcuts && out == 2 * in) {
      s = d / 2;
    } else {
      s = std::min(static_cast<int64_t>(std::floor(static_cast<float>(d) * step)), in - 1);
    }
    src[static_cast<size_t>(d)] = static_cast<int32_t>(s);
  }
  return src;
}

// The source rows and columns of an upsample_nearest2d of in_h x in_w to out_h x out_w.
struct NearestSources {
  std::vector<int32_t> rows, cols;
};
inline NearestSources nearest_sources(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                                      double scale_h, double scale_w) {
  const bool shortcuts = nearest_size_shortcuts(out_h, out_w);
  return {nearest_source_indices(in_h, out_h, scale_h, shortcuts),
          nearest_source_indices(in_w, out_w, scale_w, shortcuts)};
}

// PyTorch's lambda1 (float32) and i0 of output index `d` (upsample_bilinear2d, one dim).
inline float bilinear_lambda1(int64_t in, int64_t out, bool align_corners, double scale, int64_t d,
                              int64_t& i0) {
  if (out == in) {
    i0 = d;
    return 0.0f;
  }
  const float dst = static_cast<float>(d);
  float real = 0.0f;
  if (align_corners) {
    const float step = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    real = step * dst;
  } else {
    // std::fma rounds once wherever it runs (in software without a fused instruction).
    real = std::max(std::fma(upsample_step(in, out, scale), dst + 0.5f, -0.5f), 0.0f);
  }
  i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
  return std::min(real - static_cast<float>(i0), 1.0f);  // >= 0: i0 <= floor(real)
}

// The taps of every output index (upsample_bilinear2d, one dim).
inline std::vector<LinearTap> bilinear_taps(int64_t in, int64_t out, bool align_corners,
                                            double scale) {
  std::vector<LinearTap> taps(static_cast<size_t>(out));
  for (int64_t d = 0; d < out; ++d) {
    int64_t i0 = 0;
    const float lambda1 = bilinear_lambda1(in, out, align_corners, scale, d, i0);
    LinearTap& t = taps[static_cast<size_t>(d)];
    t.i0 = static_cast<int32_t>(i0);
    t.i1 = static_cast<int32_t>(i0 < in - 1 ? i0 + 1 : i0);
    // lambda1 * 2^20 is exact in float32; nearbyint rounds half to even.
    t.w1 = static_cast<int32_t>(std::nearbyint(lambda1 * static_cast<float>(kBilinearWeightOne)));
  }
  return taps;
}

}  // namespace vkd
