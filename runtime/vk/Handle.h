// RAII ownership for Vulkan handles created from a VkDevice: non-copyable, movable, destroyed
// exactly once by the object that created them.
#pragma once

#include <vulkan/vulkan.h>

#include <utility>

namespace vkd::vk {

template <typename T, void (*Destroy)(VkDevice, T, const VkAllocationCallbacks*)>
class DeviceHandle {
 public:
  DeviceHandle() = default;
  DeviceHandle(VkDevice device, T handle) : device_(device), handle_(handle) {}
  ~DeviceHandle() { reset(); }
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;
  DeviceHandle(DeviceHandle&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, VK_NULL_HANDLE)) {}
  DeviceHandle& operator=(DeviceHandle&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
    }
    return *this;
  }

  T get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }
  void reset() {
    if (handle_ != VK_NULL_HANDLE) Destroy(device_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  T handle_ = VK_NULL_HANDLE;
};

using UniqueBuffer = DeviceHandle<VkBuffer, vkDestroyBuffer>;
using UniqueImage = DeviceHandle<VkImage, vkDestroyImage>;
using UniqueImageView = DeviceHandle<VkImageView, vkDestroyImageView>;
using UniqueMemory = DeviceHandle<VkDeviceMemory, vkFreeMemory>;
using UniqueShaderModule = DeviceHandle<VkShaderModule, vkDestroyShaderModule>;
using UniquePipeline = DeviceHandle<VkPipeline, vkDestroyPipeline>;
using UniquePipelineLayout = DeviceHandle<VkPipelineLayout, vkDestroyPipelineLayout>;
using UniquePipelineCache = DeviceHandle<VkPipelineCache, vkDestroyPipelineCache>;
using UniqueDescriptorSetLayout = DeviceHandle<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;
using UniqueDescriptorPool = DeviceHandle<VkDescriptorPool, vkDestroyDescriptorPool>;
using UniqueCommandPool = DeviceHandle<VkCommandPool, vkDestroyCommandPool>;
using UniqueFence = DeviceHandle<VkFence, vkDestroyFence>;
using UniqueQueryPool = DeviceHandle<VkQueryPool, vkDestroyQueryPool>;

// The logical device itself (the owner of everything above): destroyed last by its Context.
class UniqueDevice {
 public:
  UniqueDevice() = default;
  explicit UniqueDevice(VkDevice device) : device_(device) {}
  ~UniqueDevice() {
    if (device_ != VK_NULL_HANDLE) vkDestroyDevice(device_, nullptr);
  }
  UniqueDevice(const UniqueDevice&) = delete;
  UniqueDevice& operator=(const UniqueDevice&) = delete;
  UniqueDevice(UniqueDevice&& other) noexcept
      : device_(std::exchange(other.device_, VK_NULL_HANDLE)) {}
  UniqueDevice& operator=(UniqueDevice&& other) noexcept {
    std::swap(device_, other.device_);
    return *this;
  }
  VkDevice get() const { return device_; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
};

}  // namespace vkd::vk
