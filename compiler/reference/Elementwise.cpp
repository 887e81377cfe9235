// CPU reference of the element-wise ops: add, mul, relu, hardtanh, clamp (semantics above each
// function). Built with -ffp-contract=off (compiler/CMakeLists.txt), so add's alpha product
// and sum are rounded on their own.
#include "compiler/reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "compiler/reference/ReferenceContext.h"

namespace vkd::compiler {

using namespace reference;  // the shared element helpers (ReferenceContext.h)

namespace {

// Strides of `in_shape` (C order) seen through `out_shape` (numpy broadcasting, right-aligned).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> strides(out_shape.size(), 0);
  int64_t s = 1;
  for (size_t k = 0; k < in_shape.size(); ++k) {
    const size_t din = in_shape.size() - 1 - k, dout = out_shape.size() - 1 - k;
    strides[dout] = in_shape[din] == 1 ? 0 : s;
    s *= in_shape[din];
  }
  return strides;
}

// The broadcast shape of `a` and `b` (numpy rules), or a failure naming both.
std::vector<int64_t> broadcast_shape(const ReferenceContext& c, const HostTensor& a,
                                     const HostTensor& b) {
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> shape(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < a.shape.size() ? a.shape[a.shape.size() - 1 - k] : 1;
    const int64_t db = k < b.shape.size() ? b.shape[b.shape.size() - 1 - k] : 1;
    c.require(da == db || da == 1 || db == 1,
              detail::concat("shapes ", shape_str(a.shape), " and ", shape_str(b.shape),
                             " do not broadcast"));
    shape[rank - 1 - k] = da == 1 ? db : da;
  }
  return shape;
}

// Element-wise `f32` (float32 tensors) or `i32` (int32 tensors) of self and other, broadcast.
std::vector<HostTensor> binary(const ReferenceContext& c, const char* what,
                               const std::function<float(float, float)>& f32,
                               const std::function<int32_t(int32_t, int32_t)>& i32) {
  const HostTensor& a = c.input(0, "self");
  const HostTensor& b = c.input(1, "other");
  c.require(a.dtype == b.dtype,
            detail::concat("self is ", to_string(a.dtype), ", other is ", to_string(b.dtype)));
  if (a.dtype != DType::Float32 && a.dtype != DType::Int32) {
    c.fail(ErrorCode::Unsupported, detail::concat(what, " of ", to_string(a.dtype)));
  }
  const std::vector<int64_t> shape = broadcast_shape(c, a, b);
  HostTensor out = make_tensor(a.dtype, shape);
  const std::vector<std::vector<int64_t>> strides = {broadcast_strides(a.shape, shape),
                                                     broadcast_strides(b.shape, shape)};
  const bool is_float = a.dtype == DType::Float32;
  strided_loop(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
    if (is_float) {
      set_f32(out, i, f32(get_f32(a, off[0]), get_f32(b, off[1])));
    } else {
      set_i32(out, i, i32(get_i32(a, off[0]), get_i32(b, off[1])));
    }
  });
  return {out};
}

// int32 results of uint32 arithmetic: wrapping like PyTorch's int32 ops (no signed overflow).
int32_t wrapped(uint32_t v) { return static_cast<int32_t>(v); }

}  // namespace

// aten.add.Tensor: numpy broadcasting; out = a + b when alpha == 1, else a + float(alpha) * b
//   (PyTorch's vectorized CPU kernel fuses the alpha multiply-add, its scalar tail does not, so
//   alpha != 1 can differ from PyTorch in the last bit). int32 tensors: a + alpha * b, wrapping.
std::vector<HostTensor> reference_add(const ReferenceContext& c) {
  if (c.input(0, "self").dtype == DType::Int32) {
    const auto alpha = static_cast<uint32_t>(c.int_arg("alpha", 1));
    return binary(c, "add", nullptr, [alpha](int32_t a, int32_t b) {
      return wrapped(static_cast<uint32_t>(a) + alpha * static_cast<uint32_t>(b));
    });
  }
  const double alpha_d = c.present("alpha") ? c.float_arg("alpha") : 1.0;
  const float alpha = static_cast<float>(alpha_d);
  if (alpha_d == 1.0) return binary(c, "add", [](float a, float b) { return a + b; }, nullptr);
  return binary(
      c, "add",
      [alpha](float a, float b) {
        const float scaled = alpha * b;
        return a + scaled;
      },
      nullptr);
}

// aten.mul.Tensor: numpy broadcasting; out = a * b (float32: one rounding; int32: wrapping).
std::vector<HostTensor> reference_mul(const ReferenceContext& c) {
  return binary(
      c, "mul", [](float a, float b) { return a * b; },
      [](int32_t a, int32_t b) {
        return wrapped(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
      });
}

// aten.mul.Scalar: out = x * float32(other) for float32 x, one rounding (PyTorch's CPU kernel
//   converts the scalar to the tensor's float type, then multiplies).
std::vector<HostTensor> reference_mul_scalar(const ReferenceContext& c) {
  const float m = static_cast<float>(c.float_arg("other"));
  return unary_float(c, [m](float x) { return x * m; });
}

// aten.relu: x < 0 ? 0 : x.   aten.hardtanh / aten.clamp: min(max(x, lo), hi) with the bounds
//   as float32 (an absent clamp bound is not applied; lo > hi gives hi, as in PyTorch); NaN
//   propagates through all three.
std::vector<HostTensor> reference_relu(const ReferenceContext& c) {
  return unary_float(c, [](float x) { return x < 0.0f ? 0.0f : x; });
}

std::vector<HostTensor> reference_hardtanh(const ReferenceContext& c) {
  const float lo = static_cast<float>(c.present("min_val") ? c.float_arg("min_val") : -1.0);
  const float hi = static_cast<float>(c.present("max_val") ? c.float_arg("max_val") : 1.0);
  return unary_float(c, [lo, hi](float x) { return clamp_float(x, lo, hi); });
}

std::vector<HostTensor> reference_clamp(const ReferenceContext& c) {
  std::optional<float> lo, hi;
  if (c.present("min")) lo = static_cast<float>(c.float_arg("min"));
  if (c.present("max")) hi = static_cast<float>(c.float_arg("max"));
  c.require(lo || hi, "clamp needs at least one of min and max");
  return unary_float(c, [lo, hi](float x) { return clamp_float(x, lo, hi); });
}

}  // namespace vkd::compiler
