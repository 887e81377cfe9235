#include "runtime/graph/ConstantPacker.h"

#include <algorithm>
#include <cstring>

#include "core/Error.h"
#include "core/HostPacking.h"
#include "core/PackedInt8Layout.h"

namespace vkd::graph {
namespace {

template <typename T>
std::vector<T> read_host_elements(const uint8_t* bytes, size_t count) {
  std::vector<T> out(count);
  std::memcpy(out.data(), bytes, count * sizeof(T));
  return out;
}

template <typename T>
std::vector<uint8_t> as_bytes(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace

ConstantPacker nchw_constant_packer(const TensorSpec& spec, const uint8_t* nchw, size_t bytes,
                                    int8_t pad_value) {
  const uint64_t expected = static_cast<uint64_t>(spec.numel()) * host_element_size(spec.dtype);
  VKD_CHECK(bytes == expected, ErrorCode::InvalidArgument, "constant ", spec.describe(), " needs ",
            expected, " host bytes, got ", bytes);
  return [spec, nchw, pad_value]() -> std::vector<uint8_t> {
    const auto n = static_cast<size_t>(spec.numel());
    switch (spec.dtype) {
      case DType::Float32:
        return as_bytes(pack_strided(read_host_elements<float>(nchw, n).data(), spec.dims4(),
                                     spec.storage, spec.layout));
      case DType::Float16: {
        const auto half = read_host_elements<uint16_t>(nchw, n);
        std::vector<float> values(n);
        std::transform(half.begin(), half.end(), values.begin(), from_float16);
        const auto packed = pack_strided(values.data(), spec.dims4(), spec.storage, spec.layout);
        std::vector<uint16_t> out(packed.size());
        std::transform(packed.begin(), packed.end(), out.begin(), to_float16);
        return as_bytes(out);
      }
      case DType::Int32:
        return as_bytes(pack_strided(read_host_elements<int32_t>(nchw, n).data(), spec.dims4(),
                                     spec.storage, spec.layout));
      case DType::Int8x4:
        return as_bytes(
            pack_int8(reinterpret_cast<const int8_t*>(nchw), spec.dims4(), spec.layout, pad_value));
      case DType::Int8: return std::vector<uint8_t>(nchw, nchw + n);
    }
    VKD_THROW(ErrorCode::Internal, "constant of unknown dtype");
  };
}

}  // namespace vkd::graph
