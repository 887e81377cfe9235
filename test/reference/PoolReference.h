// CPU references for q8ta_max_pool2d and q8ta_mean, written for the tests (they share no code
// with the shaders or the runtime). NCHW int8 vectors.
//   max_pool2d: PyTorch semantics; padding never wins; a window with no input position gives
//               -128 (what -inf quantizes to).
//   mean:       acc = sum(q) - H*W * zp_in;  m = float(double(s_in) / (H*W))
//               q = clamp(nearbyint(float(float(acc) * m) * inv_s_out) + zp_out, -128, 127)
//               inv_s_out = float(1/s_out); every product rounded to float32, ties to even.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "test/reference/LayoutReference.h"

namespace vkd::testing {

struct RefPool {
  int kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

// Written from PyTorch's pooling_output_shape: ceil/floor of the window count, and with
// ceil_mode the last window dropped when it would start in the right padding.
inline int64_t ref_pool_out(int64_t in, int k, int p, int s, int d, bool ceil_mode) {
  const int64_t span = in + 2 * p - static_cast<int64_t>(d) * (k - 1) - 1;
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(double(span) / s)
                                               : std::floor(double(span) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) out -= 1;
  return out;
}

inline std::vector<int8_t> reference_max_pool2d(const std::vector<int8_t>& x, const RefShape& s,
                                                const RefPool& p, RefShape& out_shape) {
  const int64_t OH = ref_pool_out(s.h, p.kh, p.ph, p.sh, p.dh, p.ceil_mode);
  const int64_t OW = ref_pool_out(s.w, p.kw, p.pw, p.sw, p.dw, p.ceil_mode);
  out_shape = {s.n, s.c, OH, OW};
  std::vector<int8_t> out(static_cast<size_t>(s.n * s.c * OH * OW));
  size_t o = 0;
  for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow, ++o) {
        int best = -128;
        for (int i = 0; i < p.kh; ++i) {
          for (int j = 0; j < p.kw; ++j) {
            const int64_t h = oh * p.sh - p.ph + int64_t(i) * p.dh;
            const int64_t w = ow * p.sw - p.pw + int64_t(j) * p.dw;
            if (h < 0 || h >= s.h || w < 0 || w >= s.w) continue;
            best = std::max<int>(best, x[static_cast<size_t>((plane * s.h + h) * s.w + w)]);
          }
        }
        out[o] = static_cast<int8_t>(best);
      }
    }
  }
  return out;
}

inline std::vector<int8_t> reference_mean_hw(const std::vector<int8_t>& x, const RefShape& s,
                                             float in_scale, int in_zp, float out_scale,
                                             int out_zp) {
  const int64_t count = s.h * s.w;
  const float m = static_cast<float>(static_cast<double>(in_scale) / static_cast<double>(count));
  const float inv = static_cast<float>(1.0 / static_cast<double>(out_scale));
  std::vector<int8_t> out(static_cast<size_t>(s.n * s.c));
  for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
    int64_t sum = 0;
    for (int64_t i = 0; i < count; ++i) sum += x[static_cast<size_t>(plane * count + i)];
    const float acc = static_cast<float>(sum - count * in_zp);
    const float y = acc * m;
    const float t = y * inv;
    double q = std::nearbyint(static_cast<double>(t)) + out_zp;
    out[static_cast<size_t>(plane)] = static_cast<int8_t>(std::fmin(std::fmax(q, -128.0), 127.0));
  }
  return out;
}

}  // namespace vkd::testing
