// CPU reference for q8ta_softmax / q8ta_softmax_dq, written for the tests (it shares no code with
// the compiler, the shaders or the runtime): softmax or log_softmax over W of the dequantized
// int8 values x = (q - zp) * s of each (n, c, h) row, in double precision (x - max x =
// (q - max q) * s: the zero point drops out):
//   softmax:     y = exp(x - max x) / sum over the row of exp(x - max x)
//   log_softmax: y = (x - max x) - log(sum over the row of exp(x - max x))
// The kernel computes in float32 with the device's exp and log, so tests compare within a
// tolerance (softmax_cases.cpp says which).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "test/reference/LayoutReference.h"

namespace vkd::testing {

inline std::vector<double> ref_softmax_rows(const std::vector<int8_t>& q, const RefShape& s,
                                            float scale, bool log) {
  std::vector<double> y(q.size());
  const int64_t W = s.w;
  for (size_t row = 0; row * W < q.size(); ++row) {
    const int8_t* in = q.data() + row * W;
    const int qmax = *std::max_element(in, in + W);
    double sum = 0.0;
    for (int64_t w = 0; w < W; ++w) sum += std::exp((in[w] - qmax) * static_cast<double>(scale));
    for (int64_t w = 0; w < W; ++w) {
      const double d = (in[w] - qmax) * static_cast<double>(scale);
      y[row * W + w] = log ? d - std::log(sum) : std::exp(d) / sum;
    }
  }
  return y;
}

}  // namespace vkd::testing
