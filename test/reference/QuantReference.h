// CPU references for the quantization ops, written for the tests (they share no code with the
// shaders or the runtime). Rounding is defined exactly:
//   quantize:   q = clamp(nearbyint(x * inv_scale) + zero_point, quant_min, quant_max)
//               inv_scale = float(1.0 / double(scale)), float32 product, ties to even
//   dequantize: x = float(q - zero_point) * scale   (float32 product)
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <vector>

namespace vkd::testing {

inline float reference_inverse_scale(float scale) {
  return static_cast<float>(1.0 / static_cast<double>(scale));
}

inline int8_t reference_quantize(float x, float scale, int zero_point, int quant_min,
                                 int quant_max) {
  const float product = x * reference_inverse_scale(scale);  // one float32 rounding
  // std::nearbyint honours the current rounding mode, which is round-to-nearest-even.
  const double rounded = std::nearbyint(static_cast<double>(product));
  double q = rounded + zero_point;
  q = std::fmin(std::fmax(q, quant_min), quant_max);
  return static_cast<int8_t>(q);
}

inline float reference_dequantize(int8_t q, float scale, int zero_point) {
  return static_cast<float>(static_cast<int>(q) - zero_point) * scale;
}

inline std::vector<int8_t> reference_quantize(const std::vector<float>& x, float scale,
                                              int zero_point, int quant_min, int quant_max) {
  std::vector<int8_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = reference_quantize(x[i], scale, zero_point, quant_min, quant_max);
  }
  return out;
}

inline std::vector<float> reference_dequantize(const std::vector<int8_t>& q, float scale,
                                               int zero_point) {
  std::vector<float> out(q.size());
  for (size_t i = 0; i < q.size(); ++i) out[i] = reference_dequantize(q[i], scale, zero_point);
  return out;
}

// What the int8 data-movement ops (q8ta_pixel_shuffle, q8ta_channel_shuffle, q8ta_permute) do
// to each value they move: the byte itself when the input and output parameters are equal,
// else dequantize with the input's and quantize with the output's over the full int8 range.
inline std::vector<int8_t> reference_requantize(std::vector<int8_t> q, float in_scale, int in_zp,
                                                float out_scale, int out_zp) {
  if (in_scale == out_scale && in_zp == out_zp) return q;
  for (auto& v : q) {
    v = reference_quantize(reference_dequantize(v, in_scale, in_zp), out_scale, out_zp, -128, 127);
  }
  return q;
}

}  // namespace vkd::testing
