// Command buffers (RAII, from the context's pool), recording helpers and fenced submission.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <string>

namespace vkd::vk {

class CommandBuffer {
 public:
  CommandBuffer() = default;
  CommandBuffer(VkDevice device, VkCommandPool pool);
  ~CommandBuffer();
  CommandBuffer(CommandBuffer&& other) noexcept;
  CommandBuffer& operator=(CommandBuffer&& other) noexcept;
  CommandBuffer(const CommandBuffer&) = delete;
  CommandBuffer& operator=(const CommandBuffer&) = delete;

  VkCommandBuffer handle() const { return cmd_; }
  void begin(bool one_time);
  void end();

  // A full compute/transfer memory barrier: every earlier shader or transfer write is visible
  // to every later shader or transfer access.
  void memory_barrier();
  // A compute-to-compute barrier: every earlier shader write is visible to every later shader
  // access. What consecutive dispatches need; cheaper than memory_barrier() on drivers that
  // sync the transfer engine for a barrier naming the transfer stage.
  void compute_barrier();
  void image_to_general(VkImage image);
  // Layout change for a copy in or out of an image that shaders use in GENERAL; waits for and
  // is waited on by every compute and transfer access.
  void image_layout(VkImage image, VkImageLayout from, VkImageLayout to);
  // Every earlier transfer or shader write is visible to the host once the submission's fence
  // signals (what reading an output staging buffer needs).
  void host_read_barrier();

  void copy_buffer(VkBuffer from, VkBuffer to, const VkBufferCopy& region);
  // The image is in `layout` (TRANSFER_DST_OPTIMAL / TRANSFER_SRC_OPTIMAL: see image_layout).
  void copy_buffer_to_image(VkBuffer from, VkImage to, VkImageLayout layout,
                            const VkBufferImageCopy& region);
  void copy_image_to_buffer(VkImage from, VkImageLayout layout, VkBuffer to,
                            const VkBufferImageCopy& region);

  // Compute dispatch: the pipeline, its one descriptor set (set 0), the push-constant block
  // (from byte 0, compute stage) and the workgroup counts.
  void bind_compute_pipeline(VkPipeline pipeline);
  void bind_descriptor_set(VkPipelineLayout layout, VkDescriptorSet set);
  void push_constants(VkPipelineLayout layout, const void* data, uint32_t bytes);
  void dispatch(uint32_t groups_x, uint32_t groups_y, uint32_t groups_z);

  // Timestamp queries (runtime/vk/TimestampQueries.h): queries [first, first + count) reset
  // before they are written again; a timestamp written once every earlier command completed.
  void reset_queries(VkQueryPool pool, uint32_t first, uint32_t count);
  void write_timestamp(VkQueryPool pool, uint32_t query);

 private:
  void release();
  VkDevice device_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
};

}  // namespace vkd::vk
