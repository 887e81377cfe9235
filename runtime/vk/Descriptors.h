// A descriptor pool sized exactly from what a graph will allocate, and descriptor-set writes.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "runtime/vk/Handle.h"

namespace vkd::vk {

struct DescriptorTally {
  uint32_t sets = 0;
  uint32_t storage_buffers = 0;
  uint32_t storage_images = 0;
  uint32_t uniform_buffers = 0;
};

// One resource bound at one binding index; exactly one of buffer/image_view is set.
struct DescriptorResource {
  VkDescriptorType type;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize buffer_bytes = VK_WHOLE_SIZE;
  VkImageView image_view = VK_NULL_HANDLE;
};

class DescriptorPool {
 public:
  DescriptorPool() = default;
  DescriptorPool(VkDevice device, const DescriptorTally& tally);
  VkDescriptorSet allocate(VkDescriptorSetLayout layout);
  void write(VkDescriptorSet set, const std::vector<DescriptorResource>& resources);

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  UniqueDescriptorPool pool_;
};

}  // namespace vkd::vk
