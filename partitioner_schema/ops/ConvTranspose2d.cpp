// The schema entries of runtime/ops/ConvTranspose2d.cpp's ops: q8ta_conv_transpose2d.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

void conv_transpose2d_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet chw_int8 = PlacementSet::channels_packed_int8();
  // Weights in q8ta_conv2d's order [C_out, C_in / groups, KH, KW] (the compiler swaps PyTorch's
  // [C_in, C_out / groups, KH, KW]), so scales and bias are one per output channel as there.
  s.push_back(kernel_op(
      "q8ta_conv_transpose2d", "int8 transposed conv2d, requantized output, fused relu/clamp",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               per_channel_weights(4), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("output_padding", ArgKind::IntList),
               scalar("dilation", ArgKind::IntList), scalar("groups", ArgKind::Int),
               per_tensor_qparams("output_"), activation_range(),
               tensor_out("output", i8x4, chw_int8, {k4W4C}))));
}

}  // namespace vkd::schema
