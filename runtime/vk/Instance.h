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
  // `max_api_version`: the newest Vulkan API the instance asks for (at most 1.3 and the
  // loader's); a device class's version, so that a newer device is used as that version
  // (and the validation layer holds it to that version's rules).
  explicit Instance(bool validation, uint32_t max_api_version = VK_API_VERSION_1_3);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  // The API version the instance was created for: a device is used as min(this, its own).
  uint32_t api_version() const { return api_version_; }
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }
  const ValidationLog& validation_log() const { return *log_; }
  std::vector<PhysicalDeviceSummary> devices() const;

  // Picks a device: `selector` is an index or a case-insensitive name substring; empty means
  // the default order discrete > integrated > virtual > CPU > other.
  PhysicalDeviceSummary select(const std::string& selector) const;

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  uint32_t api_version_ = VK_API_VERSION_1_1;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::unique_ptr<ValidationLog> log_;
};

}  // namespace vkd::vk
