// CPU reference of the element-wise ops: add, relu, hardtanh, clamp (semantics above each
// function). Built with -ffp-contract=off (compiler/CMakeLists.txt), so add's alpha product
// and sum are rounded on their own.
#include "compiler/reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

}  // namespace

// aten.add.Tensor: numpy broadcasting; out = a + b when alpha == 1, else a + float(alpha) * b
//   (PyTorch's vectorized CPU kernel fuses the alpha multiply-add, its scalar tail does not, so
//   alpha != 1 can differ from PyTorch in the last bit). int32 tensors: a + alpha * b.
std::vector<HostTensor> reference_add(const ReferenceContext& c) {
  const HostTensor& a = c.input(0, "self");
  const HostTensor& b = c.input(1, "other");
  c.require(a.dtype == b.dtype, detail::concat("self is ", to_string(a.dtype), ", other is ",
                                               to_string(b.dtype)));
  if (a.dtype != DType::Float32 && a.dtype != DType::Int32) {
    c.fail(ErrorCode::Unsupported, detail::concat("add of ", to_string(a.dtype)));
  }
  // numpy broadcasting
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
  HostTensor out = make_tensor(a.dtype, shape);
  const std::vector<std::vector<int64_t>> strides = {broadcast_strides(a.shape, shape),
                                                     broadcast_strides(b.shape, shape)};
  if (a.dtype == DType::Float32) {
    const double alpha_d = c.present("alpha") ? c.float_arg("alpha") : 1.0;
    const float alpha = static_cast<float>(alpha_d);
    const bool unit = alpha_d == 1.0;
    strided_loop(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
      const float va = get_f32(a, off[0]), vb = get_f32(b, off[1]);
      if (unit) {
        set_f32(out, i, va + vb);
      } else {
        const float scaled = alpha * vb;
        set_f32(out, i, va + scaled);
      }
    });
  } else {
    const int64_t alpha = c.int_arg("alpha", 1);
    strided_loop(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
      const uint32_t sum = static_cast<uint32_t>(get_i32(a, off[0])) +
                           static_cast<uint32_t>(alpha) * static_cast<uint32_t>(get_i32(b, off[1]));
      set_i32(out, i, static_cast<int32_t>(sum));  // wraps like PyTorch's int32 add
    });
  }
  return {out};
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
