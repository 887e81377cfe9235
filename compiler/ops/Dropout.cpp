// Ops that are the identity outside training but stay as calls in a traced graph: aten.dropout,
// aten.alpha_dropout, aten.feature_dropout, aten.feature_alpha_dropout (train = false) and
// torchvision's stochastic_depth (training = false), as FX and other exporters write them. They
// fold like clones (fusion looks through them, lowering makes them identity: EdgeOpNames.h's
// is_clone); a node in training mode, which zeroes random elements, is refused when the graph
// is read.
#include "compiler/ops/EdgeOp.h"

#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU reference of a copy, defined in compiler/reference/Copy.cpp.
std::vector<HostTensor> reference_copy(const ReferenceContext& c);

namespace fusion {
// Chains of copies, views and these between a dequantize and a quantize (Views.cpp).
void fuse_view(FuseState& state, int anchor);
std::string lower_identity(FuseState& state, Node& node, int where);  // Lowerings.cpp
}  // namespace fusion

// What a chain of moves on quantized data becomes (compiler/ops/Copy.cpp).
std::vector<std::string> moved_by_ops();

namespace {

// A float tensor of the input's shape, once `p` is a probability and the node does not train
// (`train_arg` false; or p = 0, which drops nothing).
std::vector<TypedShape> eval_identity(const ShapeContext& c, const char* train_arg) {
  const Value& x = c.in("input");
  if (x.dtype != DType::Float32 && x.dtype != DType::Float16) c.dtype(x, "input", DType::Float32);
  const double p = c.f64("p");
  if (!(p >= 0.0 && p <= 1.0)) {
    c.fail(ShapeContext::arg_field("p"), "expected a probability in [0, 1], got ", p);
  }
  if (c.flag_or(train_arg, true) && p != 0.0) {
    c.fail(ShapeContext::arg_field(train_arg),
           "true: in training mode it zeroes random elements; export the model in eval mode "
           "(model.eval())");
  }
  return {{x.dtype, x.shape}};
}

std::vector<TypedShape> dropout(const ShapeContext& c) { return eval_identity(c, "train"); }

std::vector<TypedShape> stochastic_depth(const ShapeContext& c) {
  c.str_in("mode", {"row", "batch"}, false);
  return eval_identity(c, "training");
}

// dropout(Tensor input, float p, bool train) and its variants.
EdgeOp dropout_op(const char* name) {
  return EdgeOp{name, {"input"},
                1,    {required_arg("p", Lit::Number), required_arg("train", Lit::Bool)},
                1,    dropout}
      .computed_by(reference_copy)
      .fused_by(fusion::fuse_view, moved_by_ops())
      .lowered_by(fusion::lower_identity, {"identity"});
}

}  // namespace

std::vector<EdgeOp> dropout_edge_ops() {
  return {
      dropout_op("aten.dropout"),
      dropout_op("aten.alpha_dropout"),
      dropout_op("aten.feature_dropout"),
      dropout_op("aten.feature_alpha_dropout"),
      // torchvision.ops.stochastic_depth(input, p, mode, training=True)
      EdgeOp{"aten.stochastic_depth",
             {"input"},
             1,
             {required_arg("p", Lit::Number), required_arg("mode", Lit::String),
              optional_arg("training", Lit::Bool, ArgValue(true), false)},
             1,
             stochastic_depth}
          .computed_by(reference_copy)
          .fused_by(fusion::fuse_view, moved_by_ops())
          .lowered_by(fusion::lower_identity, {"identity"}),
  };
}

}  // namespace vkd::compiler
