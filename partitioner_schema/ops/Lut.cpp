// The schema entries of runtime/ops/Lut.cpp's ops: q8ta_lut.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// An element-wise function of one int8 tensor between fixed quantizations (the smooth
// activations: hardswish, sigmoid, gelu, ...): the compiler computes its 256 outputs into an
// int8 table [256] (entry v + 128 for input v), the kernel looks them up; any layout (the output
// shares the input's).
void lut_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  ArgSchema table = constant_in("table", DType::Int8);
  table.constant_rank = 1;
  s.push_back(kernel_op(
      "q8ta_lut", "int8 -> int8 by a 256-entry table (a smooth activation)",
      arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"), table,
               per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, int8), 0))));
}

}  // namespace vkd::schema
