// CPU references for the quantized linear ops, written for the tests from the arithmetic that
// runtime/ops/Linear.h defines (they share no code with the shaders or the runtime). Matrices
// are row-major: x [M, K], weight [N, K], results [M, N].
//   q8ta_linear: acc[m][n] = sum_k qx[m][k] * qw[n][k] - zp_x * sum_k qw[n][k]   (int32, exact)
//                scale[n]  = float(s_x * s_w[n])                               (one float32 mul)
//                y[m][n]   = float(float(acc) * scale[n]), then + bias[n]      (two roundings)
//                int8 output: reference_quantize(y, s_y, zp_y, act_min, act_max) from
//                QuantReference.h (the activation range is the clamp range)
//   q8da_linear: qx = per-row symmetric quantization of float x (AffineQuantReference.h:
//                choose_qparams_affine + quantize_affine, block [1, K]), acc as above with
//                zp_x = 0, y[m][n] = float(float(float(acc) * s_x[m]) * s_w[n]) + bias[n]
//                (torchao's int_scaled_matmul, `* w_scales`, `+ bias`: three roundings)
//   q8csw_linear: y[m][n] = sum_k x[m][k] * qw[n][k] in double, * s_w[n] + bias[n]; the shader
//                sums in float32, so it is compared with a tolerance.
//   q8ta_linear_dq_add: float(y[m][n] + r[m][n]) (float_add with alpha 1, one rounding)
//   q8ta_linear_gelu: reference_quantize of reference_gelu(y) below: gelu evaluated in double
//                from the float32 y, rounded once to float32 (what the compiler's CPU reference
//                of aten.gelu computes); the shader's erf is an approximation (gelu.glslh), so
//                the int8 values may differ by 1 at rounding ties.
// A file that includes this header must be compiled with -ffp-contract=off: a fused
// multiply-add of the product and the bias would skip the rounding the GPU does in between.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace vkd::testing {

inline std::vector<int32_t> reference_linear_acc(const std::vector<int8_t>& qx,
                                                 const std::vector<int8_t>& qw, int64_t m_rows,
                                                 int64_t k, int64_t n, int zp_x) {
  std::vector<int32_t> acc(static_cast<size_t>(m_rows * n));
  for (int64_t j = 0; j < n; ++j) {
    const int8_t* w = &qw[static_cast<size_t>(j * k)];
    int32_t weight_sum = 0;
    for (int64_t i = 0; i < k; ++i) weight_sum += w[i];
    for (int64_t m = 0; m < m_rows; ++m) {
      const int8_t* x = &qx[static_cast<size_t>(m * k)];
      int32_t dot = 0;
      for (int64_t i = 0; i < k; ++i) dot += int32_t(x[i]) * int32_t(w[i]);
      acc[static_cast<size_t>(m * n + j)] = dot - zp_x * weight_sum;
    }
  }
  return acc;
}

// The float32 epilogue of q8ta_linear; `bias` empty = no bias.
inline std::vector<float> reference_linear_epilogue(const std::vector<int32_t>& acc, int64_t m_rows,
                                                    int64_t n, float s_x,
                                                    const std::vector<float>& s_w,
                                                    const std::vector<float>& bias) {
  std::vector<float> y(acc.size());
  for (int64_t j = 0; j < n; ++j) {
    const float scale = s_x * s_w[static_cast<size_t>(j)];
    for (int64_t m = 0; m < m_rows; ++m) {
      const size_t at = static_cast<size_t>(m * n + j);
      float v = static_cast<float>(acc[at]) * scale;            // rounded to float32 here...
      if (!bias.empty()) v = v + bias[static_cast<size_t>(j)];  // ...before the bias is added
      y[at] = v;
    }
  }
  return y;
}

// q8da_linear's epilogue: the row's activation scale first, then the channel's weight scale.
inline std::vector<float> reference_linear_row_scaled_epilogue(const std::vector<int32_t>& acc,
                                                               int64_t m_rows, int64_t n,
                                                               const std::vector<float>& s_x,
                                                               const std::vector<float>& s_w,
                                                               const std::vector<float>& bias) {
  std::vector<float> y(acc.size());
  for (int64_t m = 0; m < m_rows; ++m) {
    for (int64_t j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(m * n + j);
      const float row = static_cast<float>(acc[at]) * s_x[static_cast<size_t>(m)];
      float v = row * s_w[static_cast<size_t>(j)];
      if (!bias.empty()) v = v + bias[static_cast<size_t>(j)];
      y[at] = v;
    }
  }
  return y;
}

inline std::vector<float> reference_q8csw_linear(const std::vector<float>& x,
                                                 const std::vector<int8_t>& qw, int64_t m_rows,
                                                 int64_t k, int64_t n,
                                                 const std::vector<float>& s_w,
                                                 const std::vector<float>& bias) {
  std::vector<float> y(static_cast<size_t>(m_rows * n));
  for (int64_t m = 0; m < m_rows; ++m)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        sum +=
            double(x[static_cast<size_t>(m * k + i)]) * double(qw[static_cast<size_t>(j * k + i)]);
      }
      double v = sum * s_w[static_cast<size_t>(j)];
      if (!bias.empty()) v += bias[static_cast<size_t>(j)];
      y[static_cast<size_t>(m * n + j)] = static_cast<float>(v);
    }
  return y;
}

// PyTorch's gelu of each element: 0.5 x (1 + erf(x / sqrt(2))), or with `tanh_form`
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), in double, rounded once to float32.
inline std::vector<float> reference_gelu(const std::vector<float>& y, bool tanh_form) {
  std::vector<float> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double x = y[i];
    const double inner =
        tanh_form ? std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x))
                  : std::erf(x / std::sqrt(2.0));
    out[i] = static_cast<float>(0.5 * x * (1.0 + inner));
  }
  return out;
}

}  // namespace vkd::testing
