// The schema entries of runtime/ops/Pool.cpp's ops: q8ta_max_pool2d, q8ta_avg_pool2d,
// q8ta_adaptive_avg_pool2d, q8ta_mean, q8ta_mean_flat.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

void pool_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet chw_int8 = PlacementSet::channels_packed_int8();
  // The max of the int8 values; requantized once (full int8 range) when the qparams differ.
  s.push_back(kernel_op(
      "q8ta_max_pool2d", "int8 max_pool2d (the max, requantized when the qparams differ)",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               scalar("kernel_size", ArgKind::IntList), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("dilation", ArgKind::IntList),
               scalar("ceil_mode", ArgKind::Bool), per_tensor_qparams("output_"),
               tied(tensor_out("output", i8x4, chw_int8), 0))));
  s.push_back(kernel_op(
      "q8ta_avg_pool2d", "int8 avg_pool2d (int32 sums), requantized",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               scalar("kernel_size", ArgKind::IntList), scalar("stride", ArgKind::IntList),
               scalar("padding", ArgKind::IntList), scalar("ceil_mode", ArgKind::Bool),
               scalar("count_include_pad", ArgKind::Bool),
               scalar("divisor_override", ArgKind::Int),  // 0: none
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, chw_int8), 0))));
  // Output sizes are the output tensor's.
  s.push_back(kernel_op(
      "q8ta_adaptive_avg_pool2d", "int8 adaptive_avg_pool2d to any size (int32 sums), requantized",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, chw_int8), 0))));
  s.push_back(kernel_op(
      "q8ta_mean", "int8 mean over H and W (keepdim), requantized",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, chw_int8), 0))));
  // keepdim = False (or a flatten folded into the mean): [N, C] rows in the q8ta_linear input
  // layout, so a classifier head's pooled features go into the linear as they are.
  s.push_back(kernel_op(
      "q8ta_mean_flat", "int8 mean over H and W into [N, C] rows, requantized",
      arg_list(tensor_in("input", i8x4, chw_int8, {k4W4C}), per_tensor_qparams("input_"),
               per_tensor_qparams("output_"), tensor_out("output", i8x4, {k4H4W}, {k4H4W}))));
}

}  // namespace vkd::schema
