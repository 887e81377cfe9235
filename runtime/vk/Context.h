// A Vulkan context: instance, chosen device and its profile, one compute queue, the command
// pool, the memory allocator and the pipeline cache. Everything above this layer reaches the
// GPU through a Context.
#pragma once

#include <vulkan/vulkan.h>

#include <chrono>
#include <memory>
#include <string>

#include "runtime/vk/Commands.h"
#include "runtime/vk/DeviceProfile.h"
#include "runtime/vk/Handle.h"
#include "runtime/vk/Instance.h"
#include "runtime/vk/Memory.h"
#include "runtime/vk/PipelineCache.h"

namespace vkd::vk {

struct ContextOptions {
  std::string device_selector;      // index or name substring; "" = default order
  bool validation = false;          // Khronos validation layer + debug messenger
  std::string pipeline_cache_file;  // "" = no persistent pipeline cache
  std::chrono::milliseconds gpu_timeout{std::chrono::seconds(120)};
  ProfileOverrides overrides;       // switch features off (tests of fallback paths)
  // Ask the driver to keep per-kernel statistics (registers, shared memory, ...) through
  // VK_KHR_pipeline_executable_properties, where the device offers it. Off by default: the
  // driver may keep extra data per pipeline, and only diagnostics tools want it.
  bool capture_kernel_statistics = false;

  // VKD_DEVICE, VKD_VALIDATION, VKD_PIPELINE_CACHE.
  static ContextOptions from_env();
};

class Context {
 public:
  explicit Context(const ContextOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceProfile& profile() const { return profile_; }
  const Instance& instance() const { return *instance_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  const MemoryAllocator& memory() const { return *memory_; }
  PipelineCache& pipelines() { return *pipelines_; }
  // Whether pipelines are built with statistics capture (the option AND the device has it).
  bool captures_kernel_statistics() const { return pipelines_->captures_statistics(); }

  CommandBuffer new_command_buffer();
  // Submits and blocks until the GPU finished; a GPU that does not finish within the
  // configured timeout becomes an error instead of a hang.
  void submit_and_wait(const CommandBuffer& cmd, const std::string& what);

 private:
  ContextOptions options_;
  std::unique_ptr<Instance> instance_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  DeviceProfile profile_;
  VkDevice device_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  std::unique_ptr<MemoryAllocator> memory_;
  std::unique_ptr<PipelineCache> pipelines_;
};

}  // namespace vkd::vk
