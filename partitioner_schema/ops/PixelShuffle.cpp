// The schema entries of runtime/ops/PixelShuffle.cpp's ops: q8ta_pixel_shuffle, pixel_shuffle.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

void pixel_shuffle_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet chw_int8 = PlacementSet::channels_packed_int8();
  s.push_back(kernel_op(
      "q8ta_pixel_shuffle", "int8 pixel shuffle (byte shuffle or requantize)",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C, k4C1W}), per_tensor_qparams("input_"),
               scalar("upscale_factor", ArgKind::Int), per_tensor_qparams("output_"),
               tied(tensor_out("output", i8x4, chw_int8), 0))));
  // float16 buffers need 16-bit storage on the device (textures need nothing extra).
  const std::vector<DType> f32_f16 = {DType::Float32, DType::Float16};
  const PlacementSet any_float = PlacementSet::all_float();
  s.push_back(kernel_op(
      "pixel_shuffle", "float pixel shuffle",
      arg_list(tensor_in("input", f32_f16, any_float), scalar("upscale_factor", ArgKind::Int),
               tied(tensor_out("output", f32_f16, any_float), 0))));
}

}  // namespace vkd::schema
