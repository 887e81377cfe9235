// CPU reference for q8ta_upsample_nearest2d / q8ta_upsample_bilinear2d, written for the tests
// from PyTorch 2.14's CPU rules for NCHW tensors (ATen/native/cpu/UpSampleKernel.cpp) and
// runtime/ops/Upsample.h's arithmetic (it shares no code with the shaders or the runtime). NCHW
// int8 in and out.
//
// Source of output index d along a dim of `in` -> `out` elements (scale <= 0: none):
//   step  = float32(1 / scale) with a scale, else float32(in) / float32(out)
//   nearest: out_h + out_w <= 128 (ATen's channels-last kernel, nearest_idx): d when out == in,
//     d >> 1 when out == 2 in; otherwise, and always past 128: min(floor(float32(d) * step),
//     in - 1)
//   bilinear: out == in: index d, weight of the second tap 0; else, in float32, real = step * d
//     (align_corners, step = float32(in - 1) / float32(out - 1), 0 for out == 1) or
//     max(step * (d + 0.5) - 0.5 rounded once (fused, as the AVX2 / AVX-512 kernels), 0);
//     i0 = min(floor(real), in - 1), i1 = min(i0 + 1, in - 1),
//     w1 = roundEven(min(real - i0, 1) * 2^20), w0 = 2^20 - w1.
// Values: nearest copies the byte (same parameters) or requantizes it through float32 as
// q8ta_quantize does; bilinear sums acc = sum_ab w_a w_b (q_ab - zp_in) exactly (int64), then
// y = float32(acc) * (s_in * 2^-40) and quantizes y with the output parameters.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "test/reference/QuantReference.h"

namespace vkd::testing {

struct RefUpsample {
  int64_t n = 1, c = 1, h = 1, w = 1;  // input
  int64_t out_h = 1, out_w = 1;
  double scale_h = 0, scale_w = 0;  // <= 0: none
  bool align_corners = false;
};

struct RefTap {
  int64_t i0, i1, w1;
};

inline float reference_upsample_step(int64_t in, int64_t out, double scale) {
  if (scale > 0) return static_cast<float>(1.0 / scale);
  return static_cast<float>(in) / static_cast<float>(out);
}

inline int64_t reference_nearest_source(int64_t d, int64_t in, int64_t out, double scale,
                                        bool channels_last_kernel) {
  if (channels_last_kernel && out == in) return d;
  if (channels_last_kernel && out == 2 * in) return d >> 1;
  const float product = static_cast<float>(d) * reference_upsample_step(in, out, scale);
  const int64_t s = static_cast<int64_t>(std::floor(product));
  return s < in - 1 ? s : in - 1;
}

inline RefTap reference_bilinear_tap(int64_t d, int64_t in, int64_t out, bool align_corners,
                                     double scale) {
  if (out == in) return {d, d, 0};
  float real = 0;
  if (align_corners) {
    const float step = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    real = step * static_cast<float>(d);
  } else {
    // step * (d + 0.5) is exact in double (24-bit by 24-bit significands), and so is
    // subtracting 0.5 from it (unless the product is below 2^-6: then real < 0, clamped): one
    // rounding to float32, a fused multiply-add's.
    const double step = reference_upsample_step(in, out, scale);
    real = static_cast<float>(step * static_cast<double>(static_cast<float>(d) + 0.5f) - 0.5);
    if (real < 0) real = 0;
  }
  int64_t i0 = static_cast<int64_t>(std::floor(real));
  if (i0 > in - 1) i0 = in - 1;
  float lambda = real - static_cast<float>(i0);
  lambda = lambda > 1 ? 1.0f : lambda;
  const int64_t w1 = static_cast<int64_t>(std::nearbyint(static_cast<double>(lambda) * 1048576.0));
  return {i0, i0 + 1 < in ? i0 + 1 : i0, w1};
}

inline std::vector<int8_t> reference_q8ta_upsample_nearest(const std::vector<int8_t>& x,
                                                           const RefUpsample& u, float s_in,
                                                           int zp_in, float s_out, int zp_out) {
  std::vector<int8_t> y(static_cast<size_t>(u.n * u.c * u.out_h * u.out_w));
  const bool same = s_in == s_out && zp_in == zp_out;
  const bool channels_last_kernel = u.out_h + u.out_w <= 128;
  size_t i = 0;
  for (int64_t nc = 0; nc < u.n * u.c; ++nc)
    for (int64_t oh = 0; oh < u.out_h; ++oh)
      for (int64_t ow = 0; ow < u.out_w; ++ow) {
        const int64_t ih =
            reference_nearest_source(oh, u.h, u.out_h, u.scale_h, channels_last_kernel);
        const int64_t iw =
            reference_nearest_source(ow, u.w, u.out_w, u.scale_w, channels_last_kernel);
        const int8_t q = x[static_cast<size_t>((nc * u.h + ih) * u.w + iw)];
        y[i++] = same ? q
                      : reference_quantize(reference_dequantize(q, s_in, zp_in), s_out, zp_out,
                                           -128, 127);
      }
  return y;
}

inline std::vector<int8_t> reference_q8ta_upsample_bilinear(const std::vector<int8_t>& x,
                                                            const RefUpsample& u, float s_in,
                                                            int zp_in, float s_out, int zp_out) {
  std::vector<int8_t> y(static_cast<size_t>(u.n * u.c * u.out_h * u.out_w));
  const float scale40 = static_cast<float>(std::ldexp(static_cast<double>(s_in), -40));
  size_t i = 0;
  for (int64_t nc = 0; nc < u.n * u.c; ++nc)
    for (int64_t oh = 0; oh < u.out_h; ++oh)
      for (int64_t ow = 0; ow < u.out_w; ++ow) {
        const RefTap th = reference_bilinear_tap(oh, u.h, u.out_h, u.align_corners, u.scale_h);
        const RefTap tw = reference_bilinear_tap(ow, u.w, u.out_w, u.align_corners, u.scale_w);
        const int64_t rows[2] = {th.i0, th.i1}, cols[2] = {tw.i0, tw.i1};
        const int64_t wr[2] = {1048576 - th.w1, th.w1}, wc[2] = {1048576 - tw.w1, tw.w1};
        int64_t acc = 0;
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 2; ++b) {
            const int64_t q = x[static_cast<size_t>((nc * u.h + rows[a]) * u.w + cols[b])];
            acc += wr[a] * wc[b] * (q - zp_in);
          }
        const float value = static_cast<float>(acc) * scale40;  // int64 -> float rounds once
        y[i++] = reference_quantize(value, s_out, zp_out, -128, 127);
      }
  return y;
}

}  // namespace vkd::testing
