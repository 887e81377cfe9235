// aten.to.dtype (to float32) and aten.expand_as: the dtype conversion and the broadcast that
// sentence-embedding pooling exports (`mask.to(h.dtype)`, F.normalize's divisor). A float32
// expand_as of rank 1 to 4 is a broadcast copy, float_affine_scalar x * 1 + -0.0 (exact: it
// leaves every value as it is); the rest stays on the host, which runs their CPU references.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compiler/fusion/Lowering.h"
#include "compiler/ops/EdgeOp.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/ops/ShapeFormulas.h"
#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

// aten.to.dtype(self, dtype, non_blocking, copy, memory_format) to float32: a float32 input is
//   copied unchanged; an int8 / int32 input is converted value by value (exact for int8, the
//   nearest float32, ties to even, for int32, as PyTorch's cast). Other target dtypes: refused.
std::vector<HostTensor> reference_to_dtype(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  c.require(c.dtype_arg("dtype") == DType::Float32, "only a conversion to float32 is supported");
  if (x.dtype == DType::Float32) return {x};
  c.require(x.dtype == DType::Int8 || x.dtype == DType::Int32,
            detail::concat("converting ", to_string(x.dtype), " to float32 is not supported"));
  HostTensor out = make_tensor(DType::Float32, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) set_f32(out, i, static_cast<float>(get_int(x, i)));
  return {out};
}

// aten.expand_as(self, other): self broadcast (numpy rules, right-aligned; only size-1 dims grow)
//   to other's shape, its elements repeated; other's values are not read.
std::vector<HostTensor> reference_expand_as(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "self");
  const std::vector<int64_t>& shape = c.input(1, "other").shape;
  const size_t rank = shape.size();
  c.require(x.shape.size() <= rank,
            detail::concat("shape ", shape_str(x.shape), " does not expand to ", shape_str(shape)));
  std::vector<int64_t> strides(rank, 0);
  int64_t s = 1;
  for (size_t k = 0; k < x.shape.size(); ++k) {
    const size_t din = x.shape.size() - 1 - k, dout = rank - 1 - k;
    c.require(
        x.shape[din] == shape[dout] || x.shape[din] == 1,
        detail::concat("shape ", shape_str(x.shape), " does not expand to ", shape_str(shape)));
    strides[dout] = x.shape[din] == 1 ? 0 : s;
    s *= x.shape[din];
  }
  HostTensor out = make_tensor(x.dtype, shape);
  const size_t bytes = elem_bytes(x.dtype);
  c.require(bytes != 0, detail::concat("expand_as of ", to_string(x.dtype)));
  strided_loop(shape, {strides}, [&](int64_t i, const std::vector<int64_t>& off) {
    std::memcpy(out.bytes.data() + static_cast<size_t>(i) * bytes,
                x.bytes.data() + static_cast<size_t>(off[0]) * bytes, bytes);
  });
  return {out};
}

}  // namespace vkd::compiler

namespace vkd::compiler::fusion {

// aten.expand_as of a float32 tensor into one of rank 1 to 4: the broadcast copy (the shape rule
// checked that it broadcasts); "" otherwise (the host).
std::string lower_expand_as(FuseState& state, Node& node, int where) {
  if (node.inputs.empty() || node.outputs.size() != 1) return "";
  const Value& x = state.graph.value(node.inputs[0]);
  const Value& y = state.graph.value(node.outputs[0]);
  if (!is_float32(&x) || x.shape.empty() || y.shape.empty() || y.shape.size() > 4) return "";
  return rewrite_unary(state, node, where, "float_affine_scalar",
                       {{"multiplier", 1.0}, {"addend", -0.0}});
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

namespace {

// A float32, int32 or int8 'self' converted to 'dtype' float32: float32 of its shape.
std::vector<TypedShape> to_dtype(const ShapeContext& c) {
  const Value& x = c.in("self");
  const std::string dtype = c.str("dtype");
  if (parse_dtype(dtype) != DType::Float32) {
    c.fail(ShapeContext::arg_field("dtype"), dtype, " is not supported (only float32)");
  }
  if (x.dtype != DType::Int8 && x.dtype != DType::Int32) c.dtype(x, "self", DType::Float32);
  (void)c.flag_or("non_blocking", false);
  (void)c.flag_or("copy", false);
  if (arg_present(c.node(), "memory_format")) (void)c.opt_str("memory_format");
  return {{DType::Float32, x.shape}};
}

// 'self' whose shape broadcasts to 'other''s: self's dtype, other's shape.
std::vector<TypedShape> expand_as(const ShapeContext& c) {
  const Value& x = c.in("self");
  const Value& other = c.in("other");
  std::vector<int64_t> out;
  if (!broadcast_shapes(x.shape, other.shape, &out) || out != other.shape) {
    c.fail(c.input_field("self"), "shape ", shape_str(x.shape), " does not expand to ",
           shape_str(other.shape), " (input 'other')");
  }
  return {{x.dtype, other.shape}};
}

}  // namespace

std::vector<EdgeOp> convert_edge_ops() {
  return {
      EdgeOp{"aten.to.dtype",
             {"self"},
             1,
             {required_arg("dtype", Lit::String),
              optional_arg("non_blocking", Lit::Bool, ArgValue(false), false),
              optional_arg("copy", Lit::Bool, ArgValue(false), false),
              optional_arg("memory_format", Lit::String)},
             1,
             to_dtype}
          .computed_by(reference_to_dtype),
      EdgeOp{"aten.expand_as", {"self", "other"}, 2, {}, 1, expand_as}
          .computed_by(reference_expand_as)
          .lowered_by(fusion::lower_expand_as, {"float_affine_scalar"}),
  };
}

}  // namespace vkd::compiler
