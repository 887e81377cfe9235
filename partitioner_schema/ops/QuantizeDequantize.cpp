// The schema entries of runtime/ops/QuantizeDequantize.cpp's ops: q8ta_quantize,
// q8ta_dequantize.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor.
void quantize_dequantize_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet any_float = PlacementSet::all_float(), int8 = PlacementSet::all_int8();
  s.push_back(
      kernel_op("q8ta_quantize", "float32 -> int8x4, per-tensor affine",
                arg_list(tensor_in("input", f32, any_float, {kBufW}), per_tensor_qparams(""),
                         quant_range(), tensor_out("output", i8x4, int8, {k4W4C}))));
  s.push_back(kernel_op("q8ta_dequantize", "int8x4 -> float32, per-tensor affine",
                        arg_list(tensor_in("input", i8x4, int8, {k4W4C}), per_tensor_qparams(""),
                                 quant_range(), tensor_out("output", f32, any_float, {kBufW}))));
}

}  // namespace vkd::schema
