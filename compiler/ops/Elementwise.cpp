// aten.add.Tensor, aten.mul.Tensor, aten.mul.Scalar and the activations aten.relu,
// aten.hardtanh, aten.clamp.
#include "compiler/ops/EdgeOp.h"

#include <optional>

#include "compiler/ops/ShapeContext.h"
#include "compiler/ops/ShapeFormulas.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Elementwise.cpp.
std::vector<HostTensor> reference_add(const ReferenceContext& c);
std::vector<HostTensor> reference_mul(const ReferenceContext& c);
std::vector<HostTensor> reference_mul_scalar(const ReferenceContext& c);
std::vector<HostTensor> reference_relu(const ReferenceContext& c);
std::vector<HostTensor> reference_hardtanh(const ReferenceContext& c);
std::vector<HostTensor> reference_clamp(const ReferenceContext& c);

// The fusion pattern and direct lowerings these ops use, defined in compiler/fusion/.
namespace fusion {
// dq, dq -> aten.add.Tensor [-> act] -> q => q8ta_add.
void fuse_add(FuseState& state, int anchor);
// dq, dq -> aten.mul.Tensor [-> act] -> q => q8ta_mul; with one operand a one-element constant,
// dq -> mul [-> act] -> q => q8ta_mul_scalar.
void fuse_mul(FuseState& state, int anchor);
// dq -> aten.mul.Scalar [-> act] -> q => q8ta_mul_scalar.
void fuse_mul_scalar(FuseState& state, int anchor);
// dq -> relu | hardtanh | clamp [-> act] -> q => the epilogue of the fused int8 op before it,
// else q8ta_clamp.
void fuse_activation(FuseState& state, int anchor);
std::string lower_relu(FuseState& state, Node& node, int where);   // -> relu
std::string lower_clamp(FuseState& state, Node& node, int where);  // hardtanh, clamp
}  // namespace fusion

namespace {

// Two float32 tensors that broadcast.
std::vector<TypedShape> binary_float(const ShapeContext& c) {
  const Value& a = c.in("self");
  const Value& b = c.in("other");
  c.dtype(a, "self", DType::Float32);
  c.dtype(b, "other", DType::Float32);
  std::vector<int64_t> out;
  if (!broadcast_shapes(a.shape, b.shape, &out)) {
    c.fail(c.input_field("other"), "shape ", shape_str(b.shape),
           " does not broadcast with self shape ", shape_str(a.shape));
  }
  return {{DType::Float32, out}};
}

std::vector<TypedShape> add(const ShapeContext& c) {
  if (c.node().args.count("alpha") != 0) (void)c.f64("alpha");
  return binary_float(c);
}

std::vector<TypedShape> mul_scalar(const ShapeContext& c) {
  (void)c.f64("other");
  return unary_float_shape(c);
}

std::vector<TypedShape> hardtanh(const ShapeContext& c) {
  std::vector<TypedShape> out = unary_float_shape(c);
  const double lo = c.opt_f64("min_val").value_or(-1.0);
  const double hi = c.opt_f64("max_val").value_or(1.0);
  if (!(lo <= hi)) {
    c.fail(c.arg_field("min_val"), "min_val ", lo, " is greater than max_val ", hi);
  }
  return out;
}

std::vector<TypedShape> clamp(const ShapeContext& c) {
  std::vector<TypedShape> out = unary_float_shape(c);
  const std::optional<double> lo = c.opt_f64("min");
  const std::optional<double> hi = c.opt_f64("max");
  if (!lo && !hi) c.fail("arguments 'min'/'max'", "at least one of min and max must not be None");
  return out;
}

// What a standalone activation becomes: the requantizing epilogue of the int8 op before it, or
// its own requantizing kernel.
const std::vector<std::string> kStandaloneActOps = {
    "q8ta_conv2d", "q8ta_conv2d_ps", "q8ta_conv2d_add", "q8ta_linear", "q8ta_linear_add",
    "q8ta_add",    "q8ta_mul",       "q8ta_batch_norm", "q8ta_clamp"};

}  // namespace

std::vector<EdgeOp> elementwise_edge_ops() {
  return {
      EdgeOp{"aten.add.Tensor",
             {"self", "other"},
             2,
             {optional_arg("alpha", Lit::Number, ArgValue(int64_t{1}), false)},
             1,
             add}
          .computed_by(reference_add)
          .fused_by(fusion::fuse_add, {"q8ta_add", "q8ta_conv2d_add", "q8ta_linear_add"}),
      EdgeOp{"aten.mul.Tensor", {"self", "other"}, 2, {}, 1, binary_float}
          .computed_by(reference_mul)
          .fused_by(fusion::fuse_mul, {"q8ta_mul", "q8ta_mul_scalar"}),
      EdgeOp{"aten.mul.Scalar", {"self"}, 1, {required_arg("other", Lit::Number)}, 1, mul_scalar}
          .computed_by(reference_mul_scalar)
          .fused_by(fusion::fuse_mul_scalar, {"q8ta_mul_scalar"}),
      EdgeOp{"aten.relu", {"self"}, 1, {}, 1, unary_float_shape}
          .computed_by(reference_relu)
          .fused_by(fusion::fuse_activation, kStandaloneActOps)
          .lowered_by(fusion::lower_relu, {"relu"}),
      EdgeOp{"aten.hardtanh",
             {"self"},
             1,
             {optional_arg("min_val", Lit::Number, ArgValue(-1.0), false),
              optional_arg("max_val", Lit::Number, ArgValue(1.0), false)},
             1,
             hardtanh}
          .computed_by(reference_hardtanh)
          .fused_by(fusion::fuse_activation, kStandaloneActOps)
          .lowered_by(fusion::lower_clamp, {"clamp"}),
      EdgeOp{"aten.clamp",
             {"self"},
             1,
             {optional_arg("min", Lit::Number), optional_arg("max", Lit::Number)},
             1,
             clamp}
          .computed_by(reference_clamp)
          .fused_by(fusion::fuse_activation, kStandaloneActOps)
          .lowered_by(fusion::lower_clamp, {"clamp"}),
  };
}

}  // namespace vkd::compiler
