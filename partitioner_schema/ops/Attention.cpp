// The schema entries of runtime/ops/Attention.cpp's ops: q8ta_attention,
// q8ta_attention_mask_affine, their _qkv forms, attention.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// Scaled dot-product attention of int8 Q, K, V [B, T, H*D] (the linears' 4H4W output; the heads
// are column blocks) with a float32 additive mask [Bm, 1, Lm, Tk] (Bm 1 or B, Lm 1 or Tq),
// requantized into an int8 [B, Tq, H*D] (runtime/ops/Attention.h).
void attention_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> f32 = {DType::Float32}, i8x4 = {DType::Int8x4};
  const auto int8_attention = [&](const char* name, const char* summary, bool mask_affine,
                                  bool columns) {
    std::vector<ArgSchema> made_mask;
    if (mask_affine) {
      made_mask = {
          scalar("mask_multiplier_0", ArgKind::Float), scalar("mask_addend_0", ArgKind::Float),
          scalar("mask_multiplier_1", ArgKind::Float), scalar("mask_addend_1", ArgKind::Float)};
    }
    // The column form reads Q, K and V as the three column blocks of one [B, T, 3 H*D] tensor
    // (q8ta_linear_qkv's output), each block with its own parameters.
    const std::vector<ArgSchema> operands =
        columns ? arg_list(tensor_in("qkv", i8x4, {k4H4W}), per_tensor_qparams("query_"),
                           per_tensor_qparams("key_"), per_tensor_qparams("value_"))
                : arg_list(tensor_in("query", i8x4, {k4H4W}), per_tensor_qparams("query_"),
                           tensor_in("key", i8x4, {k4H4W}), per_tensor_qparams("key_"),
                           tensor_in("value", i8x4, {k4H4W}), per_tensor_qparams("value_"));
    s.push_back(
        kernel_op(name, summary,
                  arg_list(operands, tensor_in("mask", f32, {kBufW}, {kBufW}), made_mask,
                           scalar("num_heads", ArgKind::Int), scalar("scale", ArgKind::Float),
                           scalar("is_causal", ArgKind::Bool), per_tensor_qparams("output_"),
                           tensor_out("output", i8x4, {k4H4W}, {k4H4W}))));
  };
  int8_attention("q8ta_attention",
                 "int8 scaled dot-product attention over heads of columns, requantized", false,
                 false);
  int8_attention("q8ta_attention_qkv", "q8ta_attention of Q, K, V as column blocks of one tensor",
                 false, true);
  // The same adding the mask it makes from the one it reads: (mask * multiplier_0 + addend_0) *
  // multiplier_1 + addend_1, each step rounded to float32 (aten.rsub.Scalar, aten.mul.Scalar:
  // BERT's additive mask from the 0/1 token mask, in the kernel instead of two dispatches).
  int8_attention("q8ta_attention_mask_affine",
                 "q8ta_attention adding (mask * a0 + b0) * a1 + b1 of the mask it reads", true,
                 false);
  int8_attention("q8ta_attention_mask_affine_qkv",
                 "q8ta_attention_mask_affine of Q, K, V as column blocks of one tensor", true,
                 true);
  // The same on float32 Q, K, V and output (a float attention between float linears).
  s.push_back(kernel_op(
      "attention", "float32 scaled dot-product attention over heads of columns",
      arg_list(tensor_in("query", f32, {kBufW}, {kBufW}), tensor_in("key", f32, {kBufW}, {kBufW}),
               tensor_in("value", f32, {kBufW}, {kBufW}), tensor_in("mask", f32, {kBufW}, {kBufW}),
               scalar("num_heads", ArgKind::Int), scalar("scale", ArgKind::Float),
               scalar("is_causal", ArgKind::Bool), tensor_out("output", f32, {kBufW}, {kBufW}))));
}

}  // namespace vkd::schema
