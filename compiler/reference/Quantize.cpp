// CPU reference of the quantized_decomposed ops: quantize / dequantize per tensor and
// dequantize per channel (semantics above each function). Built with -ffp-contract=off
// (compiler/CMakeLists.txt), so each float32 product is rounded on its own.
#include "compiler/reference/Reference.h"

#include <cstdint>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

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
