// The schema entries of runtime/ops/Softmax.cpp's ops: q8ta_softmax, q8ta_softmax_dq.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// softmax / log_softmax (`log`) over the last dim of a dequantized int8 tensor (any layout):
// float32 out (_dq, any float buffer), or requantized into the input's layout.
void softmax_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  const std::vector<ArgSchema> head = arg_list(
      tensor_in("input", i8x4, int8), per_tensor_qparams("input_"), scalar("log", ArgKind::Bool));
  s.push_back(kernel_op(
      "q8ta_softmax", "int8 softmax / log_softmax over the last dim, requantized",
      arg_list(head, per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(
      kernel_op("q8ta_softmax_dq", "int8 softmax / log_softmax over the last dim, float32 output",
                arg_list(head, tensor_out("output", f32, PlacementSet::float_buffers(), {kBufW}))));
}

}  // namespace vkd::schema
