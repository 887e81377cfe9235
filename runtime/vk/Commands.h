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

 private:
  void release();
  VkDevice device_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
};

}  // namespace vkd::vk
