// The schema entries of runtime/ops/DepthwisePointwise.cpp's ops: q8ta_conv2d_dw_pw,
// q8ta_conv2d_dw_pw_add, q8ta_conv2d_pw_dw_pw, q8ta_conv2d_pw_dw_pw_add.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

void depthwise_pointwise_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  // A depthwise q8ta_conv2d (groups = C, dw_weight [C, 1, KH, KW], its int8 output "mid") then
  // a 1x1 q8ta_conv2d (stride 1, padding 0, groups 1, weight [N, C, 1, 1]) reading mid, in one
  // dispatch that keeps the mid tile in shared memory (C <= 1024); 4W4C only
  // (runtime/ops/DepthwisePointwise.h). _add: then q8ta_add with `other`, as q8ta_conv2d_add.
  const std::vector<ArgSchema> dw_pw =
      arg_list(tensor_in("input", i8x4, {k4W4C}, {k4W4C}), per_tensor_qparams("input_"),
               per_channel_weights(4, "dw_"), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("dilation", ArgKind::IntList),
               per_tensor_qparams("mid_"), scalar("mid_activation_min", ArgKind::Int),
               scalar("mid_activation_max", ArgKind::Int), per_channel_weights(4));
  s.push_back(kernel_op("q8ta_conv2d_dw_pw",
                        "int8 depthwise conv2d then a 1x1 conv2d on its int8 output",
                        arg_list(dw_pw, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", i8x4, {k4W4C}, {k4W4C}))));
  s.push_back(
      kernel_op("q8ta_conv2d_dw_pw_add",
                "int8 depthwise conv2d then a 1x1 conv2d + a residual int8 tensor, requantized",
                arg_list(dw_pw, residual_add_args("conv_", {k4W4C}, k4W4C, dw_pw.size()))));
  // A 1x1 q8ta_conv2d expansion (weight [C, C_in, 1, 1]) whose int8 output only the depthwise
  // reads, then q8ta_conv2d_dw_pw[_add] (an inverted-residual block; runtime/ops/
  // DepthwisePointwise.h): the expansion's arguments between the input's and the depthwise's.
  const std::vector<ArgSchema> pw_dw_pw = arg_list(
      tensor_in("input", i8x4, {k4W4C}, {k4W4C}), per_tensor_qparams("input_"),
      per_channel_weights(4, "expand_"), per_tensor_qparams("expand_"),
      scalar("expand_activation_min", ArgKind::Int), scalar("expand_activation_max", ArgKind::Int),
      std::vector<ArgSchema>(dw_pw.begin() + 3, dw_pw.end()));
  s.push_back(kernel_op("q8ta_conv2d_pw_dw_pw",
                        "int8 1x1 expansion, depthwise conv2d and 1x1 conv2d in one kernel",
                        arg_list(pw_dw_pw, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", i8x4, {k4W4C}, {k4W4C}))));
  s.push_back(kernel_op(
      "q8ta_conv2d_pw_dw_pw_add",
      "int8 1x1 expansion, depthwise and 1x1 conv2d + a residual int8 tensor, requantized",
      arg_list(pw_dw_pw, residual_add_args("conv_", {k4W4C}, k4W4C, pw_dw_pw.size()))));
}

}  // namespace vkd::schema
