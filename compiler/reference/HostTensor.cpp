#include "compiler/reference/HostTensor.h"

#include <string>
#include <utility>

#include "compiler/reference/ReferenceContext.h"
#include "core/Error.h"

namespace vkd::compiler {

using namespace reference;  // the element helpers (compiler/reference/ReferenceContext.h)

int64_t HostTensor::numel() const { return element_count(shape); }

namespace {

// One from_* body for every element type: shape check, then the element setter.
template <typename T, typename Setter>
HostTensor tensor_from(const char* what, DType dtype, std::vector<int64_t> shape,
                       const std::vector<T>& values, Setter set) {
  check_shape_valid(shape, what);
  VKD_CHECK(element_count(shape) == static_cast<int64_t>(values.size()), ErrorCode::InvalidArgument,
            what, ": ", values.size(), " values for shape ", shape_str(shape));
  HostTensor t = make_tensor(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) set(t, static_cast<int64_t>(i), values[i]);
  return t;
}

}  // namespace

HostTensor HostTensor::from_floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  return tensor_from("HostTensor::from_floats", DType::Float32, std::move(shape), values, set_f32);
}

HostTensor HostTensor::from_int8(std::vector<int64_t> shape, const std::vector<int8_t>& values) {
  return tensor_from("HostTensor::from_int8", DType::Int8, std::move(shape), values, set_i8);
}

HostTensor HostTensor::from_int32(std::vector<int64_t> shape, const std::vector<int32_t>& values) {
  return tensor_from("HostTensor::from_int32", DType::Int32, std::move(shape), values, set_i32);
}

namespace {
void check_readable(const HostTensor& t, DType want, const char* fn) {
  VKD_CHECK(t.dtype == want, ErrorCode::InvalidArgument, "HostTensor::", fn, ": tensor is ",
            to_string(t.dtype), ", not ", to_string(want));
  VKD_CHECK(t.bytes.size() == static_cast<size_t>(t.numel()) * elem_bytes(want),
            ErrorCode::InvalidArgument, "HostTensor::", fn, ": ", t.bytes.size(),
            " bytes for shape ", shape_str(t.shape));
}
}  // namespace

std::vector<float> HostTensor::to_floats() const {
  check_readable(*this, DType::Float32, "to_floats");
  std::vector<float> v(static_cast<size_t>(numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = get_f32(*this, static_cast<int64_t>(i));
  return v;
}

std::vector<int8_t> HostTensor::to_int8() const {
  check_readable(*this, DType::Int8, "to_int8");
  std::vector<int8_t> v(static_cast<size_t>(numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = get_i8(*this, static_cast<int64_t>(i));
  return v;
}

std::vector<int32_t> HostTensor::to_int32() const {
  check_readable(*this, DType::Int32, "to_int32");
  std::vector<int32_t> v(static_cast<size_t>(numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = get_i32(*this, static_cast<int64_t>(i));
  return v;
}

}  // namespace vkd::compiler
