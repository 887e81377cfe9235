// The schema entries of runtime/ops/Reduce.cpp's ops: float_sum and float_vector_norm, the
// reductions of a sentence embedding's pooling (masked sum over tokens, F.normalize's norm), and
// that whole pooling as one op (float_masked_mean / q8ta_masked_mean, [_normalize]).
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

  // Hidden states `input` [B, T, C] (float32 from any float buffer, or int8 in any packed layout
  // with its qparams) times `mask` [B, T] or [B, T, 1] (float32), summed over T, divided by the
  // mask's sum clamped to >= `mask_min`: [B, C] float32; _normalize then divides each row by
  // its 2-norm clamped to >= `eps` (F.normalize).
  const auto pooling = [&](const char* name, const char* summary, bool int8, bool normalize) {
    std::vector<ArgSchema> args =
        int8 ? arg_list(tensor_in("input", {DType::Int8x4}, PlacementSet::all_int8()),
                        per_tensor_qparams("input_"))
             : arg_list(tensor_in("input", f32, floats, {kBufW}));
    args =
        arg_list(args, tensor_in("mask", f32, floats, {kBufW}), scalar("mask_min", ArgKind::Float));
    if (normalize) args = arg_list(args, scalar("eps", ArgKind::Float));
    return kernel_op(name, summary, arg_list(args, tensor_out("output", f32, floats, {kBufW})));
  };
  s.push_back(
      pooling("float_masked_mean", "float32 mean over the tokens a mask keeps", false, false));
  s.push_back(pooling("float_masked_mean_normalize",
                      "float32 mean over the tokens a mask keeps, L2-normalised", false, true));
  s.push_back(pooling("q8ta_masked_mean", "int8 in, float32 mean over the tokens a mask keeps",
                      true, false));
  s.push_back(pooling("q8ta_masked_mean_normalize",
                      "int8 in, float32 mean over the tokens a mask keeps, L2-normalised", true,
                      true));
}

}  // namespace vkd::schema
