// A Vulkan context: instance, chosen device and its profile, one compute queue, the command
// pool, the memory allocator and the pipeline cache. Everything above this layer reaches the
// GPU through a Context.
#pragma once

#include <vulkan/vulkan.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/vk/Commands.h"
#include "runtime/vk/CopyWorkers.h"
#include "runtime/vk/DeviceProfile.h"
#include "runtime/vk/Handle.h"
#include "runtime/vk/Instance.h"
#include "runtime/vk/Memory.h"
#include "runtime/vk/PipelineCache.h"

namespace vkd::vk {

// ContextOptions::pipeline_cache_file (and VKD_PIPELINE_CACHE) value: no persistent cache.
inline constexpr const char* kPipelineCacheOff = "off";

struct ContextOptions {
  std::string device_selector;  // index or name substring; "" = default order
  bool validation = false;      // Khronos validation layer + debug messenger
  // Where the VkPipelineCache persists between processes: "" = the per-user default file
  // (default_pipeline_cache_file), kPipelineCacheOff ("off") = nowhere, else this file.
  std::string pipeline_cache_file;
  std::chrono::milliseconds gpu_timeout{std::chrono::seconds(120)};
  ProfileOverrides overrides;  // switch features off (tests of fallback paths)
  // Ask the driver to keep per-kernel statistics (registers, shared memory, ...) through
  // VK_KHR_pipeline_executable_properties, where the device offers it. Off by default: the
  // driver may keep extra data per pipeline, and only diagnostics tools want it.
  bool capture_kernel_statistics = false;
  // How long submit_and_wait() polls the fence before it sleeps in vkWaitForFences, in
  // microseconds; unset = the device profile's choice (fence_spin_us). A sleeping wait wakes
  // up tens to hundreds of microseconds after the GPU finished on some drivers, which is more
  // than a small model's whole GPU time; polling keeps one CPU core busy meanwhile.
  std::optional<uint32_t> fence_spin_us;
  // How many pipelines a graph creates at once (PipelineCache::get_all); unset = the device
  // profile's pipeline_threads, 1 = one after the other on the calling thread.
  std::optional<uint32_t> pipeline_threads;
  // How many host threads share an execute's large input / output copy (CopyWorkers); unset =
  // the device profile's host_copy_threads, 1 = the calling thread alone.
  std::optional<uint32_t> host_copy_threads;

  // VKD_DEVICE, VKD_VALIDATION, VKD_PIPELINE_CACHE, VKD_FENCE_SPIN_US, VKD_PIPELINE_THREADS,
  // VKD_HOST_COPY_THREADS, VKD_DEVICE_CLASS (overrides.device_class; an unknown name is an
  // error listing the classes).
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
  VkDevice device() const { return device_.get(); }
  VkQueue queue() const { return queue_; }
  const MemoryAllocator& memory() const { return *memory_; }
  PipelineCache& pipelines() { return *pipelines_; }
  // The threads that share an execute's large host copies (ContextOptions::host_copy_threads).
  CopyWorkers& host_copies() { return *host_copies_; }
  // Whether pipelines are built with statistics capture (the option AND the device has it).
  bool captures_kernel_statistics() const { return pipelines_->captures_statistics(); }

  CommandBuffer new_command_buffer();
  // Submits and blocks until the GPU finished. A GPU that does not finish within the
  // configured timeout throws ErrorCode::Timeout instead of hanging; the submission stays in
  // flight (its fence is kept), so the caller must keep everything it uses alive: objects it
  // owns go to keep_until_idle(), and owners of longer-lived objects call wait_idle() before
  // destroying them when timed_out(). The context stays poisoned: every later submission
  // throws Timeout too.
  void submit_and_wait(const CommandBuffer& cmd, const std::string& what);
  // After a timeout: `object` is destroyed only once the device is idle (wait_idle() or the
  // destructor), never while the timed-out submission may still use it.
  void keep_until_idle(std::shared_ptr<void> object);
  bool timed_out() const { return timed_out_; }
  // Blocks until the device has finished everything submitted (no timeout: a driver reports a
  // hung GPU as VK_ERROR_DEVICE_LOST), then frees what keep_until_idle() held.
  void wait_idle();
  // For tests of the timeout path.
  void set_gpu_timeout(std::chrono::milliseconds timeout) { options_.gpu_timeout = timeout; }

 private:
  ContextOptions options_;
  std::unique_ptr<Instance> instance_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  DeviceProfile profile_;
  // RAII members in dependency order: a constructor that throws part-way (e.g. a refused
  // pipeline cache file) destroys what it made, in reverse.
  UniqueDevice device_;
  uint32_t queue_family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  UniqueCommandPool command_pool_;
  std::unique_ptr<MemoryAllocator> memory_;
  std::unique_ptr<PipelineCache> pipelines_;
  std::unique_ptr<CopyWorkers> host_copies_;
  bool timed_out_ = false;
  std::string timed_out_what_;                          // the submission that timed out
  std::vector<std::shared_ptr<void>> kept_until_idle_;  // includes the timed-out fence
  // Two fences taking turns (creating one per execute costs a driver call on the latency path):
  // fence_ unsignalled for the next submission, spare_fence_ the last one's, reset during the
  // next (spare_signalled_ until then).
  UniqueFence fence_;
  UniqueFence spare_fence_;
  bool spare_signalled_ = false;
  uint32_t fence_spin_us_ = 0;

  void wait_for_fence(const std::string& what);
};

}  // namespace vkd::vk
