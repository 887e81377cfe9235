// The schema entries of runtime/ops/Reduce.cpp's ops: float_sum and float_vector_norm, the
// reductions of a sentence embedding's pooling (masked sum over tokens, F.normalize's norm).
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// float32 in and out, any float buffers; `dim` the reduced dim of the input (0 .. rank - 1),
// which the output keeps as size 1 or drops (its shape says which).
void reduce_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32};
  const PlacementSet floats = PlacementSet::float_buffers();
  auto reduction = [&](const char* name, const char* summary) {
    return kernel_op(name, summary,
                     arg_list(tensor_in("input", f32, floats, {kBufW}), scalar("dim", ArgKind::Int),
                              tensor_out("output", f32, floats, {kBufW})));
  };
  s.push_back(reduction("float_sum", "float32 sum over one dim, in order along it"));
  s.push_back(reduction("float_vector_norm", "float32 2-norm over one dim, in order along it"));
}

}  // namespace vkd::schema
