// The inference batch norm: aten.batch_norm (what FX's BatchNorm2d and F.batch_norm become) and
// aten._native_batch_norm_legit_no_training (the edge dialect's). A standalone one between int8
// tensors (after a concatenation, at the start of a pre-activation block: one FX did not fold
// into a convolution), dq -> batch norm [-> relu | hardtanh | clamp] -> q, becomes
// q8ta_batch_norm; a float one stays on the host. Training mode is refused when the graph is
// read: it normalizes with the batch's statistics.
#include "compiler/ops/EdgeOp.h"

#include <cmath>

#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/BatchNorm.cpp.
std::vector<HostTensor> reference_batch_norm(const ReferenceContext& c);
std::vector<HostTensor> reference_batch_norm_no_training(const ReferenceContext& c);

namespace fusion {
// dq -> batch norm [-> act] -> q => q8ta_batch_norm (compiler/fusion/BatchNorm.cpp).
void fuse_batch_norm(FuseState& state, int anchor);
}  // namespace fusion

namespace {

// input float32 of rank >= 2; each per-channel tensor given float32 [C]; the running
// statistics given; eps a finite non-negative number. The normalized output has the input's
// shape.
TypedShape check_batch_norm(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.dtype(x, "input", DType::Float32);
  if (x.shape.size() < 2) {
    c.fail(c.input_field("input"), "expected a channel dim (rank >= 2), got shape ",
           shape_str(x.shape));
  }
  for (const char* name : {"weight", "bias", "running_mean", "running_var"}) {
    const Value* v = c.opt_in(name);
    if (v == nullptr) {
      if (name[0] == 'r') {
        c.fail(c.input_field(name),
               "required outside training (the statistics to normalize "
               "with)");
      }
      continue;
    }
    c.dtype(*v, name, DType::Float32);
    c.shape(*v, name, {x.shape[1]}, "one value per channel of the input");
  }
  const double eps = c.f64("eps");
  if (!(eps >= 0.0 && std::isfinite(eps))) {
    c.fail(ShapeContext::arg_field("eps"), "expected a finite value >= 0, got ", eps);
  }
  (void)c.f64("momentum");
  return {DType::Float32, x.shape};
}

std::vector<TypedShape> batch_norm(const ShapeContext& c) {
  if (c.flag_or("training", true)) {
    c.fail(ShapeContext::arg_field("training"),
           "true: in training mode it normalizes with the batch's own statistics; export the "
           "model in eval mode (model.eval())");
  }
  (void)c.flag_or("cudnn_enabled", true);
  return {check_batch_norm(c)};
}

std::vector<TypedShape> batch_norm_no_training(const ShapeContext& c) {
  // save_mean and save_invstd: empty outside training.
  return {check_batch_norm(c), {DType::Float32, {0}}, {DType::Float32, {0}}};
}

const std::vector<const char*> kInputs = {"input", "weight", "bias", "running_mean", "running_var"};

}  // namespace

std::vector<EdgeOp> batch_norm_edge_ops() {
  return {
      EdgeOp{"aten.batch_norm",
             kInputs,
             1,
             {required_arg("training", Lit::Bool), required_arg("momentum", Lit::Number),
              required_arg("eps", Lit::Number), required_arg("cudnn_enabled", Lit::Bool)},
             1,
             batch_norm}
          .computed_by(reference_batch_norm)
          .fused_by(fusion::fuse_batch_norm, {"q8ta_batch_norm"}),
      EdgeOp{"aten._native_batch_norm_legit_no_training",
             kInputs,
             1,
             {required_arg("momentum", Lit::Number), required_arg("eps", Lit::Number)},
             3,
             batch_norm_no_training}
          .computed_by(reference_batch_norm_no_training)
          .fused_by(fusion::fuse_batch_norm, {"q8ta_batch_norm"}),
  };
}

}  // namespace vkd::compiler
