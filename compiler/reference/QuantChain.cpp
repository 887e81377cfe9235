// Built with -ffp-contract=off like the rest of compiler/reference/ (compiler/CMakeLists.txt):
// each float32 product is rounded on its own, as the interpreter and the kernels round it.
#include "compiler/reference/QuantChain.h"

#include <algorithm>
#include <cmath>

#include "compiler/reference/BatchNormFold.h"
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

// ---- shaders/common/exact_fma.glslh, line for line (every operation rounded on its own) ----

void split_hi_lo(float v, float& hi, float& lo) {
  const float t = 4097.0f * v;
  hi = t - (t - v);
  lo = v - hi;
}

void two_sum(float a, float b, float& s, float& err) {
  s = a + b;
  const float bb = s - a;
  err = (a - (s - bb)) + (b - bb);
}

float add_round_to_odd(float a, float b) {
  float s = 0, err = 0;
  two_sum(a, b, s, err);
  uint32_t bits = reference::float_to_bits(s);
  if (err != 0.0f && (bits & 1u) == 0) bits += (err > 0.0f) == (s > 0.0f) ? 1u : ~0u;
  return reference::bits_to_float(bits);
}

float exact_fma(float x, float a, float a_hi, float a_lo, float b) {
  float x_hi = 0, x_lo = 0;
  split_hi_lo(x, x_hi, x_lo);
  const float p = x * a;
  const float e = ((x_hi * a_hi - p) + x_hi * a_lo + x_lo * a_hi) + x_lo * a_lo;
  float th = 0, tl = 0;
  two_sum(b, p, th, tl);
  return th + add_round_to_odd(tl, e);
}

// pack_channel_affine's split (runtime/ops/Elementwise.cpp): the low 12 significand bits cleared.
void truncated_halves(float v, float& hi, float& lo) {
  hi = reference::bits_to_float(reference::float_to_bits(v) & ~uint32_t{0xFFF});
  lo = v - hi;
}

// The kernels' requantization of float y: clamp before rounding (rounding commutes with
// clamping to integers), which also keeps the conversion to an integer in range.
int64_t requantize_float(float y, const QuantInfo& out, int64_t act_min, int64_t act_max) {
  const float t = y * inverse_of(out.scale);
  const float lo = static_cast<float>(act_min - out.zero_point);
  const float hi = static_cast<float>(act_max - out.zero_point);
  const float c = std::min(std::max(t, lo), hi);
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(c))) + out.zero_point;
}

}  // namespace

int64_t reference_dq_clamp_q(int64_t q, const QuantInfo& in, const std::vector<FloatClamp>& clamps,
                             const QuantInfo& out, float multiplier) {
  float x = dequantize(q, in) * multiplier;
  for (const FloatClamp& c : clamps) x = reference::clamp_float(x, c.lo, c.hi);
  return reference::quantize_one(x, inverse_of(out.scale), static_cast<double>(out.zero_point),
                                 out.quant_min, out.quant_max);
}

int64_t reference_dq_batch_norm_q(int64_t q, const QuantInfo& in, float scale, float shift,
                                  const std::vector<FloatClamp>& clamps, const QuantInfo& out) {
  float x = batch_norm_one(dequantize(q, in), scale, shift);
  for (const FloatClamp& c : clamps) x = reference::clamp_float(x, c.lo, c.hi);
  return reference::quantize_one(x, inverse_of(out.scale), static_cast<double>(out.zero_point),
                                 out.quant_min, out.quant_max);
}

int64_t requantize_batch_norm(int64_t q, const QuantInfo& in, const QuantInfo& out, float scale,
                              float shift, int64_t act_min, int64_t act_max) {
  float hi = 0, lo = 0;
  truncated_halves(scale, hi, lo);
  const float y = exact_fma(dequantize(q, in), scale, hi, lo, shift);
  return requantize_float(y, out, act_min, act_max);
}

int64_t requantize_clamp(int64_t q, const QuantInfo& in, const QuantInfo& out, int64_t act_min,
                         int64_t act_max, float multiplier) {
  return requantize_float(dequantize(q, in) * multiplier, out, act_min, act_max);
}

}  // namespace vkd::compiler
