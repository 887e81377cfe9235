// The Vulkan instance, the optional Khronos validation layer and physical-device selection.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace vkd::vk {

struct PhysicalDeviceSummary {
  uint32_t index;
  std::string name;
  VkPhysicalDeviceType type;
  uint32_t api_version;
  VkPhysicalDevice handle;
};

const char* device_type_name(VkPhysicalDeviceType type);

// Messages the validation layer reported (errors and warnings), shared by every context of
// the instance. Tests fail on any.
class ValidationLog {
 public:
  void add(bool is_error, const char* message);
  uint32_t error_count() const { return errors_.load(); }
  uint32_t warning_count() const { return warnings_.load(); }
  std::vector<std::string> messages() const;

 private:
  std::atomic<uint32_t> errors_{0}, warnings_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

class Instance {
 public:
  // `validation`: enable VK_LAYER_KHRONOS_validation (error if the layer is not installed).
  explicit Instance(bool validation);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }
  const ValidationLog& validation_log() const { return *log_; }
  std::vector<PhysicalDeviceSummary> devices() const;

  // Picks a device: `selector` is an index or a case-insensitive name substring; empty means
  // the default order discrete > integrated > virtual > CPU > other.
  PhysicalDeviceSummary select(const std::string& selector) const;

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::unique_ptr<ValidationLog> log_;
};

}  // namespace vkd::vk
