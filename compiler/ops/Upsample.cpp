// aten.upsample_nearest2d and aten.upsample_bilinear2d, each in both overloads: `.vec`
// (F.interpolate's: output_size or scale_factors) and the default one (output_size with the
// optional scales_h / scales_w, what decompositions write).
#include "compiler/reference/Upsample.h"
#include "compiler/ops/EdgeOp.h"
#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Upsample.cpp.
std::vector<HostTensor> reference_upsample_nearest2d(const ReferenceContext& c);
std::vector<HostTensor> reference_upsample_bilinear2d(const ReferenceContext& c);

// The fusion pattern these ops use, defined in compiler/fusion/Upsample.cpp.
namespace fusion {
// dq -> aten.upsample_nearest2d | aten.upsample_bilinear2d -> q => q8ta_upsample_nearest2d |
// q8ta_upsample_bilinear2d.
void fuse_upsample(FuseState& state, int anchor);
}  // namespace fusion

namespace {

// nearest moves elements (float16 too); bilinear computes in float32.
std::vector<TypedShape> upsample(const ShapeContext& c) {
  const bool bilinear = is_bilinear_upsample(c.node().op);
  const char* input = is_vec_upsample(c.node().op) ? "input" : "self";
  const Value& x = c.in(input);
  if (bilinear || x.dtype != DType::Float16) c.dtype(x, input, DType::Float32);
  c.rank(x, input, 4);
  UpsampleArgs a;
  const std::string why = read_upsample_args(c.node(), x.shape, a);
  if (!why.empty()) c.fail(c.input_field(input), why);
  return {{x.dtype, {x.shape[0], x.shape[1], a.out_h, a.out_w}}};
}

EdgeOp vec_op(const char* name, bool bilinear) {
  std::vector<EdgeArg> args = {optional_arg("output_size", Lit::Ints)};
  if (bilinear) args.push_back(required_arg("align_corners", Lit::Bool));
  args.push_back(optional_arg("scale_factors", Lit::Numbers));
  return EdgeOp{name, {"input"}, 1, args, 1, upsample};
}

EdgeOp default_op(const char* name, bool bilinear) {
  std::vector<EdgeArg> args = {required_arg("output_size", Lit::Ints)};
  if (bilinear) args.push_back(required_arg("align_corners", Lit::Bool));
  args.push_back(optional_arg("scales_h", Lit::Number));
  args.push_back(optional_arg("scales_w", Lit::Number));
  return EdgeOp{name, {"self"}, 1, args, 1, upsample};
}

}  // namespace

std::vector<EdgeOp> upsample_edge_ops() {
  const std::vector<std::string> nearest = {"q8ta_upsample_nearest2d"};
  const std::vector<std::string> bilinear = {"q8ta_upsample_bilinear2d"};
  return {
      vec_op("aten.upsample_nearest2d.vec", false)
          .computed_by(reference_upsample_nearest2d)
          .fused_by(fusion::fuse_upsample, nearest),
      default_op("aten.upsample_nearest2d", false)
          .computed_by(reference_upsample_nearest2d)
          .fused_by(fusion::fuse_upsample, nearest),
      vec_op("aten.upsample_bilinear2d.vec", true)
          .computed_by(reference_upsample_bilinear2d)
          .fused_by(fusion::fuse_upsample, bilinear),
      default_op("aten.upsample_bilinear2d", true)
          .computed_by(reference_upsample_bilinear2d)
          .fused_by(fusion::fuse_upsample, bilinear),
  };
}

}  // namespace vkd::compiler
