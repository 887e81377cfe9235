// The schema entries of runtime/ops/Linear.cpp's ops: q8ta_linear, q8ta_linear_dq,
// q8ta_linear_add, q8ta_linear_dq_add, q8ta_linear_gelu, q8ta_linear_qkv, q8da_linear,
// q8csw_linear.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// int8 linear: the requantizing op (fused activation) and the dequantizing one (_dq).
void linear_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const std::vector<ArgSchema> head = arg_list(
      tensor_in("input", i8x4, {k4H4W}), per_tensor_qparams("input_"), per_channel_weights(2));
  s.push_back(kernel_op("q8ta_linear", "int8 linear, requantized output (GEMM / GEMV kernels)",
                        arg_list(head, per_tensor_qparams("output_"), activation_range(),
                                 tensor_out("output", i8x4, {k4H4W}, {k4H4W}))));
  s.push_back(kernel_op("q8ta_linear_dq", "int8 linear, float32 output (GEMM / GEMV kernels)",
                        arg_list(head, tensor_out("output", f32, {kBufW}, {kBufW}))));
  // q8ta_linear then q8ta_add with `other`, in the linear's store (runtime/ops/Linear.h).
  s.push_back(kernel_op("q8ta_linear_add", "int8 linear + a residual int8 tensor, requantized",
                        arg_list(head, residual_add_args("linear_", {k4H4W}, k4H4W, head.size()))));
  // q8ta_linear_dq then float_add (alpha 1) with a float32 `other` of the output's sizes, in the
  // linear's store.
  const int other = static_cast<int>(head.size());
  s.push_back(kernel_op("q8ta_linear_dq_add", "int8 linear, float32 output + a float32 residual",
                        arg_list(head, tensor_in("other", f32, {kBufW}, {kBufW}),
                                 tied(tensor_out("output", f32, {kBufW}, {kBufW}), other))));
  // q8ta_linear with GELU (approximate 0: erf, 1: tanh) before the output quantize.
  s.push_back(kernel_op(
      "q8ta_linear_gelu", "int8 linear, GELU, requantized output",
      arg_list(head, per_tensor_qparams("output_"), activation_range(),
               scalar("approximate", ArgKind::Int), tensor_out("output", i8x4, {k4H4W}, {k4H4W}))));
  // Q, K and V projections of one input as one GEMM: weights [3 C, K] (q's rows, then k's, then
  // v's), the output [..., 3 C] whose three column blocks of C (a multiple of 4) are requantized
  // each with its own parameters (LinearParams::output_blocks), no activation range.
  s.push_back(kernel_op(
      "q8ta_linear_qkv", "int8 linear into three column blocks, each with its own qparams",
      arg_list(head, per_tensor_qparams("q_"), per_tensor_qparams("k_"), per_tensor_qparams("v_"),
               tensor_out("output", i8x4, {k4H4W}, {k4H4W}))));
  // Float activations: quantized per row at run time (torchao's int8 dynamic activation), or
  // multiplied in float with the int8 weights (weight-only int8).
  const std::vector<ArgSchema> float_head =
      arg_list(tensor_in("input", f32, {kBufW}), per_channel_weights(2));
  s.push_back(kernel_op("q8da_linear",
                        "float linear, activations quantized per row at run time (int8 GEMM)",
                        arg_list(float_head, quant_range(), scalar("eps", ArgKind::Float),
                                 tensor_out("output", f32, {kBufW}, {kBufW}))));
  s.push_back(kernel_op("q8csw_linear", "float linear with int8 per-channel weights",
                        arg_list(float_head, tensor_out("output", f32, {kBufW}, {kBufW}))));
}

}  // namespace vkd::schema
