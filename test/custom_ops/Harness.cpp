#include "test/custom_ops/Harness.h"

#include <cmath>
#include <cstdlib>

namespace vkd::custom_ops {

const std::vector<std::vector<int64_t>>& awkward_shapes() {
  static const std::vector<std::vector<int64_t>> shapes = {
      {1, 1, 1, 1}, {1, 3, 5, 7}, {2, 17, 9, 6}, {1, 4, 1, 33}, {3, 1, 7, 1},
      {1, 8, 8, 8}, {2, 5, 4, 4}, {7},           {5, 9},        {3, 6, 10}};
  return shapes;
}

std::string shape_string(const std::vector<int64_t>& sizes) {
  std::string s;
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "x" : "") + std::to_string(sizes[i]);
  return s;
}

std::string placement_name(const FloatPlacement& p) {
  return std::string(to_string(p.storage)) + "/" + std::string(to_string(p.layout));
}

void compare_words(const std::vector<int32_t>& actual, const std::vector<int32_t>& expected,
                   AccuResult& result) {
  if (actual.size() != expected.size()) {
    result.mismatches += static_cast<int64_t>(std::max(actual.size(), expected.size()));
    return;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    for (int lane = 0; lane < 4; ++lane) {
      const int a = static_cast<int8_t>(static_cast<uint32_t>(actual[i]) >> (8 * lane));
      const int e = static_cast<int8_t>(static_cast<uint32_t>(expected[i]) >> (8 * lane));
      result.max_abs_error = std::max<double>(result.max_abs_error, std::abs(a - e));
      result.mismatches += a != e;
      ++result.checked;
    }
  }
}

void compare_floats(const std::vector<float>& actual, const std::vector<float>& expected,
                    double tolerance, AccuResult& result) {
  if (actual.size() != expected.size()) {
    result.mismatches += static_cast<int64_t>(std::max(actual.size(), expected.size()));
    return;
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const double err = std::fabs(double(actual[i]) - double(expected[i]));
    const bool bad = !(err <= tolerance);  // NaN counts as a mismatch
    result.max_abs_error = std::max(result.max_abs_error, std::isnan(err) ? INFINITY : err);
    result.mismatches += bad;
    ++result.checked;
  }
}

}  // namespace vkd::custom_ops
