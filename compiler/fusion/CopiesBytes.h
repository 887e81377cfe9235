// The rule by which the runtime's q8ta_cat / q8ta_slice move bytes instead of requantizing
// (runtime/ops/Concat.h): the concatenation pattern (Concat.cpp) and the in-place report
// (compiler/InPlace.h) both apply it.
#pragma once

#include "compiler/GraphIR.h"

namespace vkd::compiler {

// q8ta_cat / q8ta_slice copy the bytes of an input quantized with `in` into an output
// quantized with `out` (the same scale and zero point, the full int8 range) instead of
// requantizing them.
inline bool copies_bytes(const QuantInfo& in, const QuantInfo& out) {
  return in.scale == out.scale && in.zero_point == out.zero_point && out.quant_min == -128 &&
         out.quant_max == 127;
}

}  // namespace vkd::compiler
