// The schema entries of runtime/ops/Conv2d.cpp's ops: q8ta_conv2d, q8ta_conv2d_dq,
// q8ta_conv2d_q_dq, q8ta_conv2d_fq, q8ta_conv2d_ps, q8ta_conv2d_add.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// int8 conv2d, as linear: requantizing (fused activation) or dequantizing (_dq).
void conv2d_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet chw_int8 = PlacementSet::channels_packed_int8();
  // The weights and the geometry, after the input and its qparams.
  const std::vector<ArgSchema> conv =
      arg_list(per_channel_weights(4), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("dilation", ArgKind::IntList),
               scalar("groups", ArgKind::Int));
  const std::vector<ArgSchema> head =
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"), conv);
  s.push_back(kernel_op("q8ta_conv2d", "int8 conv2d, requantized output, fused relu/clamp",
                        arg_list(head, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", i8x4, chw_int8, {k4W4C}))));
  s.push_back(kernel_op("q8ta_conv2d_dq", "int8 conv2d, float32 output",
                        arg_list(head, tensor_out("output", f32, {kBufW}, {kBufW}))));
  // q8ta_conv2d then q8ta_dequantize with its output's qparams, in the convolution's store
  // (runtime/ops/Conv2d.h).
  s.push_back(kernel_op("q8ta_conv2d_q_dq", "int8 conv2d, requantized then dequantized float32",
                        arg_list(head, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", f32, {kBufW}, {kBufW}))));
  // q8ta_quantize (the input's qparams and range) then q8ta_conv2d, the float32 NCHW input
  // quantized on load by the direct kernel (runtime/ops/Conv2d.h).
  s.push_back(kernel_op(
      "q8ta_conv2d_fq", "int8 conv2d of a float32 input quantized on load, fused relu/clamp",
      arg_list(tensor_in("input", f32, {kBufW}, {kBufW}), per_tensor_qparams("input_"),
               scalar("input_quant_min", ArgKind::Int), scalar("input_quant_max", ArgKind::Int),
               conv, per_tensor_qparams("output_"), activation_range(),
               tensor_out("output", i8x4, chw_int8, {k4W4C}))));
  // q8ta_conv2d then the byte-moving pixel shuffle, in the convolution's store: output
  // [N, C_out / r^2, H_out r, W_out r] (runtime/ops/Conv2d.h).
  s.push_back(kernel_op(
      "q8ta_conv2d_ps", "int8 conv2d writing its output pixel-shuffled, fused relu/clamp",
      arg_list(head, scalar("upscale_factor", ArgKind::Int), per_tensor_qparams("output_"),
               activation_range(), tensor_out("output", i8x4, chw_int8, {k4W4C}))));
  // q8ta_conv2d [-> the pixel shuffle (upscale_factor > 1)] then q8ta_add with `other`, in the
  // convolution's store (runtime/ops/Conv2d.h).
  s.push_back(kernel_op("q8ta_conv2d_add",
                        "int8 conv2d [pixel-shuffled] + a residual int8 tensor, requantized",
                        arg_list(head, scalar("upscale_factor", ArgKind::Int),
                                 residual_add_args("conv_", chw_int8, k4W4C, head.size() + 1))));
}

}  // namespace vkd::schema
