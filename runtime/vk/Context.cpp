#include "runtime/vk/Context.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "core/Env.h"
#include "runtime/vk/VkError.h"

namespace vkd::vk {

ContextOptions ContextOptions::from_env() {
  ContextOptions o;
  o.device_selector = env_string("VKD_DEVICE");
  o.validation = env_flag("VKD_VALIDATION");
  o.pipeline_cache_file = env_string("VKD_PIPELINE_CACHE");
  if (const auto spin = env_uint("VKD_FENCE_SPIN_US", 0, 60000000)) o.fence_spin_us = *spin;
  if (const auto threads = env_uint("VKD_PIPELINE_THREADS", 1, 64)) o.pipeline_threads = *threads;
  if (const auto threads = env_uint("VKD_HOST_COPY_THREADS", 1, 64)) o.host_copy_threads = *threads;
  const std::string device_class = env_string("VKD_DEVICE_CLASS");
  if (!device_class.empty()) {
    o.overrides.device_class = find_device_class(device_class);
    VKD_CHECK(o.overrides.device_class != nullptr, ErrorCode::InvalidArgument,
              "VKD_DEVICE_CLASS: unknown device class '", device_class,
              "'; the classes are: ", device_class_names());
  }
  return o;
}

Context::Context(const ContextOptions& options) : options_(options) {
  // A device class's drivers offer its API version: the instance asks for no newer one, so
  // the device is used (and validated) as that version.
  const DeviceClass* device_class = options.overrides.device_class;
  instance_ = std::make_unique<Instance>(
      options.validation,
      device_class ? VK_MAKE_API_VERSION(0, 1, device_class->api_minor, 0) : VK_API_VERSION_1_3);
  const auto chosen = instance_->select(options.device_selector);
  physical_ = chosen.handle;
  EnabledExtensions ext;
  profile_ = read_device_profile(instance_->handle(), instance_->api_version(), physical_,
                                 options.overrides, &ext);
  VKD_CHECK(profile_.unusable.empty(), ErrorCode::Unsupported, "device '", profile_.name,
            "': ", profile_.unusable);

  VKD_CHECK(profile_.queue_family.has_value(), ErrorCode::Unsupported, "device '", profile_.name,
            "' has no compute queue");
  queue_family_ = *profile_.queue_family;

  // Enable exactly the features the profile reports (after overrides, so a switched-off
  // feature cannot be used by accident).
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  dot.shaderIntegerDotProduct = profile_.int8_dot_product;
  VkPhysicalDevice8BitStorageFeatures s8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  s8.storageBuffer8BitAccess = profile_.storage_8bit;
  VkPhysicalDevice16BitStorageFeatures s16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  s16.storageBuffer16BitAccess = profile_.storage_16bit;
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  f16i8.shaderInt8 = profile_.int8_arithmetic;
  f16i8.shaderFloat16 = profile_.float16_arithmetic;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_nv{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  coop_nv.cooperativeMatrix = VK_TRUE;
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  memory_model.vulkanMemoryModel = VK_TRUE;
  memory_model.vulkanMemoryModelDeviceScope = profile_.memory_model_device_scope;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_info{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  executable_info.pipelineExecutableInfo = VK_TRUE;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  // Each structure only where a feature of it is on: the profile reports a 1.2 one (8-bit
  // storage, int8 / float16 arithmetic) only where the version or its extension defines it.
  void** tail = &features.pNext;
  std::vector<const char*> extensions;
  *tail = &s16;  // core 1.1
  tail = &s16.pNext;
  if (profile_.storage_8bit) {
    *tail = &s8;
    tail = &s8.pNext;
  }
  if (profile_.int8_arithmetic || profile_.float16_arithmetic) {
    *tail = &f16i8;
    tail = &f16i8.pNext;
    if (ext.float16_int8) extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }
  // A portability driver (MoltenVK) requires the subset extension enabled.
  if (ext.portability_subset) extensions.push_back("VK_KHR_portability_subset");
  if (profile_.int8_dot_product) {
    *tail = &dot;
    tail = &dot.pNext;
    if (ext.integer_dot_product)
      extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }
  if (ext.storage_8bit && profile_.storage_8bit)
    extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  if (profile_.vulkan_memory_model) {
    *tail = &memory_model;
    tail = &memory_model.pNext;
  }
  if (profile_.cooperative_matrix_nv) {
    *tail = &coop_nv;
    tail = &coop_nv.pNext;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  // Diagnostics only, so only on request: a device without it still runs everything.
  const bool capture_statistics =
      options.capture_kernel_statistics && profile_.pipeline_executable_info;
  if (capture_statistics) {
    *tail = &executable_info;
    tail = &executable_info.pNext;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.pNext = &features;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  di.ppEnabledExtensionNames = extensions.data();
  VkDevice device = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateDevice(physical_, &di, nullptr, &device), "vkCreateDevice for '",
               profile_.name, "'");
  device_ = UniqueDevice(device);
  vkGetDeviceQueue(device, queue_family_, 0, &queue_);

  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = queue_family_;
  VkCommandPool pool = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateCommandPool(device, &pi, nullptr, &pool), "vkCreateCommandPool");
  command_pool_ = UniqueCommandPool(device, pool);
  memory_ = std::make_unique<MemoryAllocator>(physical_, device, profile_);
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  for (UniqueFence* f : {&fence_, &spare_fence_}) {
    VkFence fence = VK_NULL_HANDLE;
    VKD_VK_CHECK(vkCreateFence(device, &fi, nullptr, &fence), "vkCreateFence");
    *f = UniqueFence(device, fence);
  }
  fence_spin_us_ = options.fence_spin_us.value_or(profile_.fence_spin_us);
  host_copies_ =
      std::make_unique<CopyWorkers>(options.host_copy_threads.value_or(profile_.host_copy_threads));
  PipelineCacheFile cache_file;
  if (options.pipeline_cache_file.empty()) {
    cache_file = {default_pipeline_cache_file(profile_), true};
  } else if (options.pipeline_cache_file != kPipelineCacheOff) {
    cache_file = {options.pipeline_cache_file, false};
  }
  pipelines_ = std::make_unique<PipelineCache>(device, profile_, std::move(cache_file),
                                               capture_statistics, options.pipeline_threads);
}

Context::~Context() {
  vkDeviceWaitIdle(device_.get());
  kept_until_idle_.clear();
  if (pipelines_) {
    try {
      pipelines_->save();
    } catch (const Error& e) {
      std::fprintf(stderr, "vkd: warning: %s\n", e.what());
    }
  }
  // The rest in reverse order of creation, by the members' destructors.
}

CommandBuffer Context::new_command_buffer() {
  return CommandBuffer(device_.get(), command_pool_.get());
}

void Context::submit_and_wait(const CommandBuffer& cmd, const std::string& what) {
  // Submitting after a timeout could overlap work with the stuck submission over the same
  // memory; the context says so instead.
  VKD_CHECK(!timed_out_, ErrorCode::Timeout, what, ": refused, '", timed_out_what_,
            "' did not finish within ", options_.gpu_timeout.count(),
            " ms earlier; destroy this delegate (or context) and create a new one");
  VkCommandBuffer handle = cmd.handle();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &handle;
  VKD_VK_CHECK(vkQueueSubmit(queue_, 1, &si, fence_.get()), "vkQueueSubmit (", what, ")");
  // The previous submission's fence is reset while the GPU runs this one (not after the wait,
  // on the caller's time); the two then trade places.
  if (spare_signalled_) {
    VkFence spare = spare_fence_.get();
    VKD_VK_CHECK(vkResetFences(device_.get(), 1, &spare), "vkResetFences (", what, ")");
    spare_signalled_ = false;
  }
  wait_for_fence(what);
  std::swap(fence_, spare_fence_);
  spare_signalled_ = true;
}

// Polls for up to fence_spin_us_, then sleeps in vkWaitForFences for the rest of the timeout.
void Context::wait_for_fence(const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Never polls past the GPU timeout.
  const auto spin_end =
      start + std::min<std::chrono::nanoseconds>(std::chrono::microseconds(fence_spin_us_),
                                                 options_.gpu_timeout);
  VkResult r = VK_NOT_READY;
  while (fence_spin_us_ > 0) {
    r = vkGetFenceStatus(device_.get(), fence_.get());
    if (r != VK_NOT_READY || Clock::now() >= spin_end) break;
  }
  if (r == VK_NOT_READY) {
    const auto left = options_.gpu_timeout -
                      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
    const uint64_t timeout_ns = static_cast<uint64_t>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(left).count()));
    VkFence fence = fence_.get();
    r = vkWaitForFences(device_.get(), 1, &fence, VK_TRUE, timeout_ns);
  }
  if (r == VK_TIMEOUT) {
    // The submission is still pending: its fence may not be destroyed yet, so it is kept
    // until the device is idle and the context refuses further submissions.
    timed_out_ = true;
    timed_out_what_ = what;
    keep_until_idle(std::make_shared<UniqueFence>(std::move(fence_)));
    VKD_THROW(ErrorCode::Timeout, what, ": the GPU did not finish within ",
              options_.gpu_timeout.count(),
              " ms (gpu_timeout_ms); the work is still running, "
              "destroy this delegate (or context) and create a new one");
  }
  check(r, "vkWaitForFences (" + what + ")");
}

void Context::keep_until_idle(std::shared_ptr<void> object) {
  kept_until_idle_.push_back(std::move(object));
}

void Context::wait_idle() {
  const VkResult r = vkDeviceWaitIdle(device_.get());
  kept_until_idle_.clear();
  check(r, "vkDeviceWaitIdle");
}

}  // namespace vkd::vk
