// quantized_decomposed quantize / dequantize per tensor and dequantize per channel.
#include "compiler/ops/EdgeOp.h"

#include <cmath>

#include "compiler/ops/ShapeContext.h"

namespace vkd::compiler {

// The CPU references, defined (with their semantics) in compiler/reference/Quantize.cpp.
std::vector<HostTensor> reference_quantize_per_tensor(const ReferenceContext& c);
std::vector<HostTensor> reference_dequantize_per_tensor(const ReferenceContext& c);
std::vector<HostTensor> reference_dequantize_per_channel(const ReferenceContext& c);

// The fusion pattern and direct lowerings these ops use, defined in compiler/fusion/.
namespace fusion {
std::string lower_quantize(FuseState& state, Node& node, int where);    // -> q8ta_quantize
std::string lower_dequantize(FuseState& state, Node& node, int where);  // -> q8ta_dequantize
void fuse_dequantize(FuseState& state, int anchor);  // -> q8ta_conv2d_q_dq (Epilogue.cpp)
void fuse_quantize(FuseState& state, int anchor);    // -> q8ta_conv2d_fq (Epilogue.cpp)
}  // namespace fusion

namespace {

// quantize_per_tensor / dequantize_per_tensor: one tensor of dtype `in`, per-tensor int8
// parameters.
const Value& per_tensor_quant_input(const ShapeContext& c, DType in) {
  const Value& x = c.in("input");
  c.str_in("dtype", {"int8"}, false);
  c.dtype(x, "input", in);
  c.positive_scale("scale");
  c.int8_zero_point("zero_point");
  c.int8_range("quant_min", "quant_max", false);
  return x;
}

std::vector<TypedShape> quantize_per_tensor(const ShapeContext& c) {
  return {{DType::Int8, per_tensor_quant_input(c, DType::Float32).shape}};
}

std::vector<TypedShape> dequantize_per_tensor(const ShapeContext& c) {
  const Value& x = per_tensor_quant_input(c, DType::Int8);
  c.str_in("out_dtype", {"float32"}, true);
  return {{DType::Float32, x.shape}};
}

std::vector<TypedShape> dequantize_per_channel(const ShapeContext& c) {
  const Value& x = c.in("input");
  c.str_in("dtype", {"int8"}, false);
  c.dtype(x, "input", DType::Int8);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) c.fail(c.input_field("input"), "expected rank >= 1, got a scalar");
  int64_t axis = c.i64("axis");
  if (axis < -rank || axis >= rank) {
    c.fail(c.arg_field("axis"), "expected a value in [", -rank, ", ", rank - 1,
           "] for input shape ", shape_str(x.shape), ", got ", axis);
  }
  if (axis < 0) axis += rank;
  const std::vector<int64_t> per_channel = {x.shape[static_cast<size_t>(axis)]};
  const Value& scales = c.in("scales");
  c.dtype(scales, "scales", DType::Float32);
  c.shape(scales, "scales", per_channel, "one per channel along axis");
  if (const Value* zp = c.opt_in("zero_points")) {
    c.dtype(*zp, "zero_points", DType::Int32);
    c.shape(*zp, "zero_points", per_channel, "one per channel along axis");
  }
  c.int8_range("quant_min", "quant_max", false);
  c.str_in("out_dtype", {"float32"}, true);
  return {{DType::Float32, x.shape}};
}

}  // namespace

std::vector<EdgeOp> quantize_edge_ops() {
  return {
      EdgeOp{"quantized_decomposed.quantize_per_tensor",
             {"input"},
             1,
             {required_arg("scale", Lit::Number), required_arg("zero_point", Lit::Int),
              required_arg("quant_min", Lit::Int), required_arg("quant_max", Lit::Int),
              required_arg("dtype", Lit::String)},
             1,
             quantize_per_tensor}
          .computed_by(reference_quantize_per_tensor)
          .fused_by(fusion::fuse_quantize, {"q8ta_conv2d_fq"})
          .fusing_after_its_consumers()
          .lowered_by(fusion::lower_quantize, {"q8ta_quantize"}),
      EdgeOp{"quantized_decomposed.dequantize_per_tensor",
             {"input"},
             1,
             {required_arg("scale", Lit::Number), required_arg("zero_point", Lit::Int),
              required_arg("quant_min", Lit::Int), required_arg("quant_max", Lit::Int),
              required_arg("dtype", Lit::String), optional_arg("out_dtype", Lit::String)},
             1,
             dequantize_per_tensor}
          .computed_by(reference_dequantize_per_tensor)
          .fused_by(fusion::fuse_dequantize, {"q8ta_conv2d_q_dq"})
          .lowered_by(fusion::lower_dequantize, {"q8ta_dequantize"}),
      EdgeOp{"quantized_decomposed.dequantize_per_channel",
             {"input", "scales", "zero_points"},
             2,
             {required_arg("axis", Lit::Int), required_arg("quant_min", Lit::Int),
              required_arg("quant_max", Lit::Int), required_arg("dtype", Lit::String),
              optional_arg("out_dtype", Lit::String)},
             1,
             dequantize_per_channel}
          .computed_by(reference_dequantize_per_channel),  // folded into the weights it reads
  };
}

}  // namespace vkd::compiler
