#include "runtime/vk/Memory.h"

#include <algorithm>
#include <cstdio>

#include "runtime/vk/VkError.h"

namespace vkd::vk {

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", bytes / double(1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / double(1ull << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

void Buffer::flush() const {
  if (coherent_ || !mapped_) return;
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_.get(), 0,
                            VK_WHOLE_SIZE};
  VKD_VK_CHECK(vkFlushMappedMemoryRanges(device_, 1, &range), "vkFlushMappedMemoryRanges");
}

void Buffer::invalidate() const {
  if (coherent_ || !mapped_) return;
  VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_.get(), 0,
                            VK_WHOLE_SIZE};
  VKD_VK_CHECK(vkInvalidateMappedMemoryRanges(device_, 1, &range),
               "vkInvalidateMappedMemoryRanges");
}

MemoryAllocator::MemoryAllocator(VkPhysicalDevice physical, VkDevice device,
                                 const DeviceProfile& profile)
    : device_(device), profile_(profile) {
  vkGetPhysicalDeviceMemoryProperties(physical, &memory_props_);
}

uint32_t MemoryAllocator::select_memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                             VkMemoryPropertyFlags preferred,
                                             const std::string& what) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memory_props_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const auto flags = memory_props_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  VKD_CHECK(fallback >= 0, ErrorCode::Unsupported, what,
            ": no memory type with the required properties (flags 0x", std::hex, required, ")");
  return static_cast<uint32_t>(fallback);
}

namespace {

VkDeviceSize padded_buffer_bytes(VkDeviceSize bytes) {
  return (std::max<VkDeviceSize>(bytes, 16) + 15) & ~VkDeviceSize(15);
}

}  // namespace

void MemoryAllocator::check_buffer_limits(VkDeviceSize padded, const std::string& what) const {
  VKD_CHECK(padded <= profile_.max_storage_buffer_range_bytes, ErrorCode::Unsupported, what,
            " needs a ", format_bytes(padded), " (", padded,
            " bytes) storage buffer; the device's maxStorageBufferRange is ",
            format_bytes(profile_.max_storage_buffer_range_bytes), " (",
            profile_.max_storage_buffer_range_bytes, " bytes)");
  VKD_CHECK(
      profile_.max_memory_allocation_bytes == 0 || padded <= profile_.max_memory_allocation_bytes,
      ErrorCode::Unsupported, what, " needs a ", format_bytes(padded),
      " allocation; the device's maxMemoryAllocationSize is ",
      format_bytes(profile_.max_memory_allocation_bytes));
}

Buffer MemoryAllocator::create_unbound_buffer(VkDeviceSize bytes, const std::string& what) const {
  const VkDeviceSize padded = padded_buffer_bytes(bytes);
  check_buffer_limits(padded, what);
  Buffer out;
  out.device_ = device_;
  out.size_ = padded;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  info.size = padded;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateBuffer(device_, &info, nullptr, &buffer), "vkCreateBuffer for ", what, " (",
               format_bytes(padded), ")");
  out.buffer_ = UniqueBuffer(device_, buffer);
  vkGetBufferMemoryRequirements(device_, buffer, &out.requirements_);
  return out;
}

uint32_t MemoryAllocator::device_local_type(uint32_t type_bits, const std::string& what) const {
  return select_memory_type(type_bits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, what);
}

MemoryBlock MemoryAllocator::allocate_block(VkDeviceSize bytes, uint32_t type_bits,
                                            const std::string& what) const {
  VKD_CHECK(
      profile_.max_memory_allocation_bytes == 0 || bytes <= profile_.max_memory_allocation_bytes,
      ErrorCode::Unsupported, what, " needs a ", format_bytes(bytes),
      " allocation; the device's maxMemoryAllocationSize is ",
      format_bytes(profile_.max_memory_allocation_bytes));
  MemoryBlock out;
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = bytes;
  alloc.memoryTypeIndex = device_local_type(type_bits, what);
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkAllocateMemory(device_, &alloc, nullptr, &memory), "vkAllocateMemory for ", what,
               " (", format_bytes(bytes), ")");
  out.memory_ = UniqueMemory(device_, memory);
  out.size_ = bytes;
  out.memory_type_ = alloc.memoryTypeIndex;
  return out;
}

void MemoryAllocator::bind(Buffer& buffer, const MemoryBlock& block, VkDeviceSize offset,
                           const std::string& what) const {
  VKD_CHECK(!buffer.bound_, ErrorCode::Internal, what, ": buffer bound twice");
  VKD_CHECK(offset % buffer.requirements_.alignment == 0 &&
                offset + buffer.requirements_.size <= block.size(),
            ErrorCode::Internal, what, ": offset ", offset, " (+", buffer.requirements_.size,
            " bytes) does not fit a ", block.size(), "-byte block with alignment ",
            buffer.requirements_.alignment);
  VKD_VK_CHECK(vkBindBufferMemory(device_, buffer.handle(), block.handle(), offset),
               "vkBindBufferMemory for ", what);
  buffer.bound_ = true;
  buffer.memory_type_ = block.memory_type();
  buffer.memory_offset_ = offset;
}

uint32_t MemoryAllocator::memory_type_for(MemoryUse use, uint32_t type_bits,
                                          const std::string& what) const {
  VkMemoryPropertyFlags required = 0, preferred = 0;
  switch (use) {
    case MemoryUse::DeviceLocal: preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT; break;
    case MemoryUse::HostUpload:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      preferred = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      break;
    case MemoryUse::DirectUpload:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      preferred = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      break;
    case MemoryUse::HostReadback:
      required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
      preferred = VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
      break;
  }
  return select_memory_type(type_bits, required, preferred, what);
}

VkMemoryPropertyFlags MemoryAllocator::memory_flags(MemoryUse use, uint32_t type_bits) const {
  return memory_props_.memoryTypes[memory_type_for(use, type_bits, "a buffer")].propertyFlags;
}

Buffer MemoryAllocator::create_buffer(VkDeviceSize bytes, MemoryUse use,
                                      const std::string& what) const {
  Buffer out = create_unbound_buffer(bytes, what);
  const VkMemoryRequirements& req = out.requirements_;
  const uint32_t type = memory_type_for(use, req.memoryTypeBits, what);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkAllocateMemory(device_, &alloc, nullptr, &memory), "vkAllocateMemory for ", what,
               " (", format_bytes(req.size), ")");
  out.memory_ = UniqueMemory(device_, memory);
  VKD_VK_CHECK(vkBindBufferMemory(device_, out.handle(), memory, 0), "vkBindBufferMemory for ",
               what);
  out.bound_ = true;
  out.memory_type_ = type;

  const auto flags = memory_props_.memoryTypes[type].propertyFlags;
  out.coherent_ = flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    VKD_VK_CHECK(vkMapMemory(device_, memory, 0, VK_WHOLE_SIZE, 0, &out.mapped_),
                 "vkMapMemory for ", what);
  }
  return out;
}

Image MemoryAllocator::create_image_3d(VkFormat format, VkExtent3D extent,
                                       const std::string& what) const {
  const uint32_t limit = profile_.max_image_dimension_3d;
  VKD_CHECK(extent.width <= limit && extent.height <= limit && extent.depth <= limit,
            ErrorCode::Unsupported, what, " needs a 3-D texture of ", extent.width, "x",
            extent.height, "x", extent.depth, " texels; the device's maxImageDimension3D is ",
            limit, " texels (use buffer storage)");
  Image out;
  out.format_ = format;
  out.extent_ = extent;
  VkImageCreateInfo info{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
  info.imageType = VK_IMAGE_TYPE_3D;
  info.format = format;
  info.extent = extent;
  info.mipLevels = 1;
  info.arrayLayers = 1;
  info.samples = VK_SAMPLE_COUNT_1_BIT;
  info.tiling = VK_IMAGE_TILING_OPTIMAL;
  info.usage = VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
               VK_IMAGE_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  info.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  VkImage image = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateImage(device_, &info, nullptr, &image), "vkCreateImage for ", what);
  out.image_ = UniqueImage(device_, image);

  VkMemoryRequirements req;
  vkGetImageMemoryRequirements(device_, image, &req);
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex =
      select_memory_type(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, what);
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkAllocateMemory(device_, &alloc, nullptr, &memory), "vkAllocateMemory for ", what,
               " (", format_bytes(req.size), ")");
  out.memory_ = UniqueMemory(device_, memory);
  out.memory_type_ = alloc.memoryTypeIndex;
  VKD_VK_CHECK(vkBindImageMemory(device_, image, memory, 0), "vkBindImageMemory for ", what);

  VkImageViewCreateInfo view{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  view.image = image;
  view.viewType = VK_IMAGE_VIEW_TYPE_3D;
  view.format = format;
  view.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  VkImageView view_handle = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateImageView(device_, &view, nullptr, &view_handle), "vkCreateImageView for ",
               what);
  out.view_ = UniqueImageView(device_, view_handle);
  return out;
}

}  // namespace vkd::vk
