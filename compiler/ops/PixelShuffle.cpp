// aten.pixel_shuffle.
#include "compiler/ops/EdgeOp.h"
#include "compiler/ops/ShapeContext.h"
#include "core/TensorLimits.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/PixelShuffle.cpp.
std::vector<HostTensor> reference_pixel_shuffle(const ReferenceContext& c);

// The fusion pattern and direct lowerings these ops use, defined in compiler/fusion/.
namespace fusion {
// dq -> [clone]* -> aten.pixel_shuffle -> [clone]* -> q => q8ta_pixel_shuffle.
void fuse_pixel_shuffle(FuseState& state, int anchor);
std::string lower_pixel_shuffle(FuseState& state, Node& node, int where);  // -> pixel_shuffle
}  // namespace fusion

namespace {

std::vector<TypedShape> pixel_shuffle(const ShapeContext& c) {
  const Value& x = c.in("self");
  const size_t rank = x.shape.size();
  if (rank < 3) {
    c.fail(c.input_field("self"), "expected rank >= 3 ([.., C, H, W]), got shape ",
           shape_str(x.shape));
  }
  const int64_t r = c.i64("upscale_factor");
  if (r < 1) c.fail(c.arg_field("upscale_factor"), "expected a value >= 1, got ", r);
  std::vector<int64_t> out = x.shape;
  const int64_t ch = out[rank - 3];
  // r * r is computed only where it fits (the channels are at most 2^31 - 1, TensorLimits.h).
  if (r > kMaxTensorElements) {
    c.fail(c.arg_field("upscale_factor"), r, " is above the largest size of a tensor");
  }
  if (ch % (r * r) != 0) {
    c.fail(c.input_field("self"), "channels ", ch,
           " are not divisible by upscale_factor^2 = ", r * r, " (shape ", shape_str(x.shape), ")");
  }
  out[rank - 3] = ch / (r * r);
  out[rank - 2] *= r;
  out[rank - 1] *= r;
  return {{x.dtype, out}};
}

}  // namespace

std::vector<EdgeOp> pixel_shuffle_edge_ops() {
  return {
      EdgeOp{"aten.pixel_shuffle",
             {"self"},
             1,
             {required_arg("upscale_factor", Lit::Int)},
             1,
             pixel_shuffle}
          .computed_by(reference_pixel_shuffle)
          .fused_by(fusion::fuse_pixel_shuffle, {"q8ta_pixel_shuffle", "q8ta_conv2d_ps"})
          .lowered_by(fusion::lower_pixel_shuffle, {"pixel_shuffle"}),
  };
}

}  // namespace vkd::compiler
