// The schema entries of runtime/ops/AffineQuant.cpp's ops: q8ta_quantize_affine,
// q8ta_dequantize_affine, choose_qparams_affine.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// torchao affine ops (runtime/ops/AffineQuant.h): per-block scale (float32) / zero point
// (int32) buffers, one entry per block; block_size in the input's rank. The int8 side prefers
// 4H4W, the linear input layout (per-token / per-group-along-K activations feed linears).
void affine_quant_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i32 = {DType::Int32}, i8x4 = {DType::Int8x4};
  const PlacementSet any_float = PlacementSet::all_float(), int8 = PlacementSet::all_int8();
  const PlacementSet f32_buffer{kBufW};
  const std::vector<ArgSchema> block_params =
      arg_list(tensor_in("scale", f32, f32_buffer), tensor_in("zero_point", i32, f32_buffer),
               scalar("block_size", ArgKind::IntList), quant_range());
  s.push_back(kernel_op("q8ta_quantize_affine",
                        "float32 -> int8x4, torchao quantize_affine (block-wise)",
                        arg_list(tensor_in("input", f32, any_float, {kBufW}), block_params,
                                 tensor_out("output", i8x4, int8, {k4H4W}))));
  s.push_back(kernel_op("q8ta_dequantize_affine",
                        "int8x4 -> float32, torchao dequantize_affine (block-wise)",
                        arg_list(tensor_in("input", i8x4, int8, {k4H4W}), block_params,
                                 tensor_out("output", f32, any_float, {kBufW}))));
  s.push_back(kernel_op(
      "choose_qparams_affine", "per-block scale / zero point, torchao choose_qparams_affine",
      arg_list(tensor_in("input", f32, any_float, {kBufW}),
               // 0 SYMMETRIC, 1 SYMMETRIC_NO_CLIPPING_ERR, 2 ASYMMETRIC
               scalar("mapping_type", ArgKind::Int), scalar("block_size", ArgKind::IntList),
               quant_range(), scalar("eps", ArgKind::Float), tensor_out("scale", f32, f32_buffer),
               tensor_out("zero_point", i32, f32_buffer))));
}

}  // namespace vkd::schema
