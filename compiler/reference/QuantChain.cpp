// Built with -ffp-contract=off like the rest of compiler/reference/ (compiler/CMakeLists.txt):
// each float32 product is rounded on its own, as the interpreter and the kernels round it.
#include "compiler/reference/QuantChain.h"

#include <algorithm>
#include <cmath>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

namespace {

// float32(1 / scale) as the reference's quantize and the runtime's inverse_scale compute it.
float inverse_of(double scale) {
  return static_cast<float>(1.0 / static_cast<double>(static_cast<float>(scale)));
}

// dequantize_per_tensor of one value: float32(q - zero_point) * float32(scale).
float dequantize(int64_t q, const QuantInfo& in) {
  return static_cast<float>(q - in.zero_point) * static_cast<float>(in.scale);
}

}  // namespace

int64_t reference_dq_clamp_q(int64_t q, const QuantInfo& in, const std::vector<FloatClamp>& clamps,
                             const QuantInfo& out, float multiplier) {
  float x = dequantize(q, in) * multiplier;
  for (const FloatClamp& c : clamps) x = reference::clamp_float(x, c.lo, c.hi);
  return reference::quantize_one(x, inverse_of(out.scale), static_cast<double>(out.zero_point),
                                 out.quant_min, out.quant_max);
}

int64_t requantize_clamp(int64_t q, const QuantInfo& in, const QuantInfo& out, int64_t act_min,
                         int64_t act_max, float multiplier) {
  // As the kernel does: clamp before rounding (rounding commutes with clamping to integers),
  // which also keeps the conversion to an integer in range.
  const float y = dequantize(q, in) * multiplier;
  const float t = y * inverse_of(out.scale);
  const float lo = static_cast<float>(act_min - out.zero_point);
  const float hi = static_cast<float>(act_max - out.zero_point);
  const float c = std::min(std::max(t, lo), hi);
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(c))) + out.zero_point;
}

}  // namespace vkd::compiler
