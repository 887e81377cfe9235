// CPU reference of the inference batch norm: aten.batch_norm (training false) and
// aten._native_batch_norm_legit_no_training (semantics in BatchNorm.h and above each function).
#include "compiler/reference/BatchNorm.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "compiler/reference/Reference.h"
#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

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

namespace {

// A [C] float32 input's values, or none when the input is absent.
std::vector<float> channel_values(const ReferenceContext& c, size_t i, const char* what,
                                  int64_t channels) {
  const HostTensor* t = c.optional_input(i, what);
  if (t == nullptr) return {};
  c.expect_dtype(*t, DType::Float32, what);
  c.require(
      t->shape == std::vector<int64_t>{channels},
      detail::concat(what, " has shape ", shape_str(t->shape), ", expected [", channels, "]"));
  return t->to_floats();
}

// The normalized input (inputs: input, weight, bias, running_mean, running_var).
HostTensor normalize(const ReferenceContext& c, double eps) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  c.require(x.shape.size() >= 2, "input must have a channel dim (rank >= 2)");
  const int64_t channels = x.shape[1];
  c.require(c.has_input(3) && c.has_input(4),
            "running_mean and running_var are required outside training");
  const BatchNormAffine a = fold_batch_norm(
      channel_values(c, 1, "weight", channels), channel_values(c, 2, "bias", channels),
      channel_values(c, 3, "running_mean", channels), channel_values(c, 4, "running_var", channels),
      eps, static_cast<size_t>(channels));
  HostTensor out = make_tensor(DType::Float32, x.shape);
  int64_t plane = 1;
  for (size_t d = 2; d < x.shape.size(); ++d) plane *= x.shape[d];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t ch = static_cast<size_t>((i / plane) % channels);
    set_f32(out, i, batch_norm_one(get_f32(x, i), a.scale[ch], a.shift[ch]));
  }
  return out;
}

}  // namespace

// aten.batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps,
//   cudnn_enabled), training false (the shape rule refuses training): the normalization above,
//   per element of channel dim 1. momentum and cudnn_enabled change nothing outside training.
std::vector<HostTensor> reference_batch_norm(const ReferenceContext& c) {
  c.require(!c.bool_arg("training", false), "training mode is not supported");
  return {normalize(c, c.float_arg("eps"))};
}

// aten._native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
//   momentum, eps) -> (output, save_mean, save_invstd): the same normalization; ATen returns
//   the two statistics empty ([0]) outside training.
std::vector<HostTensor> reference_batch_norm_no_training(const ReferenceContext& c) {
  return {normalize(c, c.float_arg("eps")), make_tensor(DType::Float32, {0}),
          make_tensor(DType::Float32, {0})};
}

}  // namespace vkd::compiler
