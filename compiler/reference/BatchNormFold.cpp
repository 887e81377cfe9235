// The batch norm folded into a per-channel scale and shift (BatchNormFold.h), shared by the
// reference and the fusion of compiler/ops/BatchNorm.cpp and by QuantChain's check.
#include "compiler/reference/BatchNormFold.h"

#include <cmath>

namespace vkd::compiler {

BatchNormAffine fold_batch_norm(const std::vector<float>& weight, const std::vector<float>& bias,
                                const std::vector<float>& mean, const std::vector<float>& var,
                                double eps, size_t channels) {
  BatchNormAffine a;
  const float eps_f = static_cast<float>(eps);
  for (size_t c = 0; c < channels; ++c) {
    const float invstd = 1.0f / std::sqrt(var[c] + eps_f);
    const float scale = weight.empty() ? invstd : invstd * weight[c];
    a.scale.push_back(scale);
    a.shift.push_back(std::fma(-mean[c], scale, bias.empty() ? 0.0f : bias[c]));
  }
  return a;
}

float batch_norm_one(float x, float scale, float shift) { return std::fma(x, scale, shift); }

}  // namespace vkd::compiler
