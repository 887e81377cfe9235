// CPU reference for q8ta_attention, written for the tests (it shares no code with the compiler,
// the shaders or the runtime). Per batch b, head h and query row l of int8 Q [B, Tq, H*D], K and
// V [B, Tk, H*D] (NCHW order, head h = columns h*D .. h*D+D-1) and a float32 additive mask of
// [Bm, Lm, Tk] (Bm 1 or B, Lm 1 or Tq):
//   a[j] = sum over d of (q[l, hD + d] - zp_q) * (k[j, hD + d] - zp_k)     exact, int32
//   s[j] = a[j] * qk_scale + mask[b or 0, l or 0, j]  (causal: -inf for j > l)  double
//   w[j] = exp(s[j] - max s) / sum_j exp(s[j] - max s)   (s = -inf: w = 0; every s -inf: y = 0)
//   y[l, hD + d] = s_v * sum_j w[j] * (v[j, hD + d] - zp_v)                  double
// and a bound on how far the kernel's float32 y may lie from it (AttentionRef::tol, below); the
// float op's reference (ref_attention_float) below it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace vkd::testing {

struct AttentionRefShape {
  int64_t batches, tq, tk, heads, head_dim;
  int64_t mask_batches, mask_rows;  // 1 or batches, 1 or tq
  bool causal = false;              // key j > query row l masked out (-inf)
};

struct AttentionRefQuant {
  int zp_q, zp_k, zp_v;
  double qk_scale;  // s_q * s_k * scale, as the float32 the kernel multiplies by
  double v_scale;
};

struct AttentionRef {
  std::vector<double> y;    // [B, Tq, H*D]
  std::vector<double> tol;  // per element: |kernel - y| may reach it
};

// The loop both references share: per (b, h, l), score(b, h, l, j, m) gives the unmasked-by-
// causality score s[j] (mask value m added) and the kernel's error bound on it; the softmax in
// double; y = out_scale * sum_j w[j] value(b, j, h, d), and its tolerance (as below).
template <typename Score, typename Value>
AttentionRef attention_rows(const std::vector<float>& mask, const AttentionRefShape& s,
                            double out_scale, Score score, Value value) {
  const int64_t width = s.heads * s.head_dim, D = s.head_dim;
  AttentionRef r;
  r.y.assign(static_cast<size_t>(s.batches * s.tq * width), 0.0);
  r.tol.assign(r.y.size(), 1e-6);
  std::vector<double> weights(static_cast<size_t>(s.tk));
  for (int64_t b = 0; b < s.batches; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t l = 0; l < s.tq; ++l) {
        double top = -INFINITY, err = 0.0;
        for (int64_t j = 0; j < s.tk; ++j) {
          const int64_t mb = s.mask_batches == 1 ? 0 : b, ml = s.mask_rows == 1 ? 0 : l;
          const double m = mask[static_cast<size_t>((mb * s.mask_rows + ml) * s.tk + j)];
          const auto [unmasked, bound] = score(b, h, l, j, m);
          const double x = s.causal && j > l ? -INFINITY : unmasked;
          weights[static_cast<size_t>(j)] = x;
          top = std::max(top, x);
          if (std::isfinite(x)) err = std::max(err, bound);
        }
        if (top == -INFINITY) continue;  // every key masked out: y = 0
        double sum = 0.0;
        for (double& x : weights) sum += x = std::exp(x - top);
        for (int64_t d = 0; d < D; ++d) {
          double y = 0.0, spread = 0.0;
          for (int64_t j = 0; j < s.tk; ++j) {
            const double val = value(b, j, h, d);
            const double w = weights[static_cast<size_t>(j)] / sum;
            y += w * val;
            spread += w * std::fabs(val);
          }
          const size_t at = static_cast<size_t>((b * s.tq + l) * width + h * D + d);
          r.y[at] = y * out_scale;
          r.tol[at] += (4.0 * err + 1e-5) * spread * out_scale;
        }
      }
    }
  }
  return r;
}

// The kernel computes s in float32 (an error of a few ulps of |a * qk_scale| + |mask|: a -10000
// mask leaves ~1e-3), exp with a relative error of a few 1e-7 and sums in float32; an error e in
// each s moves each weight by a factor within exp(+-2e), so |dy| <= (4e + 1e-5) * s_v * sum_j
// w[j] |v - zp_v|, plus float32 rounding of y.
inline AttentionRef ref_attention(const std::vector<int8_t>& q, const std::vector<int8_t>& k,
                                  const std::vector<int8_t>& v, const std::vector<float>& mask,
                                  const AttentionRefShape& s, const AttentionRefQuant& z) {
  const int64_t width = s.heads * s.head_dim, D = s.head_dim;
  auto score = [&](int64_t b, int64_t h, int64_t l, int64_t j, double m) {
    int32_t a = 0;
    for (int64_t d = 0; d < D; ++d) {
      a += (q[static_cast<size_t>((b * s.tq + l) * width + h * D + d)] - z.zp_q) *
           (k[static_cast<size_t>((b * s.tk + j) * width + h * D + d)] - z.zp_k);
    }
    return std::pair<double, double>{a * z.qk_scale + m,
                                     2.4e-7 * (std::fabs(a * z.qk_scale) + std::fabs(m))};
  };
  auto value = [&](int64_t b, int64_t j, int64_t h, int64_t d) {
    return static_cast<double>(v[static_cast<size_t>((b * s.tk + j) * width + h * D + d)] - z.zp_v);
  };
  return attention_rows(mask, s, z.v_scale, score, value);
}

// The float op: float32 Q, K, V of the same layout; s[j] = (q . k[j]) * scale + mask in double,
// the same softmax and y = sum_j w[j] v[j], and the kernel's bound: float32 dot products (an
// error of a few ulps of sum |q k| * scale) and the mask's float32 sum, as above.
inline AttentionRef ref_attention_float(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, const std::vector<float>& mask,
                                        const AttentionRefShape& s, double scale) {
  const int64_t width = s.heads * s.head_dim, D = s.head_dim;
  auto score = [&](int64_t b, int64_t h, int64_t l, int64_t j, double m) {
    double a = 0.0, size = 0.0;
    for (int64_t d = 0; d < D; ++d) {
      const double x =
          q[static_cast<size_t>((b * s.tq + l) * width + h * D + d)] *
          static_cast<double>(k[static_cast<size_t>((b * s.tk + j) * width + h * D + d)]);
      a += x;
      size += std::fabs(x);
    }
    const double x = a * scale + m;
    return std::pair<double, double>{x, 6e-8 * D * size * std::fabs(scale) + 2.4e-7 * std::fabs(x)};
  };
  auto value = [&](int64_t b, int64_t j, int64_t h, int64_t d) {
    return static_cast<double>(v[static_cast<size_t>((b * s.tk + j) * width + h * D + d)]);
  };
  return attention_rows(mask, s, 1.0, score, value);
}

}  // namespace vkd::testing
