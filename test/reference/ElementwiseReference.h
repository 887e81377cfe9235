// CPU references for q8ta_add and q8ta_clamp, written for the tests (they share no code with the
// shaders or the runtime). Per element, each float32 operation rounded on its own:
//   add:    y = float(qa - zp_a) * s_a + float(qb - zp_b) * s_b
//   clamp:  y = float(q - zp_in) * s_in
//   q = clamp(nearbyint(y * inv_s_out) + zp_out, act_min, act_max), inv_s_out = float(1/s_out)
// add's b broadcasts when it is [1, C, 1, 1] or [1, 1, 1, 1] (NCHW element vectors).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "test/reference/LayoutReference.h"

namespace vkd::testing {

struct RefQuant {
  float scale;
  int zero_point;
};

inline int8_t reference_add(int8_t qa, int8_t qb, RefQuant a, RefQuant b, RefQuant out,
                            int act_min, int act_max) {
  const float fa = static_cast<float>(qa - a.zero_point) * a.scale;
  const float fb = static_cast<float>(qb - b.zero_point) * b.scale;
  const float y = fa + fb;
  const float inv = static_cast<float>(1.0 / static_cast<double>(out.scale));
  const float t = y * inv;
  double q = std::nearbyint(static_cast<double>(t)) + out.zero_point;  // ties to even
  q = std::fmin(std::fmax(q, act_min), act_max);
  return static_cast<int8_t>(q);
}

// out[n, c, h, w] = add(a[n, c, h, w], b[...]) with b of shape `sb` equal to `s`, [1, C, 1, 1]
// or [1, 1, 1, 1].
inline std::vector<int8_t> reference_add(const std::vector<int8_t>& a, const RefShape& s,
                                         const std::vector<int8_t>& b, const RefShape& sb,
                                         RefQuant qa, RefQuant qb, RefQuant qo, int act_min,
                                         int act_max) {
  std::vector<int8_t> out(a.size());
  size_t i = 0;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t c = 0; c < s.c; ++c) {
      for (int64_t h = 0; h < s.h; ++h) {
        for (int64_t w = 0; w < s.w; ++w, ++i) {
          const int64_t bn = sb.n == 1 ? 0 : n, bc = sb.c == 1 ? 0 : c;
          const int64_t bh = sb.h == 1 ? 0 : h, bw = sb.w == 1 ? 0 : w;
          const int8_t vb = b[static_cast<size_t>(((bn * sb.c + bc) * sb.h + bh) * sb.w + bw)];
          out[i] = reference_add(a[i], vb, qa, qb, qo, act_min, act_max);
        }
      }
    }
  }
  return out;
}

// q8ta_clamp of every element (NCHW order kept).
inline std::vector<int8_t> reference_clamp(const std::vector<int8_t>& x, RefQuant in,
                                           RefQuant out, int act_min, int act_max) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(out.scale));
  std::vector<int8_t> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float f = static_cast<float>(x[i] - in.zero_point) * in.scale;
    const float t = f * inv;
    double q = std::nearbyint(static_cast<double>(t)) + out.zero_point;  // ties to even
    q = std::fmin(std::fmax(q, act_min), act_max);
    y[i] = static_cast<int8_t>(q);
  }
  return y;
}

}  // namespace vkd::testing
