#include "runtime/graph/GpuTensor.h"

#include "core/Error.h"
#include "core/FloatLayout.h"
#include "core/PackedInt8Layout.h"

namespace vkd::graph {

uint64_t buffer_bytes(const TensorSpec& spec) {
  if (spec.dtype == DType::Int8x4) {
    return 4ull * static_cast<uint64_t>(packed_int8_word_count(spec.layout, spec.dims4()));
  }
  return element_size(spec.dtype) * static_cast<uint64_t>(spec.numel());
}

VkExtent3D image_extent(const TensorSpec& spec) {
  const TextureExtents e = texture_extents(spec.layout, spec.dims4());
  return {static_cast<uint32_t>(e.x), static_cast<uint32_t>(e.y), static_cast<uint32_t>(e.z)};
}

VkFormat image_format(DType dtype) {
  switch (dtype) {
    case DType::Float32: return VK_FORMAT_R32G32B32A32_SFLOAT;
    case DType::Float16: return VK_FORMAT_R16G16B16A16_SFLOAT;
    case DType::Int32: return VK_FORMAT_R32G32B32A32_SINT;
    default: break;
  }
  VKD_THROW(ErrorCode::InvalidArgument, "dtype ", to_string(dtype),
            " cannot be stored in a texture");
}

GpuTensor::GpuTensor(const vk::MemoryAllocator& memory, TensorSpec spec, std::string name)
    : spec_(std::move(spec)), name_(std::move(name)) {
  validate(spec_);
  const std::string what = "tensor '" + name_ + "' " + spec_.describe();
  if (is_image()) {
    image_ = memory.create_image_3d(image_format(spec_.dtype), image_extent(spec_), what);
  } else {
    buffer_ = memory.create_unbound_buffer(buffer_bytes(spec_), what);
  }
}

uint64_t GpuTensor::bytes() const {
  if (!is_image()) return buffer_bytes(spec_);
  const VkExtent3D e = image_extent(spec_);
  return uint64_t(e.width) * e.height * e.depth * 4 * element_size(spec_.dtype);
}

}  // namespace vkd::graph
