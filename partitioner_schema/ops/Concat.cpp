// The schema entries of runtime/ops/Concat.cpp's ops: q8ta_cat, q8ta_slice.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// aten.cat and what split / chunk / slice_copy become: int8 data moved along one dim, each
// input requantized where its quantization differs from the output's (one kernel, q8ta_cat);
// any layout, shared by inputs and output.
void concat_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  s.push_back(kernel_op(
      "q8ta_cat", "int8 concatenation along one dim, requantizing",
      arg_list(tensor_list_in("inputs", i8x4, int8), scalar("input_scales", ArgKind::FloatList),
               scalar("input_zero_points", ArgKind::IntList), scalar("dim", ArgKind::Int),
               per_tensor_qparams("output_"), quant_range(),
               tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(kernel_op("q8ta_slice", "int8 slice (start, step) along one dim, requantizing",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 scalar("dim", ArgKind::Int), scalar("start", ArgKind::Int),
                                 scalar("step", ArgKind::Int), per_tensor_qparams("output_"),
                                 quant_range(), tied(tensor_out("output", i8x4, int8), 0))));
}

}  // namespace vkd::schema
