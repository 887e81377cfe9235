// CPU reference for float_masked_mean / q8ta_masked_mean [_normalize], written for the tests (it
// shares no code with the compiler, the shaders or the runtime): sentence-transformers' pooling
// computed as PyTorch's ops run one after the other in float32, each operation rounded on its own
// (products through a volatile, so no build contracts them into an FMA), every sum from +0.0 in
// order along its dim, std::sqrt correctly rounded, clamps passing NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace vkd::testing {

// x [B, T, C] (C order), mask [B, T]: y[b, c] = (sum_t x * mask) / max(sum_t mask, mask_min);
// with `eps`, each row then divided by max(sqrt(sum_c y^2), eps). [B, C] in C order.
inline std::vector<float> ref_masked_mean(const std::vector<float>& x,
                                          const std::vector<float>& mask, int64_t B, int64_t T,
                                          int64_t C, float mask_min, std::optional<float> eps) {
  auto at_least = [](float v, float lo) { return v < lo ? lo : v; };
  std::vector<float> y(static_cast<size_t>(B * C));
  for (int64_t b = 0; b < B; ++b) {
    float count = 0.0f;
    for (int64_t t = 0; t < T; ++t) count = count + mask[static_cast<size_t>(b * T + t)];
    const float denominator = at_least(count, mask_min);
    for (int64_t c = 0; c < C; ++c) {
      float acc = 0.0f;
      for (int64_t t = 0; t < T; ++t) {
        volatile float kept =
            x[static_cast<size_t>((b * T + t) * C + c)] * mask[static_cast<size_t>(b * T + t)];
        acc = acc + kept;
      }
      y[static_cast<size_t>(b * C + c)] = acc / denominator;
    }
    if (!eps) continue;
    float squares = 0.0f;
    for (int64_t c = 0; c < C; ++c) {
      volatile float sq = y[static_cast<size_t>(b * C + c)] * y[static_cast<size_t>(b * C + c)];
      squares = squares + sq;
    }
    const float norm = at_least(std::sqrt(squares), *eps);
    for (int64_t c = 0; c < C; ++c) {
      y[static_cast<size_t>(b * C + c)] = y[static_cast<size_t>(b * C + c)] / norm;
    }
  }
  return y;
}

}  // namespace vkd::testing
