// aten.embedding: rows of a table gathered by token ids (BERT's word, position and token type
// embeddings, a ViT's position table). Float32 or int8 tables; the ids are int32 (an int64
// graph input of ids is narrowed at the API: Value::caller_int64).
#include "compiler/ops/EdgeOp.h"

#include <string>
#include <vector>

#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of aten.embedding(weight [V, C], indices [...]): out[..., c] =
// weight[indices[...], c], of weight's dtype (float32 or int8: a copy, bit-exact) and shape
// indices.shape + [C]. padding_idx, scale_grad_by_freq and sparse only change the gradient:
// ignored. An index outside [0, V) is an error naming the node, the index's position and value.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

std::vector<HostTensor> reference_embedding(const ReferenceContext& c) {
  const HostTensor& weight = c.input(0, "weight");
  const HostTensor& indices = c.input(1, "indices");
  c.require(weight.dtype == DType::Float32 || weight.dtype == DType::Int8,
            "weight must be float32 or int8");
  c.expect_dtype(indices, DType::Int32, "indices");
  c.require(weight.shape.size() == 2, "weight must be 2-D [V, C]");
  const int64_t rows = weight.shape[0], cols = weight.shape[1];
  std::vector<int64_t> shape = indices.shape;
  shape.push_back(cols);
  HostTensor out = make_tensor(weight.dtype, shape);
  const size_t row_bytes = static_cast<size_t>(cols) * elem_bytes(weight.dtype);
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t id = get_i32(indices, i);
    c.require(id >= 0 && id < rows, "indices element " + std::to_string(i) + " is " +
                                        std::to_string(id) + ", outside the table's [0, " +
                                        std::to_string(rows) + ")");
    std::copy_n(weight.bytes.begin() + static_cast<int64_t>(row_bytes) * id, row_bytes,
                out.bytes.begin() + static_cast<int64_t>(row_bytes) * i);
  }
  return {out};
}

namespace {

// weight: float32 or int8 [V, C]; indices: int32 of any rank up to 3 -> weight's dtype,
// indices.shape + [C].
std::vector<TypedShape> embedding(const ShapeContext& c) {
  const Value& weight = c.in("weight");
  const Value& indices = c.in("indices");
  if (weight.dtype != DType::Float32 && weight.dtype != DType::Int8) {
    c.fail(c.input_field("weight"), "expected float32 or int8, got ", to_string(weight.dtype));
  }
  c.rank(weight, "weight", 2);
  c.dtype(indices, "indices", DType::Int32);
  std::vector<int64_t> shape = indices.shape;
  shape.push_back(weight.shape[1]);
  return {{weight.dtype, shape}};
}

}  // namespace

std::vector<EdgeOp> embedding_edge_ops() {
  return {EdgeOp{"aten.embedding",
                 {"weight", "indices"},
                 2,
                 {optional_arg("padding_idx", Lit::Int, ArgValue(int64_t{-1}), false),
                  optional_arg("scale_grad_by_freq", Lit::Bool, ArgValue(false), false),
                  optional_arg("sparse", Lit::Bool, ArgValue(false), false)},
                 1,
                 embedding}
              .computed_by(reference_embedding)};
}

}  // namespace vkd::compiler
