// The schema entries of runtime/ops/LayerNorm.cpp's ops: q8ta_layer_norm, q8ta_layer_norm_dq, the
// float layer_norm, and its quantized forms layer_norm_q and layer_norm_dual.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// Layer normalization over the last dim, times `weight` plus `bias` (float32 constants of the
// last dim's length: the compiler writes ones / zeros for a LayerNorm without them), `eps` added
// to the variance. An int8 input in any packed layout (the kernel reads each: no conversion
// before it), requantized into the input's layout or float32 out (_dq, any float buffer); or a
// float32 input from any float buffer, written float32 (layer_norm), quantized into any packed
// int8 layout (layer_norm_q: what layer_norm then q8ta_quantize write, over the full int8 range),
// or both at once (layer_norm_dual: `output` float32, `output_q` its quantization).
void layer_norm_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet int8 = PlacementSet::all_int8(), floats = PlacementSet::float_buffers();
  ArgSchema weight = constant_in("weight", DType::Float32);
  weight.constant_rank = 1;
  ArgSchema bias = constant_in("bias", DType::Float32);
  bias.constant_rank = 1;
  const std::vector<ArgSchema> affine = arg_list(weight, bias, scalar("eps", ArgKind::Float));
  const std::vector<ArgSchema> int8_in =
      arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"), affine);
  const std::vector<ArgSchema> float_in =
      arg_list(tensor_in("input", f32, floats, {kBufW}), affine);
  s.push_back(kernel_op(
      "q8ta_layer_norm", "int8 layer norm over the last dim, requantized",
      arg_list(int8_in, per_tensor_qparams("output_"), tied(tensor_out("output", i8x4, int8), 0))));
  s.push_back(kernel_op("q8ta_layer_norm_dq", "int8 layer norm over the last dim, float32 output",
                        arg_list(int8_in, tensor_out("output", f32, floats, {kBufW}))));
  s.push_back(kernel_op("layer_norm", "float32 layer norm over the last dim",
                        arg_list(float_in, tensor_out("output", f32, floats, {kBufW}))));
  // The int8 output prefers 4H4W, the linear's input layout (a transformer's layer norms feed
  // linears).
  s.push_back(kernel_op("layer_norm_q", "float32 layer norm over the last dim, quantized to int8",
                        arg_list(float_in, per_tensor_qparams("output_"),
                                 tensor_out("output", i8x4, int8, {k4H4W}))));
  s.push_back(kernel_op(
      "layer_norm_dual", "float32 layer norm over the last dim, float32 and quantized outputs",
      arg_list(float_in, per_tensor_qparams("output_"), tensor_out("output", f32, floats, {kBufW}),
               tensor_out("output_q", i8x4, int8, {k4H4W}))));
}

}  // namespace vkd::schema
