// CPU reference of the smooth activations (the ops an int8 graph computes by a 256-entry table,
// q8ta_lut): hardswish, hardsigmoid, leaky_relu, sigmoid, tanh, silu, gelu, elu. Each maps every
// float32 element x of 'self' to a float32, NaN propagating. Built with -ffp-contract=off
// (compiler/CMakeLists.txt), so every float32 operation below is rounded on its own.
//
// The piecewise-linear ones are the float32 operations of PyTorch's CPU kernels, in their order,
// so they agree with PyTorch bit for bit:
//   hardsigmoid(x) = min(max(x + 3, 0), 6) / 6
//   hardswish(x)   = (x * min(max(x + 3, 0), 6)) / 6
//   leaky_relu(x)  = x > 0 ? x : x * float32(negative_slope)
// The transcendental ones are evaluated in double from the float32 input and rounded once to
// float32 (PyTorch's vectorized kernels approximate the same functions to 1-2 ulp; the torch
// oracle checks them within 1e-5):
//   sigmoid(x)          = 1 / (1 + exp(-x))
//   tanh(x)             = tanh(x)
//   silu(x)             = x / (1 + exp(-x))
//   gelu(x, 'none')     = 0.5 * x * (1 + erf(x / sqrt(2)))
//   gelu(x, 'tanh')     = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//   elu(x)              = x > 0 ? x * scale : negcoef * expm1(x * input_scale)
// with elu's scale and input_scale as float32 and negcoef = float32(alpha) * float32(scale)
// rounded to float32, as PyTorch's kernel takes its coefficients.
//
// Between int8 tensors these functions are tables (q8ta_lut, compiler/fusion/Lut.cpp): entry
// v + 128 is the interpreter's dq -> f [-> clamp] -> q of int8 v, i.e.
//   x = float32(v - zp_in) * float32(s_in);  y = f(x) as above;
//   q = clamp(roundEven(float32(y * float32(1 / s_out))) + zp_out, quant_min, quant_max)
// (the project's quantize rounding, compiler/reference/Quantize.cpp), so a fused graph equals the
// interpreter bit for bit.
#include "compiler/reference/Reference.h"

#include <cmath>
#include <string>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// min(max(x + 3, 0), 6) in float32, NaN propagating (PyTorch's clamp of hardsigmoid and
// hardswish).
float relu6_of_x_plus_3(float x) {
  const float t = x + 3.0f;
  if (std::isnan(t)) return t;
  return t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t);
}

// `f` evaluated in double on every element, rounded once to float32.
std::vector<HostTensor> unary_double(const ReferenceContext& c, double (*f)(double)) {
  return unary_float(c, [f](float x) { return static_cast<float>(f(static_cast<double>(x))); });
}

double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double tanh_d(double x) { return std::tanh(x); }
double silu_d(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_erf_d(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_d(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

}  // namespace

std::vector<HostTensor> reference_hardsigmoid(const ReferenceContext& c) {
  return unary_float(c, [](float x) { return relu6_of_x_plus_3(x) / 6.0f; });
}

std::vector<HostTensor> reference_hardswish(const ReferenceContext& c) {
  return unary_float(c, [](float x) {
    const float t = x * relu6_of_x_plus_3(x);
    return t / 6.0f;
  });
}

std::vector<HostTensor> reference_leaky_relu(const ReferenceContext& c) {
  const float slope =
      static_cast<float>(c.present("negative_slope") ? c.float_arg("negative_slope") : 0.01);
  return unary_float(c, [slope](float x) { return x > 0.0f ? x : x * slope; });
}

std::vector<HostTensor> reference_sigmoid(const ReferenceContext& c) {
  return unary_double(c, sigmoid_d);
}

std::vector<HostTensor> reference_tanh(const ReferenceContext& c) {
  return unary_double(c, tanh_d);
}

std::vector<HostTensor> reference_silu(const ReferenceContext& c) {
  return unary_double(c, silu_d);
}

std::vector<HostTensor> reference_gelu(const ReferenceContext& c) {
  const std::string approximate = c.present("approximate") ? c.string_arg("approximate") : "none";
  c.require(approximate == "none" || approximate == "tanh",
            "approximate must be 'none' or 'tanh', got '" + approximate + "'");
  return unary_double(c, approximate == "tanh" ? gelu_tanh_d : gelu_erf_d);
}

std::vector<HostTensor> reference_elu(const ReferenceContext& c) {
  auto coefficient = [&](const char* name) {
    return static_cast<float>(c.present(name) ? c.float_arg(name) : 1.0);
  };
  const float alpha = coefficient("alpha"), scale = coefficient("scale");
  const float input_scale = coefficient("input_scale");
  const float negcoef = alpha * scale;
  return unary_float(c, [=](float x) {
    if (std::isnan(x) || x > 0.0f) return x * scale;
    const double e = std::expm1(static_cast<double>(x) * static_cast<double>(input_scale));
    return static_cast<float>(static_cast<double>(negcoef) * e);
  });
}

}  // namespace vkd::compiler
