// The schema entries of runtime/ops/Elementwise.cpp's ops: q8ta_add, q8ta_mul, q8ta_clamp,
// q8ta_mul_scalar, q8ta_batch_norm; and the float relu and clamp, schema only (no kernel yet).
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

void elementwise_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const PlacementSet any_float = PlacementSet::all_float(), int8 = PlacementSet::all_int8();
  // q8ta_add and q8ta_mul: the same arguments (one kernel family, q8ta_binary).
  auto binary = [&](const char* name, const char* summary) {
    return kernel_op(name, summary,
                     arg_list(tensor_in("a", i8x4, int8, {k4W4C}), per_tensor_qparams("a_"),
                              tied(tensor_in("b", i8x4, int8), 0), per_tensor_qparams("b_"),
                              per_tensor_qparams("output_"), activation_range(),
                              tied(tensor_out("output", i8x4, int8), 0)));
  };
  s.push_back(binary(
      "q8ta_add",
      "int8 add with own scales, fused relu; b (or a) may be [N or 1, C, 1, 1] or [1, 1, 1, 1]"));
  s.push_back(binary(
      "q8ta_mul",
      "int8 mul with own scales, fused relu; b (or a) may be [N or 1, C, 1, 1] or [1, 1, 1, 1]"));
  // A standalone relu / hardtanh / clamp between int8 ops that could not join the producer's
  // epilogue, a multiplication by a scalar, a batch norm: requantizing, any layout (the output
  // shares the input's).
  s.push_back(kernel_op("q8ta_clamp", "int8 requantizing relu / clamp (a standalone activation)",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 per_tensor_qparams("output_"), activation_range(),
                                 tied(tensor_out("output", i8x4, int8), 0))));
  // A multiplication by a constant scalar, requantizing (the q8ta_clamp kernel).
  s.push_back(kernel_op("q8ta_mul_scalar", "int8 requantizing multiplication by a scalar",
                        arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"),
                                 scalar("scalar", ArgKind::Float), per_tensor_qparams("output_"),
                                 activation_range(), tied(tensor_out("output", i8x4, int8), 0))));
  // A per-channel affine map, requantizing: an inference batch norm whose parameters the
  // compiler folded into one float32 scale and shift per channel (dim 1 of the 4-D input), y =
  // fma(x, scale_c, shift_c) rounded once as PyTorch's CPU kernel computes it (the q8ta_clamp
  // kernel's PER_CHANNEL variant).
  ArgSchema scale = constant_in("scale", DType::Float32);
  scale.constant_rank = 1;
  ArgSchema shift = constant_in("shift", DType::Float32);
  shift.constant_rank = 1;
  s.push_back(kernel_op(
      "q8ta_batch_norm",
      "int8 requantizing per-channel x * scale + shift (a standalone batch norm), fused relu",
      arg_list(tensor_in("input", i8x4, int8), per_tensor_qparams("input_"), scale, shift,
               per_tensor_qparams("output_"), activation_range(),
               tied(tensor_out("output", i8x4, int8), 0))));
  // The float relu and clamp / hardtanh: parsed and checked, no kernel yet.
  s.push_back(schema_only_op(
      "relu", "float relu",
      arg_list(tensor_in("input", f32, any_float), tied(tensor_out("output", f32, any_float), 0))));
  s.push_back(schema_only_op(
      "clamp", "float clamp / hardtanh",
      arg_list(tensor_in("input", f32, any_float), scalar("min", ArgKind::Float),
               scalar("max", ArgKind::Float), tied(tensor_out("output", f32, any_float), 0))));
}

}  // namespace vkd::schema
