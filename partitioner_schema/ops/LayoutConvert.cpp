// The schema entries of runtime/ops/LayoutConvert.cpp's ops: q8ta_convert, q8ta_view,
// float_convert; and identity, which needs no builder (the compiler folds it away).
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// Storage / layout conversions, inserted by the compiler's layout propagation, and the
// identity the compiler emits for a free copy or view.
void layout_convert_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet any_float = PlacementSet::all_float(), int8 = PlacementSet::all_int8();
  s.push_back(kernel_op("q8ta_convert", "int8x4 layout conversion (inserted by the compiler)",
                        arg_list(tensor_in("input", i8x4, int8), scalar("zero_point", ArgKind::Int),
                                 tensor_out("output", i8x4, int8))));
  // A reshape of int8 data (view_copy / flatten / squeeze / unsqueeze) that is not free: the
  // elements in NCHW order under other sizes, in any layout on either side.
  s.push_back(kernel_op("q8ta_view", "int8x4 reshape: same elements in NCHW order, other sizes",
                        arg_list(tensor_in("input", i8x4, int8), scalar("zero_point", ArgKind::Int),
                                 tensor_out("output", i8x4, int8))));
  s.push_back(kernel_op(
      "float_convert", "float32 storage/layout conversion (inserted by the compiler)",
      arg_list(tensor_in("input", f32, any_float), tensor_out("output", f32, any_float))));
  // clone / alias / view keeping the packed dim: copied as is, always folded.
  const std::vector<DType> moved = {DType::Float32, DType::Float16, DType::Int8x4};
  const PlacementSet anywhere = PlacementSet::all_float() | PlacementSet::all_int8();
  s.push_back(identity_op("identity", "clone/alias/view_copy: output shares the input's layout",
                          arg_list(tensor_in("input", moved, anywhere),
                                   tied(tensor_out("output", moved, anywhere), 0))));
}

}  // namespace vkd::schema
