// Where upsample_nearest2d and upsample_bilinear2d read their input, as PyTorch 1.13 computes it
// on the CPU, turned into the integers the q8ta_upsample kernels read: one table entry per
// output row and per output column, computed once when the compiler's reference runs or the
// runtime builds the node (shared by both, so they read the same pixels with the same weights).
//
// `scale`: the scale factor ATen was given for that dim (scales_h / scales_w, or an entry of
// scale_factors); <= 0 or NaN means none, as in ATen. PyTorch's step per dim is
//   nearest:  float32(1.0 / scale) when a scale is given, else float32(in) / float32(out)
//   bilinear: align_corners: float32(in - 1) / float32(out - 1) (0 when out == 1); else nearest's
// (`float` below: each operation rounded to float32; `double`: in double).
//
// Nearest: src = min(floor(float32(dst) * step), in - 1)                          (float32)
// (the kernel of NCHW-contiguous tensors, which every quantized model's dequantized activations
// are; PyTorch's channels-last kernel, also taken by one-channel tensors, special-cases out == in
// and out == 2 in, which differs only for a scale factor that gives such a size without being
// 1 or 2: 2.05 on 10 rows)
// Bilinear (compute_source_index_and_lambda): out == in: (dst, dst, 0); else
//   real = double(step) * dst                       (align_corners)
//   real = max(double(step) * (dst + 0.5) - 0.5, 0)  (otherwise)
//   i0 = int(real), i1 = i0 + (i0 < in - 1), lambda1 = float32(real - i0) clamped to [0, 1]
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

// The input index each of the `out` output indices copies (upsample_nearest2d, one dim).
inline std::vector<int32_t> nearest_source_indices(int64_t in, int64_t out, double scale) {
  std::vector<int32_t> src(static_cast<size_t>(out));
  const float step = upsample_step(in, out, scale);
  for (int64_t d = 0; d < out; ++d) {
    const float real = static_cast<float>(d) * step;
    src[static_cast<size_t>(d)] =
        static_cast<int32_t>(std::min(static_cast<int64_t>(std::floor(real)), in - 1));
  }
  return src;
}

// PyTorch's lambda1 (float32) and i0 of output index `d` (upsample_bilinear2d, one dim).
inline float bilinear_lambda1(int64_t in, int64_t out, bool align_corners, double scale,
                              int64_t d, int64_t& i0) {
  if (out == in) {
    i0 = d;
    return 0.0f;
  }
  const float step = align_corners ? (out > 1 ? static_cast<float>(in - 1) /
                                                    static_cast<float>(out - 1)
                                               : 0.0f)
                                   : upsample_step(in, out, scale);
  double real = align_corners ? static_cast<double>(step) * static_cast<double>(d)
                              : static_cast<double>(step) * (static_cast<double>(d) + 0.5) - 0.5;
  if (real < 0) real = 0;
  i0 = static_cast<int64_t>(real);
  const float lambda = static_cast<float>(real - static_cast<double>(i0));
  return std::min(std::max(lambda, 0.0f), 1.0f);
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
