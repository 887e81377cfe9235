// An inference batch norm as ATen's CPU kernel computes it (PyTorch 1.13's
// batch_norm_cpu_collect_linear_and_constant_terms, eval mode, float32, the AVX2 build whose
// multiply-adds the compiler contracts): per channel c
//   invstd_c = float32(1 / float32(sqrt(float32(running_var_c + float32(eps)))))
//   scale_c  = float32(invstd_c * weight_c)                  (weight absent: 1)
//   shift_c  = fma(-running_mean_c, scale_c, bias_c)         (bias absent: 0; one rounding)
//   y        = fma(x, scale_c, shift_c)                      (one rounding)
// Checked bit for bit against torch.batch_norm on this machine's PyTorch (torch_oracle.py). A
// build without FMA (x86-64 without AVX2) rounds the products apart: results then differ by an
// ulp of y now and then, which shows in int8 only at a rounding tie.
// The reference and the fusion into q8ta_batch_norm (compiler/ops/BatchNorm.cpp) and its check
// (QuantChain.h) share these functions.
#pragma once

#include <cstddef>
#include <vector>

namespace vkd::compiler {

struct BatchNormAffine {
  std::vector<float> scale, shift;  // per channel
};

// The per-channel affine map of a batch norm with `channels` channels; `weight` and `bias` may
// be empty (absent), `mean` and `var` hold one value per channel.
BatchNormAffine fold_batch_norm(const std::vector<float>& weight, const std::vector<float>& bias,
                                const std::vector<float>& mean, const std::vector<float>& var,
                                double eps, size_t channels);

// y = fma(x, scale, shift), one rounding (std::fma), as the kernel ATen runs computes it.
float batch_norm_one(float x, float scale, float shift);

}  // namespace vkd::compiler
