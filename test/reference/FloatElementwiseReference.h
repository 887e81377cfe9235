// CPU reference for float_add / float_mul / float_div / float_affine_scalar / float_clamp,
// float_gelu and
// float_sum / float_vector_norm, written for the tests (it shares no code with the compiler, the
// shaders or the runtime): float32 C-order tensors, operands broadcast to the output's shape by
// numpy's rules (right-aligned, each dim equal or 1). Each float32 operation is rounded on its own:
// the intermediate products go through a volatile, so no build contracts them into an FMA.
// Reductions: per output element, from +0.0 in order along the reduced dim; std::sqrt is
// correctly rounded.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace vkd::testing {

// The C-order offset into a tensor of `shape` of the element at output index `i` of `out_shape`
// (shape right-aligned against out_shape; its size-1 dims repeat).
inline int64_t ref_broadcast_offset(const std::vector<int64_t>& shape,
                                    const std::vector<int64_t>& out_shape, int64_t i) {
  int64_t offset = 0, stride = 1;
  for (size_t k = 0; k < out_shape.size(); ++k) {
    const size_t dout = out_shape.size() - 1 - k;
    const int64_t coord = i % out_shape[dout];
    i /= out_shape[dout];
    if (k < shape.size()) {
      const int64_t size = shape[shape.size() - 1 - k];
      if (size != 1) offset += coord * stride;
      stride *= size;
    }
  }
  return offset;
}

inline int64_t ref_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// out[i] = f(a[...], b[...]) over `out_shape`.
inline std::vector<float> ref_float_binary(const std::vector<float>& a,
                                           const std::vector<int64_t>& a_shape,
                                           const std::vector<float>& b,
                                           const std::vector<int64_t>& b_shape,
                                           const std::vector<int64_t>& out_shape,
                                           const std::function<float(float, float)>& f) {
  std::vector<float> out(static_cast<size_t>(ref_numel(out_shape)));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    out[static_cast<size_t>(i)] =
        f(a[static_cast<size_t>(ref_broadcast_offset(a_shape, out_shape, i))],
          b[static_cast<size_t>(ref_broadcast_offset(b_shape, out_shape, i))]);
  }
  return out;
}

// a + alpha * b (alpha * b rounded first), a * b, a / b.
inline float ref_float_add(float a, float b, float alpha) {
  volatile float scaled = alpha * b;
  return a + scaled;
}
inline float ref_float_mul(float a, float b) { return a * b; }
inline float ref_float_div(float a, float b) { return a / b; }
// x * m + addend, the product rounded first.
inline float ref_float_affine(float x, float m, float addend) {
  volatile float product = x * m;
  return product + addend;
}
// x < lo ? lo : x, then > hi ? hi; NaN passes.
inline float ref_float_clamp(float x, float lo, float hi) {
  if (std::isnan(x)) return x;
  if (x < lo) x = lo;
  if (x > hi) x = hi;
  return x;
}

// PyTorch's gelu of float32 x in double, rounded once: 0.5 x (1 + erf(x / sqrt(2))), or with
// `tanh_form` 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
inline float ref_float_gelu(float x, bool tanh_form) {
  const double d = x;
  const double inner = tanh_form ? std::tanh(std::sqrt(2.0 / M_PI) * (d + 0.044715 * d * d * d))
                                 : std::erf(d / std::sqrt(2.0));
  return static_cast<float>(0.5 * d * (1.0 + inner));
}

// The sum (norm: sqrt of the sum of squares) over dim `dim` of `x` (C order, `shape`), in the
// order of the other dims (the output's C order, keepdim or not).
inline std::vector<float> ref_float_reduce(const std::vector<float>& x,
                                           const std::vector<int64_t>& shape, size_t dim,
                                           bool norm) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t length = shape[dim];
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      float acc = 0.0f;
      for (int64_t k = 0; k < length; ++k) {
        const float v = x[static_cast<size_t>((o * length + k) * inner + i)];
        volatile float term = norm ? v * v : v;
        acc = acc + term;
      }
      out.push_back(norm ? std::sqrt(acc) : acc);
    }
  }
  return out;
}

}  // namespace vkd::testing
