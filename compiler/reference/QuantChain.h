// One int8 value through a short quantized chain, computed exactly as the reference interpreter
// computes the edge ops (dequantize_per_tensor, relu / hardtanh / clamp, a batch norm,
// quantize_per_tensor; compiler/reference/), and as the backend's requantizing clamp and batch
// norm compute it. Fusion compares
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

// quantize_per_tensor(out, clamps...(batch_norm_one(dequantize_per_tensor(in, q), scale,
// shift))): the int8 that dq -> batch norm [-> relu | hardtanh | clamp] -> q computes from `q`
// in a channel with that scale and shift (BatchNormFold.h).
int64_t reference_dq_batch_norm_q(int64_t q, const QuantInfo& in, float scale, float shift,
                                  const std::vector<FloatClamp>& clamps, const QuantInfo& out);

// q8ta_batch_norm as its kernel computes it (the q8ta_clamp kernel's PER_CHANNEL variant): the
// multiply-add rounded once from plain float32 operations (shaders/common/exact_fma.glslh, with
// `scale` split as runtime/ops/Elementwise.cpp's pack_channel_affine splits it), then the
// requantizing clamp of requantize_clamp.
int64_t requantize_batch_norm(int64_t q, const QuantInfo& in, const QuantInfo& out, float scale,
                              float shift, int64_t act_min, int64_t act_max);

}  // namespace vkd::compiler
