// What the int8 GEMM-like op cases (linear_cases.cpp, conv_cases.cpp) share: the input
// quantization, float activations to quantize (quantize_cases.cpp too), random int8 weights
// with per-channel scales and a bias, the output scale that exercises both clamp ends, and the
// first-mismatch report.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace vkd::custom_ops {

constexpr float kInputScale = 0.0087f;
// Typical |sum qx * qw| per sqrt(products) for uniform int8 inputs and weights (std ~74, ~73).
constexpr float kTypicalProduct = 74.0f * 73.0f;
constexpr float kMeanWeightScale = 0.0105f;  // of s_w ~ U(0.001, 0.02)
inline constexpr int32_t kInputZeroPoints[] = {-128, 127, 0};

// An int8 output quantization with its fused activation range.
struct OutputQuant {
  const char* name;  // the activation, as it appears in case names
  int32_t zero_point, act_min, act_max;
};

inline std::vector<int8_t> random_int8(int64_t count, int lo, int hi, std::mt19937& rng) {
  std::uniform_int_distribution<int> value(lo, hi);
  std::vector<int8_t> v(static_cast<size_t>(count));
  for (auto& x : v) x = static_cast<int8_t>(value(rng));
  return v;
}

// Random values covering 1.3x the representable real range [(qmin - zp)s, (qmax - zp)s] around
// its centre (so both ends saturate), with every fourth value an exact tie (k + 0.5) * scale to
// exercise round-half-to-even.
inline std::vector<float> random_activations(int64_t count, float scale, int32_t zero_point,
                                             int32_t quant_min, int32_t quant_max,
                                             std::mt19937& rng) {
  const float centre = (0.5f * (quant_min + quant_max) - zero_point) * scale;
  const float reach = 1.3f * 0.5f * (quant_max - quant_min) * scale;
  std::uniform_real_distribution<float> value(centre - reach, centre + reach);
  std::uniform_int_distribution<int> tie(-70, 70);
  std::vector<float> x(static_cast<size_t>(count));
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = (i % 4 == 3) ? (static_cast<float>(tie(rng)) + 0.5f) * scale : value(rng);
  }
  return x;
}

// Per-output-channel weight scales ~U(0.001, 0.02) and (optionally) a bias of the size of a
// typical output, `typical_acc * input_scale * s_w[c]`.
struct ChannelParams {
  std::vector<float> scales, bias;
};
inline ChannelParams random_channel_params(int64_t channels, bool with_bias, float input_scale,
                                           float typical_acc, std::mt19937& rng) {
  ChannelParams c;
  std::uniform_real_distribution<float> scale(0.001f, 0.02f), unit(-1.0f, 1.0f);
  c.scales.resize(static_cast<size_t>(channels));
  for (auto& s : c.scales) s = scale(rng);
  if (with_bias) {
    c.bias.resize(static_cast<size_t>(channels));
    for (size_t j = 0; j < c.bias.size(); ++j) {
      c.bias[j] = unit(rng) * typical_acc * input_scale * c.scales[j];
    }
  }
  return c;
}

// The output scale that maps the reference's y range onto [-128, 127] around `zp`, shrunk so
// the extreme ~20% saturate (both clamp ends are exercised without everything saturating).
// A zero point at a range end leaves only the other side to span.
inline float output_scale_for(const std::vector<float>& y, int32_t zp) {
  const auto [lo, hi] = std::minmax_element(y.begin(), y.end());
  float scale = 0.0f;
  if (zp < 127 && *hi > 0) scale = std::max(scale, *hi / float(127 - zp));
  if (zp > -128 && *lo < 0) scale = std::max(scale, -*lo / float(zp + 128));
  return scale > 0 ? 0.8f * scale : 1.0f;
}

// The output scale of a case: from the reference's outputs for ACCU; PERF has no reference,
// so about three typical outputs (the values do not change the timing).
inline float case_output_scale(bool accu, const std::vector<float>& y, int32_t zp,
                               float typical_acc) {
  return accu ? output_scale_for(y, zp)
              : 3.0f * typical_acc * kInputScale * kMeanWeightScale / 128.0f;
}

inline float max_abs(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// Names the first differing element on stderr (the FAIL line alone gives only counts);
// `where(i)` says where element i is ("row 3 col 5").
template <typename T, typename Where>
void report_first_mismatch(const std::vector<T>& actual, const std::vector<T>& expected,
                           double tolerance, Where where) {
  if (actual.size() != expected.size()) {
    std::fprintf(stderr, "    %zu values read back, %zu expected\n", actual.size(),
                 expected.size());
    return;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::fabs(double(actual[i]) - double(expected[i])) <= tolerance) continue;
    std::fprintf(stderr, "    first mismatch at %s: got %.9g expected %.9g\n",
                 where(static_cast<int64_t>(i)).c_str(), double(actual[i]), double(expected[i]));
    return;
  }
  std::fprintf(stderr, "    every value matches: only padding lanes differ\n");
}

}  // namespace vkd::custom_ops
