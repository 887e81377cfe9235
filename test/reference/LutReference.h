// CPU references for q8ta_lut, written for the tests (they share no code with the compiler, the
// shaders or the runtime): the smooth activations as PyTorch defines them, and the 256-entry
// table of one between two int8 quantizations. Per int8 input v:
//   x = float(v - zp_in) * s_in                                   (dequantize, float32)
//   y = f(x)                                                      (below)
//   table[v + 128] = clamp(nearbyint(float(y * inv)) + zp_out, qmin, qmax), inv = float(1/s_out)
// f: hardsigmoid, hardswish and leaky_relu in float32 operations in PyTorch's order; the
// transcendental ones in double from x, rounded once to float32.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace vkd::testing {

enum class RefAct {
  Hardswish,
  Hardsigmoid,
  Sigmoid,
  Tanh,
  Silu,
  GeluErf,
  GeluTanh,
  Elu,
  LeakyRelu
};

// An activation and its arguments (elu: alpha, scale, input_scale; leaky_relu: slope in `alpha`).
struct RefActivation {
  RefAct act;
  const char* name;
  double alpha = 1.0, scale = 1.0, input_scale = 1.0;
};

inline float ref_activation(const RefActivation& f, float x) {
  const double d = x;
  const auto relu6_plus_3 = [](float v) {
    const float t = v + 3.0f;
    return std::isnan(t) ? t : std::fmin(std::fmax(t, 0.0f), 6.0f);
  };
  switch (f.act) {
    case RefAct::Hardsigmoid: return relu6_plus_3(x) / 6.0f;
    case RefAct::Hardswish: {
      const float t = x * relu6_plus_3(x);
      return t / 6.0f;
    }
    case RefAct::LeakyRelu: return x > 0.0f ? x : x * static_cast<float>(f.alpha);
    case RefAct::Sigmoid: return static_cast<float>(1.0 / (1.0 + std::exp(-d)));
    case RefAct::Tanh: return static_cast<float>(std::tanh(d));
    case RefAct::Silu: return static_cast<float>(d / (1.0 + std::exp(-d)));
    case RefAct::GeluErf: return static_cast<float>(0.5 * d * (1.0 + std::erf(d / std::sqrt(2.0))));
    case RefAct::GeluTanh: {
      const double inner = std::sqrt(2.0 / M_PI) * (d + 0.044715 * d * d * d);
      return static_cast<float>(0.5 * d * (1.0 + std::tanh(inner)));
    }
    case RefAct::Elu: {
      const float scale = static_cast<float>(f.scale);
      if (!(x <= 0.0f)) return x * scale;
      const float negcoef = static_cast<float>(f.alpha) * scale;
      const double e = std::expm1(d * static_cast<float>(f.input_scale));
      return static_cast<float>(negcoef * e);
    }
  }
  return x;
}

struct RefLutQuant {
  float scale;
  int zero_point;
  int quant_min = -128, quant_max = 127;
};

// table[v + 128] for every int8 v.
inline std::array<int8_t, 256> ref_lut_table(const RefActivation& f, RefLutQuant in,
                                             RefLutQuant out) {
  const float inv = static_cast<float>(1.0 / static_cast<double>(out.scale));
  std::array<int8_t, 256> table{};
  for (int v = -128; v <= 127; ++v) {
    const float x = static_cast<float>(v - in.zero_point) * in.scale;
    const float t = ref_activation(f, x) * inv;
    double q = std::nearbyint(static_cast<double>(t)) + out.zero_point;  // ties to even
    q = std::fmin(std::fmax(q, out.quant_min), out.quant_max);
    table[static_cast<size_t>(v + 128)] = static_cast<int8_t>(q);
  }
  return table;
}

// `table` applied to every element (order kept).
inline std::vector<int8_t> ref_apply_table(const std::array<int8_t, 256>& table,
                                           const std::vector<int8_t>& x) {
  std::vector<int8_t> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = table[static_cast<size_t>(x[i] + 128)];
  return y;
}

}  // namespace vkd::testing
