// CPU references for q8ta_cat and q8ta_slice, written for the tests (they share no code with the
// shader or the runtime). Tensors are NCHW int8 vectors of 4-D shapes; `dim` is the dim of the
// 4-D view (0 N, 1 C, 2 H, 3 W). Every element of an input is requantized to the output's
// quantization, each float32 operation rounded on its own:
//   y = float(q - zp_in) * s_in
//   q_out = clamp(nearbyint(y * inv_s_out) + zp_out, quant_min, quant_max)  (ties to even)
// with inv_s_out = float(1 / s_out). (With the output's own scale and zero point and the full
// range this gives every value back, which is what lets the kernel copy such inputs.)
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "test/reference/LayoutReference.h"

namespace vkd::testing {

struct RefQuantRange {
  float scale;
  int zero_point;
  int quant_min = -128, quant_max = 127;
};

inline int8_t ref_requantize_one(int8_t q, RefQuantRange in, RefQuantRange out) {
  const float y = static_cast<float>(q - in.zero_point) * in.scale;
  const float inv = static_cast<float>(1.0 / static_cast<double>(out.scale));
  const float t = y * inv;
  const double r = std::nearbyint(static_cast<double>(t)) + out.zero_point;
  return static_cast<int8_t>(std::fmin(std::fmax(r, out.quant_min), out.quant_max));
}

inline std::array<int64_t, 4> ref_dims(const RefShape& s) { return {s.n, s.c, s.h, s.w}; }

inline int64_t ref_index(const RefShape& s, const std::array<int64_t, 4>& e) {
  return ((e[0] * s.c + e[1]) * s.h + e[2]) * s.w + e[3];
}

// Visits every element (n, c, h, w) of `s`.
template <typename F>
void ref_for_each(const RefShape& s, F f) {
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t h = 0; h < s.h; ++h)
        for (int64_t w = 0; w < s.w; ++w) f(std::array<int64_t, 4>{n, c, h, w});
}

// q8ta_cat: the inputs (shapes `shapes`, quantizations `in`) joined along `dim`.
inline std::vector<int8_t> reference_cat(const std::vector<std::vector<int8_t>>& inputs,
                                         const std::vector<RefShape>& shapes,
                                         const std::vector<RefQuantRange>& in, int dim,
                                         const RefShape& out_shape, RefQuantRange out) {
  std::vector<int8_t> y(static_cast<size_t>(out_shape.n * out_shape.c * out_shape.h * out_shape.w));
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ref_for_each(shapes[i], [&](std::array<int64_t, 4> e) {
      const int8_t v = inputs[i][static_cast<size_t>(ref_index(shapes[i], e))];
      e[static_cast<size_t>(dim)] += offset;
      y[static_cast<size_t>(ref_index(out_shape, e))] = ref_requantize_one(v, in[i], out);
    });
    offset += ref_dims(shapes[i])[static_cast<size_t>(dim)];
  }
  return y;
}

// q8ta_slice: output index j along `dim` is input index start + j * step.
inline std::vector<int8_t> reference_slice(const std::vector<int8_t>& x, const RefShape& in_shape,
                                           RefQuantRange in, int dim, int64_t start, int64_t step,
                                           const RefShape& out_shape, RefQuantRange out) {
  std::vector<int8_t> y(static_cast<size_t>(out_shape.n * out_shape.c * out_shape.h * out_shape.w));
  ref_for_each(out_shape, [&](std::array<int64_t, 4> e) {
    const size_t at = static_cast<size_t>(ref_index(out_shape, e));
    e[static_cast<size_t>(dim)] = start + e[static_cast<size_t>(dim)] * step;
    y[at] = ref_requantize_one(x[static_cast<size_t>(ref_index(in_shape, e))], in, out);
  });
  return y;
}

}  // namespace vkd::testing
