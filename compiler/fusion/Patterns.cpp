// Which pattern an anchor op starts and which lowering an edge op takes: one lookup each, so a
// per-op descriptor table can later take their place.
#include "compiler/fusion/Patterns.h"

#include "compiler/fusion/EdgeOpNames.h"

namespace vkd::compiler::fusion {

FusePattern pattern_for(const std::string& op) {
  if (op == kLinear || op == kConv) return fuse_linear_conv;
  if (op == kAdd) return fuse_add;
  if (op == kPixelShuffle) return fuse_pixel_shuffle;
  if (op == kMaxPool || op == kMean || op == kAdaptiveAvgPool) return fuse_pool;
  return nullptr;
}

DirectLowering lowering_for(const std::string& op) {
  if (op == kQuantizeAffine || op == kDequantizeAffine || op == kChooseQparamsAffine) {
    return lower_affine;
  }
  if (op == kQ) return lower_quantize;
  if (op == kDq) return lower_dequantize;
  if (is_clone(op) || op == kViewCopy) return lower_identity;
  if (op == kRelu) return lower_relu;
  if (op == kHardtanh || op == kClamp) return lower_clamp;
  if (op == kPixelShuffle) return lower_pixel_shuffle;
  return nullptr;
}

}  // namespace vkd::compiler::fusion
