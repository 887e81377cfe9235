// The smooth activations: aten.hardswish, aten.hardsigmoid, aten.sigmoid, aten.tanh, aten.silu,
// aten.gelu, aten.elu, aten.leaky_relu. Between int8 tensors (dq -> op -> q) each becomes
// q8ta_lut: the 256 outputs are computed here, by the reference, and looked up on the GPU. A
// float one (no quantize after it) has no backend op and stays on the host.
#include "compiler/ops/EdgeOp.h"

#include <cmath>
#include <string>

#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Activation.cpp.
std::vector<HostTensor> reference_hardswish(const ReferenceContext& c);
std::vector<HostTensor> reference_hardsigmoid(const ReferenceContext& c);
std::vector<HostTensor> reference_sigmoid(const ReferenceContext& c);
std::vector<HostTensor> reference_tanh(const ReferenceContext& c);
std::vector<HostTensor> reference_silu(const ReferenceContext& c);
std::vector<HostTensor> reference_gelu(const ReferenceContext& c);
std::vector<HostTensor> reference_elu(const ReferenceContext& c);
std::vector<HostTensor> reference_leaky_relu(const ReferenceContext& c);

namespace fusion {
// dq -> op [-> relu | hardtanh | clamp] -> q => q8ta_lut (compiler/fusion/Lut.cpp).
void fuse_lut(FuseState& state, int anchor);
}  // namespace fusion

namespace {

std::vector<TypedShape> gelu(const ShapeContext& c) {
  c.str_in("approximate", {"none", "tanh"}, true);
  return unary_float_shape(c);
}

// Number arguments `names` (absent: their default) are finite.
void finite_args(const ShapeContext& c, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const double v = c.opt_f64(name).value_or(1.0);
    if (!std::isfinite(v)) {
      c.fail(ShapeContext::arg_field(name), "expected a finite value, got ", v);
    }
  }
}

std::vector<TypedShape> elu(const ShapeContext& c) {
  finite_args(c, {"alpha", "scale", "input_scale"});
  return unary_float_shape(c);
}

std::vector<TypedShape> leaky_relu(const ShapeContext& c) {
  finite_args(c, {"negative_slope"});
  return unary_float_shape(c);
}

// An activation of one float32 'self' with `args`, computed by `reference` and fused into
// q8ta_lut.
EdgeOp table_op(const char* name, std::vector<EdgeArg> args, ShapeRule rule,
                ReferenceFn reference) {
  return EdgeOp{name, {"self"}, 1, std::move(args), 1, rule}.computed_by(reference).fused_by(
      fusion::fuse_lut, {"q8ta_lut"});
}

EdgeArg number(const char* name, double def) {
  return optional_arg(name, Lit::Number, ArgValue(def), false);
}

}  // namespace

std::vector<EdgeOp> activation_edge_ops() {
  return {
      table_op("aten.hardswish", {}, unary_float_shape, reference_hardswish),
      table_op("aten.hardsigmoid", {}, unary_float_shape, reference_hardsigmoid),
      table_op("aten.sigmoid", {}, unary_float_shape, reference_sigmoid),
      table_op("aten.tanh", {}, unary_float_shape, reference_tanh),
      table_op("aten.silu", {}, unary_float_shape, reference_silu),
      table_op("aten.gelu",
               {optional_arg("approximate", Lit::String, ArgValue(std::string("none")), false)},
               gelu, reference_gelu),
      table_op("aten.elu", {number("alpha", 1.0), number("scale", 1.0), number("input_scale", 1.0)},
               elu, reference_elu),
      table_op("aten.leaky_relu", {number("negative_slope", 0.01)}, leaky_relu,
               reference_leaky_relu),
  };
}

}  // namespace vkd::compiler
