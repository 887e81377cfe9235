// A tensor resident on the GPU: its spec plus the buffer or 3-D image holding it. Buffers are
// created without memory: the ComputeGraph's memory plan binds them inside shared blocks.
// Images get their own memory at creation (they are never shared).
#pragma once

#include <string>

#include "core/TensorSpec.h"
#include "runtime/vk/Memory.h"

namespace vkd::graph {

// Bytes a tensor of `spec` occupies on the GPU in buffer storage (int8x4: 4 bytes a word).
uint64_t buffer_bytes(const TensorSpec& spec);
// Texel extents of a tensor in 3-D texture storage.
VkExtent3D image_extent(const TensorSpec& spec);
VkFormat image_format(DType dtype);

class GpuTensor {
 public:
  GpuTensor(const vk::MemoryAllocator& memory, TensorSpec spec, std::string name);

  const TensorSpec& spec() const { return spec_; }
  const std::string& name() const { return name_; }
  bool is_image() const { return spec_.storage == StorageType::Texture3D; }
  const vk::Buffer& buffer() const { return buffer_; }
  vk::Buffer& buffer_to_bind() { return buffer_; }
  const vk::Image& image() const { return image_; }
  uint64_t bytes() const;  // device bytes actually used by the data

 private:
  TensorSpec spec_;
  std::string name_;
  vk::Buffer buffer_;
  vk::Image image_;
};

}  // namespace vkd::graph
