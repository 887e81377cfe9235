// CPU reference for the torchao affine ops (quantize_affine, dequantize_affine,
// choose_qparams_affine), written for the tests: it shares no code with the runtime, the
// shaders or the compiler's interpreter. It follows torchao's Python step by step on
// row-major (NCHW) data, float32 at every step:
//   block of element i: its multi-index divided by the block extents, row-major over the grid
//   quantize:   clamp(nearbyint(x * float(1 / scale)) + zp, qmin, qmax)
//   dequantize: float(q - zp) * scale
//   choose:     torchao's _choose_qparams_affine (preserve_zero, INT zero-point domain)
// Divisions are done in double and rounded once to float: for float32 operands that equals the
// correctly rounded float32 quotient (double has more than 2 * 24 + 2 bits, so the double
// rounding is innocuous), i.e. what torch's CPU division gives.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace vkd::testing {

// Elements per block along each dim for `block_size` (-1 or the dim's size = whole dim).
inline std::vector<int64_t> ref_block_extents(const std::vector<int64_t>& sizes,
                                              const std::vector<int64_t>& block_size) {
  std::vector<int64_t> e(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    e[d] = block_size[d] == -1 ? sizes[d] : block_size[d];
  }
  return e;
}

inline int64_t ref_block_count(const std::vector<int64_t>& sizes,
                               const std::vector<int64_t>& block_size) {
  const auto e = ref_block_extents(sizes, block_size);
  int64_t n = 1;
  for (size_t d = 0; d < sizes.size(); ++d) n *= sizes[d] / e[d];
  return n;
}

// Block index of every element, in row-major element order.
inline std::vector<int64_t> ref_block_of_elements(const std::vector<int64_t>& sizes,
                                                  const std::vector<int64_t>& block_size) {
  const auto e = ref_block_extents(sizes, block_size);
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  std::vector<int64_t> out(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    int64_t rest = i, blk = 0, grid_stride = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
      const int64_t idx = rest % sizes[d];
      rest /= sizes[d];
      blk += (idx / e[d]) * grid_stride;
      grid_stride *= sizes[d] / e[d];
    }
    out[static_cast<size_t>(i)] = blk;
  }
  return out;
}

inline float ref_div(float a, float b) {
  return static_cast<float>(static_cast<double>(a) / static_cast<double>(b));
}

inline std::vector<int8_t> reference_quantize_affine(const std::vector<float>& x,
                                                     const std::vector<int64_t>& blocks,
                                                     const std::vector<float>& scale,
                                                     const std::vector<int32_t>& zp, int qmin,
                                                     int qmax) {
  std::vector<int8_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t b = static_cast<size_t>(blocks[i]);
    const float product = x[i] * ref_div(1.0f, scale[b]);
    const float r = std::nearbyint(product);  // round half to even (default rounding mode)
    float q = r + static_cast<float>(zp[b]);
    if (std::isnan(q)) q = static_cast<float>(qmin);
    q = std::min(std::max(q, static_cast<float>(qmin)), static_cast<float>(qmax));
    out[i] = static_cast<int8_t>(q);
  }
  return out;
}

inline std::vector<float> reference_dequantize_affine(const std::vector<int8_t>& q,
                                                      const std::vector<int64_t>& blocks,
                                                      const std::vector<float>& scale,
                                                      const std::vector<int32_t>& zp) {
  std::vector<float> out(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const size_t b = static_cast<size_t>(blocks[i]);
    out[i] = static_cast<float>(static_cast<int32_t>(q[i]) - zp[b]) * scale[b];
  }
  return out;
}

enum class RefMapping { Symmetric = 0, SymmetricNoClippingErr = 1, Asymmetric = 2 };

struct RefQparams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
};

inline RefQparams reference_choose_qparams_affine(const std::vector<float>& x,
                                                  const std::vector<int64_t>& blocks,
                                                  int64_t block_count, RefMapping mapping, int qmin,
                                                  int qmax, float eps) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> mn(static_cast<size_t>(block_count), inf), mx(mn.size(), -inf);
  std::vector<bool> has_nan(mn.size(), false);
  for (size_t i = 0; i < x.size(); ++i) {  // torch.amin / torch.amax
    const size_t b = static_cast<size_t>(blocks[i]);
    if (std::isnan(x[i])) {
      has_nan[b] = true;
    } else {
      mn[b] = std::min(mn[b], x[i]);
      mx[b] = std::max(mx[b], x[i]);
    }
  }
  RefQparams r;
  for (size_t b = 0; b < mn.size(); ++b) {
    const float min_neg = has_nan[b] ? nan : std::min(mn[b], 0.0f);
    const float max_pos = has_nan[b] ? nan : std::max(mx[b], 0.0f);
    float scale;
    int32_t zp;
    if (mapping == RefMapping::Asymmetric) {
      scale = ref_div(max_pos - min_neg, static_cast<float>(qmax - qmin));
      if (!std::isnan(scale)) scale = std::max(scale, eps);  // torch.clamp(scale, min=eps)
      const float z = static_cast<float>(qmin) - std::nearbyint(ref_div(min_neg, scale));
      zp =
          std::isnan(z) ? 0 : static_cast<int32_t>(std::min(std::max(z, float(qmin)), float(qmax)));
    } else {
      if (mapping == RefMapping::Symmetric) {
        const float amax = has_nan[b] ? nan : std::max(-min_neg, max_pos);
        scale = ref_div(amax, static_cast<float>(qmax - qmin) / 2.0f);
      } else {
        const float smin = ref_div(min_neg, static_cast<float>(qmin));
        const float smax = ref_div(max_pos, static_cast<float>(qmax));
        scale = smin > smax ? smin : smax;  // torch.where(smin > smax, smin, smax)
      }
      if (!std::isnan(scale)) scale = std::max(scale, eps);
      zp = static_cast<int32_t>(std::trunc((qmax + qmin + 1) / 2.0));  // Python int(a / 2)
    }
    r.scale.push_back(scale);
    r.zero_point.push_back(zp);
  }
  return r;
}

}  // namespace vkd::testing
