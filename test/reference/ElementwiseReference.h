// CPU references for q8ta_add, q8ta_mul, q8ta_clamp, q8ta_mul_scalar and q8ta_batch_norm,
// written for the tests (they share no code with the shaders or the runtime). Per element, each
// float32 operation rounded on its own:
//   add:        y = float(qa - zp_a) * s_a + float(qb - zp_b) * s_b
//   mul:        y = float(qa - zp_a) * s_a * float(qb - zp_b) * s_b  (the two dequantized
//               values rounded first, then their product)
//   clamp:      y = float(q - zp_in) * s_in
//   mul_scalar: y = float(float(q - zp_in) * s_in) * m
//   batch_norm: y = std::fma(float(q - zp_in) * s_in, scale[c], shift[c])  (rounded once)
//   q = clamp(nearbyint(y * inv_s_out) + zp_out, act_min, act_max), inv_s_out = float(1/s_out)
// The binary ops' b broadcasts when it is [N or 1, C, 1, 1] or [1, 1, 1, 1] (NCHW element
// vectors).
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

enum class RefBinaryOp { Add, Mul };

// y requantized: clamp(nearbyint(float(y * inv_s_out)) + zp_out, act_min, act_max).
inline int8_t ref_requantize(float y, RefQuant out, int act_min, int act_max) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(out.scale));
  const float t = y * inv;
  double q = std::nearbyint(static_cast<double>(t)) + out.zero_point;  // ties to even
  q = std::fmin(std::fmax(q, act_min), act_max);
  return static_cast<int8_t>(q);
}

inline int8_t reference_binary(RefBinaryOp op, int8_t qa, int8_t qb, RefQuant a, RefQuant b,
                               RefQuant out, int act_min, int act_max) {
  const float fa = static_cast<float>(qa - a.zero_point) * a.scale;
  const float fb = static_cast<float>(qb - b.zero_point) * b.scale;
  const float y = op == RefBinaryOp::Add ? fa + fb : fa * fb;
  return ref_requantize(y, out, act_min, act_max);
}

// out[n, c, h, w] = op(a[n, c, h, w], b[...]) with b of shape `sb` equal to `s`,
// [N or 1, C, 1, 1] or [1, 1, 1, 1].
inline std::vector<int8_t> reference_binary(RefBinaryOp op, const std::vector<int8_t>& a,
                                            const RefShape& s, const std::vector<int8_t>& b,
                                            const RefShape& sb, RefQuant qa, RefQuant qb,
                                            RefQuant qo, int act_min, int act_max) {
  std::vector<int8_t> out(a.size());
  size_t i = 0;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t c = 0; c < s.c; ++c) {
      for (int64_t h = 0; h < s.h; ++h) {
        for (int64_t w = 0; w < s.w; ++w, ++i) {
          const int64_t bn = sb.n == 1 ? 0 : n, bc = sb.c == 1 ? 0 : c;
          const int64_t bh = sb.h == 1 ? 0 : h, bw = sb.w == 1 ? 0 : w;
          const int8_t vb = b[static_cast<size_t>(((bn * sb.c + bc) * sb.h + bh) * sb.w + bw)];
          out[i] = reference_binary(op, a[i], vb, qa, qb, qo, act_min, act_max);
        }
      }
    }
  }
  return out;
}

// q8ta_clamp (m = 1: the product with 1 is exact) and q8ta_mul_scalar of every element (NCHW
// order kept).
inline std::vector<int8_t> reference_requantize(const std::vector<int8_t>& x, RefQuant in, float m,
                                                RefQuant out, int act_min, int act_max) {
  std::vector<int8_t> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float f = static_cast<float>(x[i] - in.zero_point) * in.scale;
    y[i] = ref_requantize(f * m, out, act_min, act_max);
  }
  return y;
}

// q8ta_batch_norm of every element of an NCHW tensor of shape `s`: channel c's scale and
// shift, the multiply-add fused (std::fma: one rounding, as PyTorch's CPU batch norm).
inline std::vector<int8_t> reference_batch_norm(const std::vector<int8_t>& x, const RefShape& s,
                                                RefQuant in, const std::vector<float>& scale,
                                                const std::vector<float>& shift, RefQuant out,
                                                int act_min, int act_max) {
  std::vector<int8_t> y(x.size());
  const int64_t plane = s.h * s.w;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = static_cast<size_t>((static_cast<int64_t>(i) / plane) % s.c);
    const float f = static_cast<float>(x[i] - in.zero_point) * in.scale;
    y[i] = ref_requantize(std::fma(f, scale[c], shift[c]), out, act_min, act_max);
  }
  return y;
}

}  // namespace vkd::testing
