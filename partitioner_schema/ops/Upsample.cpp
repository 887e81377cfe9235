// The schema entries of runtime/ops/Upsample.cpp's ops: q8ta_upsample_nearest2d,
// q8ta_upsample_bilinear2d.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// upsample_nearest2d / upsample_bilinear2d on int8, any layout (the output shares the input's);
// scales_h / scales_w are ATen's scale factors (0 = none: the step is in / out).
void upsample_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  const std::vector<ArgSchema> scales = {scalar("scales_h", ArgKind::Float),
                                         scalar("scales_w", ArgKind::Float)};
  s.push_back(kernel_op(
      "q8ta_upsample_nearest2d", "int8 nearest upsampling (bytes moved, or requantized)",
      arg_list(tensor_in("input", i8x4, int8, {k4W4C}), per_tensor_qparams("input_"), scales,
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(kernel_op(
      "q8ta_upsample_bilinear2d",
      "int8 bilinear upsampling (exact fixed-point weights, one requantization)",
      arg_list(tensor_in("input", i8x4, int8, {k4W4C}), per_tensor_qparams("input_"),
               scalar("align_corners", ArgKind::Bool), scales, per_tensor_qparams("output_"),
               tied(tensor_out("output", i8x4, int8), 0))));
}

}  // namespace vkd::schema
