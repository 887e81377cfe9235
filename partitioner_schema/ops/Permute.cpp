// The schema entries of runtime/ops/Permute.cpp's ops: q8ta_channel_shuffle, q8ta_permute.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// Data movement of int8 data: a channel shuffle (any layout, the output shares the input's)
// and a permute of the 4 dims (any layout on either side). Both move bytes when input and
// output share scale and zero point, else requantize each element (full int8 range).
void permute_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8();
  s.push_back(kernel_op("q8ta_channel_shuffle",
                        "int8 channel shuffle: out channel c = in channel (c % g) * C/g + c / g",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 scalar("groups", ArgKind::Int), per_tensor_qparams("output_"),
                                 tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(kernel_op("q8ta_permute", "int8 permute of the 4 dims (output dim k = input dims[k])",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 scalar("dims", ArgKind::IntList), per_tensor_qparams("output_"),
                                 tensor_out("output", i8x4, int8))));
}

}  // namespace vkd::schema
