// The schema entries of runtime/ops/Embedding.cpp's ops: q8ta_embedding, embedding,
// embedding_add.
#include "partitioner_schema/ops/SchemaBuilders.h"

namespace vkd::schema {

// Rows of a constant table [V, C] gathered by int32 token ids (aten.embedding): int8 rows into
// an int8 tensor [..., T, C] (the compiler quantized the table with the output's parameters,
// which is exact: quantize(W)[ids] = quantize(W[ids])), in 4H4W as linear and layer_norm read
// it; or float32 rows into a float32 buffer, plus (embedding_add) one or two float32 tensors of
// the output's trailing dims added in order (BERT's position and token type rows, constants).
void embedding_schemas(std::vector<OpSchema>& s) {
  const std::vector<DType> i32 = {DType::Int32};
  ArgSchema int8_table = constant_in("weight", DType::Int8);
  int8_table.constant_rank = 2;
  ArgSchema float_table = constant_in("weight", DType::Float32);
  float_table.constant_rank = 2;
  s.push_back(kernel_op(
      "q8ta_embedding", "int8 rows of a table gathered by token ids",
      arg_list(tensor_in("indices", i32, {kBufW}), int8_table, per_tensor_qparams("output_"),
               tensor_out("output", {DType::Int8x4}, {k4H4W}, {k4H4W}))));
  s.push_back(kernel_op("embedding", "float32 rows of a table gathered by token ids",
                        arg_list(tensor_in("indices", i32, {kBufW}), float_table,
                                 tensor_out("output", {DType::Float32}, {kBufW}, {kBufW}))));
  s.push_back(kernel_op("embedding_add",
                        "float32 rows of a table gathered by token ids + 1 or 2 float32 tensors",
                        arg_list(tensor_in("indices", i32, {kBufW}), float_table,
                                 tensor_list_in("addends", {DType::Float32}, {kBufW}),
                                 tensor_out("output", {DType::Float32}, {kBufW}, {kBufW}))));
}

}  // namespace vkd::schema
