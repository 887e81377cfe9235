// CPU reference for pixel shuffle, written for the tests (shares no code with the shaders or the
// runtime): NCHW (N, C * r^2, H, W) -> (N, C, H * r, W * r), output (n, c, oh, ow) = input
// (n, c * r^2 + (oh % r) * r + ow % r, oh / r, ow / r). The int8 form requantizes as
// runtime/ops/PixelShuffle.h defines: y = float(q - zp_in) * s_in (float32 product), then
// q8ta_quantize's rounding with the output parameters (clamp(nearbyint(y * float32(1 / s_out))
// + zp_out, -128, 127)) — or copies the byte when both parameter pairs are equal.
#pragma once

#include <cstdint>
#include <vector>

#include "test/reference/QuantReference.h"

namespace vkd::testing {

template <typename T>
std::vector<T> reference_pixel_shuffle(const std::vector<T>& x, int64_t n, int64_t c_in, int64_t h,
                                       int64_t w, int64_t r) {
  const int64_t c_out = c_in / (r * r), oh_size = h * r, ow_size = w * r;
  std::vector<T> out(static_cast<size_t>(n * c_out * oh_size * ow_size));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < c_out; ++c)
      for (int64_t oh = 0; oh < oh_size; ++oh)
        for (int64_t ow = 0; ow < ow_size; ++ow) {
          const int64_t ci = c * r * r + (oh % r) * r + ow % r;
          out[static_cast<size_t>(((b * c_out + c) * oh_size + oh) * ow_size + ow)] =
              x[static_cast<size_t>(((b * c_in + ci) * h + oh / r) * w + ow / r)];
        }
  return out;
}

inline std::vector<int8_t> reference_q8ta_pixel_shuffle(const std::vector<int8_t>& q, int64_t n,
                                                        int64_t c_in, int64_t h, int64_t w,
                                                        int64_t r, float in_scale, int in_zp,
                                                        float out_scale, int out_zp) {
  return reference_requantize(reference_pixel_shuffle(q, n, c_in, h, w, r), in_scale, in_zp,
                              out_scale, out_zp);
}

}  // namespace vkd::testing
