#include "runtime/vk/Descriptors.h"

#include <algorithm>

#include "runtime/vk/VkError.h"

namespace vkd::vk {

DescriptorPool::DescriptorPool(VkDevice device, const DescriptorTally& tally) : device_(device) {
  std::vector<VkDescriptorPoolSize> sizes;
  if (tally.storage_buffers)
    sizes.push_back({VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, tally.storage_buffers});
  if (tally.storage_images)
    sizes.push_back({VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, tally.storage_images});
  if (tally.uniform_buffers)
    sizes.push_back({VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, tally.uniform_buffers});
  if (sizes.empty()) sizes.push_back({VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1});
  VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  ci.maxSets = std::max(1u, tally.sets);
  ci.poolSizeCount = static_cast<uint32_t>(sizes.size());
  ci.pPoolSizes = sizes.data();
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateDescriptorPool(device_, &ci, nullptr, &pool), "vkCreateDescriptorPool");
  pool_ = UniqueDescriptorPool(device_, pool);
}

VkDescriptorSet DescriptorPool::allocate(VkDescriptorSetLayout layout) {
  VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = pool_.get();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkAllocateDescriptorSets(device_, &ai, &set), "vkAllocateDescriptorSets");
  return set;
}

void DescriptorPool::write(VkDescriptorSet set, const std::vector<DescriptorResource>& resources) {
  std::vector<VkDescriptorBufferInfo> buffers(resources.size());
  std::vector<VkDescriptorImageInfo> images(resources.size());
  std::vector<VkWriteDescriptorSet> writes;
  for (uint32_t i = 0; i < resources.size(); ++i) {
    const auto& r = resources[i];
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = set;
    w.dstBinding = i;
    w.descriptorCount = 1;
    w.descriptorType = r.type;
    if (r.image_view != VK_NULL_HANDLE) {
      images[i] = {VK_NULL_HANDLE, r.image_view, VK_IMAGE_LAYOUT_GENERAL};
      w.pImageInfo = &images[i];
    } else {
      buffers[i] = {r.buffer, 0, r.buffer_bytes};
      w.pBufferInfo = &buffers[i];
    }
    writes.push_back(w);
  }
  vkUpdateDescriptorSets(device_, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
}

}  // namespace vkd::vk
