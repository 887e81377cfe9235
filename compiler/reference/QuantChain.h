// One int8 value through a short quantized chain, computed exactly as the reference interpreter
// computes the edge ops (dequantize_per_tensor, relu / hardtanh / clamp, quantize_per_tensor;
// compiler/reference/), and as the backend's requantizing clamp computes it. Fusion compares
// the chain with what the backend op replacing it computes, for every one of the 256 int8
// inputs, so such a fusion is bit-exact by enumeration rather than by an argument about
// rounding.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/GraphIR.h"

namespace vkd::compiler {

// A float32 clamp as aten.clamp / aten.hardtanh apply it (an absent bound is not applied);
// aten.relu is {0, none}.
struct FloatClamp {
  std::optional<float> lo, hi;
};

// quantize_per_tensor(out, clamps...(dequantize_per_tensor(in, q) * multiplier)): the int8 the
// edge graph computes from `q`, the float32 product with `multiplier` first (aten.mul by a
// scalar; the product with 1 is exact, so the default changes nothing), then the clamps in order.
int64_t reference_dq_clamp_q(int64_t q, const QuantInfo& in, const std::vector<FloatClamp>& clamps,
                             const QuantInfo& out, float multiplier = 1.0f);

// The requantizing clamp of the backend (q8ta_clamp, q8ta_mul_scalar: runtime/ops/Elementwise.h):
//   clamp(roundEven(float32(float32(float32(q - zp_in) * s_in) * m) * inv_s_out) + zp_out,
//         act_min, act_max)
// with inv_s_out = float32(1 / s_out), m = `multiplier`, each product rounded on its own.
int64_t requantize_clamp(int64_t q, const QuantInfo& in, const QuantInfo& out, int64_t act_min,
                         int64_t act_max, float multiplier = 1.0f);

}  // namespace vkd::compiler
