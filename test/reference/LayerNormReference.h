// CPU reference for q8ta_layer_norm / q8ta_layer_norm_dq / layer_norm, written for the tests (it
// shares no code with the compiler, the shaders or the runtime): nn.LayerNorm's definition over
// W of each (n, c, h) row, in double precision,
//   y = (x - mean) / sqrt(var + eps) * weight[w] + bias[w],  var = mean((x - mean)^2),
// of the dequantized int8 values x = (q - zp) * s (whose mean and variance are taken from exact
// int64 sums of q - zp and (q - zp)^2: the statistics the kernel's integer sums make exact) or
// of float32 values. The kernel computes the rest in float32 with the device's inversesqrt, so
// tests compare within a tolerance (layer_norm_cases.cpp says which); `lin` receives
// |(x - mean) / sqrt(var + eps) * weight|, the magnitude the tolerance scales with.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "test/reference/LayoutReference.h"

namespace vkd::testing {

struct LayerNormRef {
  std::vector<double> y;    // the result
  std::vector<double> lin;  // |normalized * weight| of each element
};

// Rows of W elements of `x` (NCHW order).
inline LayerNormRef ref_layer_norm_rows(const std::vector<double>& x, int64_t W,
                                        const std::vector<float>& weight,
                                        const std::vector<float>& bias, double eps) {
  LayerNormRef r{std::vector<double>(x.size()), std::vector<double>(x.size())};
  for (size_t first = 0; first < x.size(); first += static_cast<size_t>(W)) {
    double mean = 0.0, var = 0.0;
    for (int64_t w = 0; w < W; ++w) mean += x[first + w];
    mean /= static_cast<double>(W);
    for (int64_t w = 0; w < W; ++w) var += (x[first + w] - mean) * (x[first + w] - mean);
    var /= static_cast<double>(W);
    for (int64_t w = 0; w < W; ++w) {
      const double lin = (x[first + w] - mean) / std::sqrt(var + eps) * weight[w];
      r.y[first + w] = lin + bias[w];
      r.lin[first + w] = std::fabs(lin);
    }
  }
  return r;
}

// The int8 input: x = (q - zp) * s, whose row statistics are exact here: mean = s * S1 / W and
// var = s^2 * (W * S2 - S1^2) / W^2 from the int64 sums S1 of q - zp and S2 of (q - zp)^2.
inline LayerNormRef ref_layer_norm_int8_rows(const std::vector<int8_t>& q, int64_t W, float scale,
                                             int zero_point, const std::vector<float>& weight,
                                             const std::vector<float>& bias, double eps) {
  LayerNormRef r{std::vector<double>(q.size()), std::vector<double>(q.size())};
  const double s = scale;
  for (size_t first = 0; first < q.size(); first += static_cast<size_t>(W)) {
    int64_t s1 = 0, s2 = 0;
    for (int64_t w = 0; w < W; ++w) {
      const int64_t d = q[first + w] - zero_point;
      s1 += d;
      s2 += d * d;
    }
    const double mean = s * static_cast<double>(s1) / static_cast<double>(W);
    const double var = s * s * static_cast<double>(W * s2 - s1 * s1) / static_cast<double>(W * W);
    for (int64_t w = 0; w < W; ++w) {
      const double x = (q[first + w] - zero_point) * s;
      const double lin = (x - mean) / std::sqrt(var + eps) * weight[w];
      r.y[first + w] = lin + bias[w];
      r.lin[first + w] = std::fabs(lin);
    }
  }
  return r;
}

}  // namespace vkd::testing
