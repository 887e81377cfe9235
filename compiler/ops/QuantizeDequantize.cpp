// quantized_decomposed quantize / dequantize per tensor and dequantize per channel.
#include "compiler/ops/EdgeOp.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "compiler/fusion/EdgeOpNames.h"
#include "compiler/fusion/Lowering.h"
#include "compiler/ops/ShapeContext.h"
#include "compiler/reference/ReferenceContext.h"

// CPU reference of the quantized_decomposed ops: quantize / dequantize per tensor and
// dequantize per channel (semantics above each function). Built with -ffp-contract=off
// (compiler/CMakeLists.txt), so each float32 product is rounded on its own.
namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

float inverse_scale(float scale) { return static_cast<float>(1.0 / static_cast<double>(scale)); }

}  // namespace

// quantized_decomposed.quantize_per_tensor (the project's rounding,
// test/reference/QuantReference.h):
//   s = float(scale); inv = float(1.0 / double(s));
//   q = clamp(nearbyint(float(x * inv)) + zero_point, quant_min, quant_max)  (ties to even)
//   PyTorch computes float(1.0 / scale) from the double scale; the two agree whenever the scale
//   is a float32 value (what exporters write, observers hold float32 scales).
std::vector<HostTensor> reference_quantize_per_tensor(const ReferenceContext& c) {
  const HostTensor& x = c.input(0, "input");
  c.expect_dtype(x, DType::Float32, "input");
  const DType out_dtype = c.dtype_arg("dtype");
  c.require(out_dtype != DType::Float32, "dtype must be an integer type");
  const float scale = static_cast<float>(c.float_arg("scale"));
  const int64_t zp = c.int_arg("zero_point");
  const int64_t qmin = c.int_arg("quant_min"), qmax = c.int_arg("quant_max");
  check_qrange(c, qmin, qmax, out_dtype);
  const float inv = inverse_scale(scale);
  HostTensor out = make_tensor(out_dtype, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    set_int(out, i, quantize_one(get_f32(x, i), inv, static_cast<double>(zp), qmin, qmax));
  }
  return {out};
}

// quantized_decomposed.dequantize_per_tensor:   x = float(q - zero_point) * float(scale)
std::vector<HostTensor> reference_dequantize_per_tensor(const ReferenceContext& c) {
  const HostTensor& q = c.input(0, "input");
  c.require(q.dtype == DType::Int8 || q.dtype == DType::Int32, "input must be int8 or int32");
  if (c.present("dtype")) {
    c.require(c.dtype_arg("dtype") == q.dtype, "argument 'dtype' differs from the input's dtype");
  }
  if (c.present("out_dtype")) {
    c.require(c.dtype_arg("out_dtype") == DType::Float32, "out_dtype must be float32");
  }
  const float scale = static_cast<float>(c.float_arg("scale"));
  const int64_t zp = c.int_arg("zero_point");
  HostTensor out = make_tensor(DType::Float32, q.shape);
  for (int64_t i = 0; i < q.numel(); ++i) {
    set_f32(out, i, static_cast<float>(get_int(q, i) - zp) * scale);
  }
  return {out};
}

// quantized_decomposed.dequantize_per_channel:  x = float(q - zp[c]) * scale[c], c = index along
//   `axis` (negative counts from the end); absent zero_points mean 0.
std::vector<HostTensor> reference_dequantize_per_channel(const ReferenceContext& c) {
  const HostTensor& q = c.input(0, "input");
  const HostTensor& scales = c.input(1, "scales");
  const HostTensor* zps = c.optional_input(2, "zero_points");
  c.require(q.dtype == DType::Int8 || q.dtype == DType::Int32, "input must be int8 or int32");
  c.expect_dtype(scales, DType::Float32, "scales");
  if (c.present("out_dtype")) {
    c.require(c.dtype_arg("out_dtype") == DType::Float32, "out_dtype must be float32");
  }
  c.require(!q.shape.empty(), "input must have rank >= 1");
  const int64_t axis = norm_dim(c, c.int_arg("axis"), q.shape.size());
  const int64_t channels = q.shape[axis];
  c.require(scales.numel() == channels,
            detail::concat("scales has ", scales.numel(), " elements, the axis has ", channels));
  if (zps) {
    c.require(zps->numel() == channels, detail::concat("zero_points has ", zps->numel(),
                                                       " elements, the axis has ", channels));
  }
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < q.shape.size(); ++d) inner *= q.shape[d];
  HostTensor out = make_tensor(DType::Float32, q.shape);
  for (int64_t i = 0; i < q.numel(); ++i) {
    const int64_t ch = (i / inner) % channels;
    const int64_t zp = zps ? zp_int(*zps, ch) : 0;
    set_f32(out, i, static_cast<float>(get_int(q, i) - zp) * get_f32(scales, ch));
  }
  return {out};
}

}  // namespace vkd::compiler

// The direct lowerings of what fusion leaves (Patterns.h's DirectLowering).
namespace vkd::compiler::fusion {

std::string lower_quantize(FuseState& state, Node& node, int where) {
  QuantInfo q;
  if (!unary_input(state.graph, node) || !check_q(state.graph, node, where, q).empty()) return "";
  // Its output's quantization is known even when the node stays on the host.
  state.produced[node.outputs[0]] = q;
  return rewrite_unary(state, node, where, "q8ta_quantize", qparam_args(q));
}

std::string lower_dequantize(FuseState& state, Node& node, int where) {
  QuantInfo q;
  if (!unary_input(state.graph, node)) return "";
  if (!check_activation_dq(state.graph, node, where, q).empty()) return "";
  state.consume_quant(node.inputs[0], where, q);
  return rewrite_unary(state, node, where, "q8ta_dequantize", qparam_args(q));
}

}  // namespace vkd::compiler::fusion

namespace vkd::compiler {

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

std::vector<EdgeOp> quantize_dequantize_edge_ops() {
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
