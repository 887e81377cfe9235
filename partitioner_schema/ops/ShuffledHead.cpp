// The schema entries of runtime/ops/ShuffledHead.cpp's ops: q8ta_conv2d_ps_pw_q_dq.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

void shuffled_head_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  // A 1x1 q8ta_conv2d_ps (stride 1, padding 0, groups 1, ps_weight [C r^2, C_in, 1, 1]) whose
  // int8 pixel-shuffled output "mid" [N, C, H r, W r] only a 1x1 q8ta_conv2d_q_dq (weight
  // [N_out, C, 1, 1]) reads, in one dispatch that never writes mid (a segmentation head after
  // its last upsampling stage; runtime/ops/ShuffledHead.h).
  s.push_back(kernel_op(
      "q8ta_conv2d_ps_pw_q_dq",
      "int8 1x1 conv2d pixel-shuffled, then a 1x1 conv2d requantized and dequantized to float32",
      arg_list(tensor_in("input", i8x4, {k4W4C}, {k4W4C}), per_tensor_qparams("input_"),
               per_channel_weights(4, "ps_"), scalar("upscale_factor", ArgKind::Int),
               per_tensor_qparams("mid_"), scalar("mid_activation_min", ArgKind::Int),
               scalar("mid_activation_max", ArgKind::Int), per_channel_weights(4),
               per_tensor_qparams("output_"), activation_range(),
               tensor_out("output", f32, {kBufW}, {kBufW}))));
}

}  // namespace vkd::schema
