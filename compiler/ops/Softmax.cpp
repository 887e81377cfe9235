// aten._softmax / aten._log_softmax (core ATen, what the exporter writes) and aten.softmax.int /
// aten.log_softmax.int (torch.export before decomposition). On a dequantized int8 tensor, over
// its last dim, they become q8ta_softmax (followed by a quantize: int8 output) or
// q8ta_softmax_dq (float32 output).
#include "compiler/ops/EdgeOp.h"

#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU reference, defined (with its semantics) in compiler/reference/Softmax.cpp.
std::vector<HostTensor> reference_softmax(const ReferenceContext& c);

namespace fusion {
// dq -> softmax [-> q] over the last dim => q8ta_softmax / q8ta_softmax_dq
// (compiler/fusion/Softmax.cpp).
void fuse_softmax(FuseState& state, int anchor);
}  // namespace fusion

namespace {

// float32 'self' of rank >= 1, `dim` inside it; float32 of its shape. The core ATen form's
// half_to_float must be false and the .int form's dtype None (no conversion either way).
std::vector<TypedShape> softmax(const ShapeContext& c) {
  std::vector<TypedShape> out = unary_float_shape(c);
  const int64_t rank = static_cast<int64_t>(out[0].shape.size());
  const int64_t dim = c.i64("dim");
  if (rank == 0 || dim < -rank || dim >= rank) {
    c.fail(ShapeContext::arg_field("dim"), "expected a dim in [", -rank, ", ", rank, "), got ",
           dim);
  }
  if (c.flag_or("half_to_float", false)) {
    c.fail(ShapeContext::arg_field("half_to_float"), "must be false (the input is float32)");
  }
  if (c.opt_str("dtype")) c.fail(ShapeContext::arg_field("dtype"), "must be None");
  return out;
}

EdgeOp softmax_op(const char* name, EdgeArg conversion) {
  return EdgeOp{name, {"self"}, 1, {required_arg("dim", Lit::Int), conversion}, 1, softmax}
      .computed_by(reference_softmax)
      .fused_by(fusion::fuse_softmax, {"q8ta_softmax", "q8ta_softmax_dq"});
}

}  // namespace

std::vector<EdgeOp> softmax_edge_ops() {
  const EdgeArg half_to_float = optional_arg("half_to_float", Lit::Bool, ArgValue(false), false);
  const EdgeArg dtype = optional_arg("dtype", Lit::String);
  return {softmax_op("aten._softmax", half_to_float),
          softmax_op("aten._log_softmax", half_to_float), softmax_op("aten.softmax.int", dtype),
          softmax_op("aten.log_softmax.int", dtype)};
}

}  // namespace vkd::compiler
