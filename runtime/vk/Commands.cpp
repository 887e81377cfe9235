#include "runtime/vk/Commands.h"

#include <utility>

#include "runtime/vk/VkError.h"

namespace vkd::vk {

CommandBuffer::CommandBuffer(VkDevice device, VkCommandPool pool) : device_(device), pool_(pool) {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VKD_VK_CHECK(vkAllocateCommandBuffers(device, &ai, &cmd_), "vkAllocateCommandBuffers");
}

CommandBuffer::~CommandBuffer() { release(); }

CommandBuffer::CommandBuffer(CommandBuffer&& o) noexcept
    : device_(o.device_), pool_(o.pool_), cmd_(std::exchange(o.cmd_, VK_NULL_HANDLE)) {}

CommandBuffer& CommandBuffer::operator=(CommandBuffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    pool_ = o.pool_;
    cmd_ = std::exchange(o.cmd_, VK_NULL_HANDLE);
  }
  return *this;
}

void CommandBuffer::release() {
  if (cmd_ != VK_NULL_HANDLE) vkFreeCommandBuffers(device_, pool_, 1, &cmd_);
  cmd_ = VK_NULL_HANDLE;
}

void CommandBuffer::begin(bool one_time) {
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = one_time ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0;
  VKD_VK_CHECK(vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer");
}

void CommandBuffer::end() { VKD_VK_CHECK(vkEndCommandBuffer(cmd_), "vkEndCommandBuffer"); }

void CommandBuffer::memory_barrier() {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

void CommandBuffer::compute_barrier() {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0,
                       nullptr);
}

void CommandBuffer::image_to_general(VkImage image) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = 0;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  b.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
  b.newLayout = VK_IMAGE_LAYOUT_GENERAL;
  b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.image = image;
  b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, nullptr, 0, nullptr, 1, &b);
}

void CommandBuffer::image_layout(VkImage image, VkImageLayout from, VkImageLayout to) {
  VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.oldLayout = from;
  b.newLayout = to;
  b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b.image = image;
  b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd_, stages, stages, 0, 0, nullptr, 0, nullptr, 1, &b);
}

void CommandBuffer::host_read_barrier() {
  // Shader writes too: a graph output bound in host-visible memory is written by its dispatch.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

void CommandBuffer::copy_buffer(VkBuffer from, VkBuffer to, const VkBufferCopy& region) {
  vkCmdCopyBuffer(cmd_, from, to, 1, &region);
}

void CommandBuffer::copy_buffer_to_image(VkBuffer from, VkImage to, VkImageLayout layout,
                                         const VkBufferImageCopy& region) {
  vkCmdCopyBufferToImage(cmd_, from, to, layout, 1, &region);
}

void CommandBuffer::copy_image_to_buffer(VkImage from, VkImageLayout layout, VkBuffer to,
                                         const VkBufferImageCopy& region) {
  vkCmdCopyImageToBuffer(cmd_, from, layout, to, 1, &region);
}

void CommandBuffer::bind_compute_pipeline(VkPipeline pipeline) {
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
}

void CommandBuffer::bind_descriptor_set(VkPipelineLayout layout, VkDescriptorSet set) {
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
}

void CommandBuffer::push_constants(VkPipelineLayout layout, const void* data, uint32_t bytes) {
  vkCmdPushConstants(cmd_, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, bytes, data);
}

void CommandBuffer::dispatch(uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
  vkCmdDispatch(cmd_, groups_x, groups_y, groups_z);
}

void CommandBuffer::reset_queries(VkQueryPool pool, uint32_t first, uint32_t count) {
  vkCmdResetQueryPool(cmd_, pool, first, count);
}

void CommandBuffer::write_timestamp(VkQueryPool pool, uint32_t query) {
  vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, query);
}

}  // namespace vkd::vk
