// Device memory: buffers and 3-D images with memory types chosen in one place, and memory
// blocks that several buffers share (the graph's memory plan binds tensors at offsets inside
// them). Sizes are checked against the device limits here, in bytes.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>

#include "runtime/vk/DeviceProfile.h"
#include "runtime/vk/Handle.h"

namespace vkd::vk {

enum class MemoryUse {
  DeviceLocal,  // tensors: fastest for the GPU, may not be mappable
  HostUpload,   // staging written by the CPU, read by the GPU
  // Written by the CPU, read by kernels in place: device-local and mappable where the device
  // has such memory (resizable BAR on a discrete GPU, unified memory), else like HostUpload.
  DirectUpload,
  HostReadback,  // staging written by the GPU, read by the CPU (cached when available)
};

// No memory type: an object not (yet) bound to memory.
inline constexpr uint32_t kNoMemoryType = ~0u;

class Buffer {
 public:
  Buffer() = default;
  VkBuffer handle() const { return buffer_.get(); }
  VkDeviceSize size() const { return size_; }
  // What memory it needs (size, alignment, allowed types); meaningful for an unbound buffer.
  const VkMemoryRequirements& requirements() const { return requirements_; }
  bool bound() const { return bound_; }
  void* mapped() const { return mapped_; }  // non-null for host-visible memory
  // Where it landed: the memory type of its allocation (kNoMemoryType while unbound) and its
  // offset in that allocation (a buffer bound inside a MemoryBlock sits at its planned offset).
  uint32_t memory_type() const { return memory_type_; }
  VkDeviceSize memory_offset() const { return memory_offset_; }
  // Make CPU writes visible to the GPU / GPU writes visible to the CPU (no-ops when coherent).
  void flush() const;
  void invalidate() const;

 private:
  friend class MemoryAllocator;
  VkDevice device_ = VK_NULL_HANDLE;
  UniqueBuffer buffer_;
  UniqueMemory memory_;  // empty when bound inside a shared MemoryBlock
  VkMemoryRequirements requirements_{};
  VkDeviceSize size_ = 0;
  bool bound_ = false;
  void* mapped_ = nullptr;
  bool coherent_ = true;
  uint32_t memory_type_ = kNoMemoryType;
  VkDeviceSize memory_offset_ = 0;
};

// One device-local allocation shared by several buffers; must outlive every buffer bound in it.
class MemoryBlock {
 public:
  MemoryBlock() = default;
  VkDeviceMemory handle() const { return memory_.get(); }
  VkDeviceSize size() const { return size_; }
  uint32_t memory_type() const { return memory_type_; }

 private:
  friend class MemoryAllocator;
  UniqueMemory memory_;
  VkDeviceSize size_ = 0;
  uint32_t memory_type_ = kNoMemoryType;
};

class Image {
 public:
  Image() = default;
  VkImage handle() const { return image_.get(); }
  VkImageView view() const { return view_.get(); }
  VkFormat format() const { return format_; }
  VkExtent3D extent() const { return extent_; }
  uint32_t memory_type() const { return memory_type_; }  // of its own allocation

 private:
  friend class MemoryAllocator;
  UniqueImage image_;
  UniqueMemory memory_;
  UniqueImageView view_;
  VkFormat format_ = VK_FORMAT_UNDEFINED;
  VkExtent3D extent_{};
  uint32_t memory_type_ = kNoMemoryType;
};

class MemoryAllocator {
 public:
  MemoryAllocator(VkPhysicalDevice physical, VkDevice device, const DeviceProfile& profile);

  // `what` names the object in errors ("tensor 'x'"). Storage buffers are padded to 16 bytes so
  // ivec4 loads never run off the end.
  Buffer create_buffer(VkDeviceSize bytes, MemoryUse use, const std::string& what) const;
  // The property flags of the memory type create_buffer(.., use, ..) picks for a buffer whose
  // requirements allow `type_bits`.
  VkMemoryPropertyFlags memory_flags(MemoryUse use, uint32_t type_bits) const;
  // A device-local storage buffer without memory (limits checked): bind it into a block.
  Buffer create_unbound_buffer(VkDeviceSize bytes, const std::string& what) const;
  // Device-local memory usable by every buffer whose requirements().memoryTypeBits include
  // one of `type_bits`.
  MemoryBlock allocate_block(VkDeviceSize bytes, uint32_t type_bits, const std::string& what) const;
  void bind(Buffer& buffer, const MemoryBlock& block, VkDeviceSize offset,
            const std::string& what) const;
  // The memory types device-local buffers may use (intersected over the requirements of the
  // buffers that will share a block).
  uint32_t device_local_type(uint32_t type_bits, const std::string& what) const;
  // A 3-D storage image in VK_IMAGE_LAYOUT_UNDEFINED; the graph moves it to GENERAL.
  Image create_image_3d(VkFormat format, VkExtent3D extent, const std::string& what) const;
  // The device's memory types and heaps (what memory_type() indices refer to).
  const VkPhysicalDeviceMemoryProperties& properties() const { return memory_props_; }

 private:
  void check_buffer_limits(VkDeviceSize padded, const std::string& what) const;
  uint32_t memory_type_for(MemoryUse use, uint32_t type_bits, const std::string& what) const;
  uint32_t select_memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred, const std::string& what) const;
  VkDevice device_;
  const DeviceProfile& profile_;
  VkPhysicalDeviceMemoryProperties memory_props_{};
};

std::string format_bytes(uint64_t bytes);  // "4.0 MiB"

}  // namespace vkd::vk
