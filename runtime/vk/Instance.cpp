#include "runtime/vk/Instance.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/vk/VkError.h"

namespace vkd::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

// Prints and counts the validation layer's messages about the application's use of Vulkan
// (type VALIDATION or PERFORMANCE). GENERAL ones are the loader's and the layers' own news, such
// as an ICD manifest of another architecture on a multiarch machine ("Failed loading library");
// nothing the application does changes them, and VK_LOADER_DEBUG=error shows them.
VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  const bool is_error = severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  const char* message = data->pMessage ? data->pMessage : "";
  const bool about_usage = type & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT);
  if (!about_usage) return VK_FALSE;
  static_cast<ValidationLog*>(user)->add(is_error, message);
  std::fprintf(stderr, "[vkd validation %s] %s\n", is_error ? "error" : "warning", message);
  return VK_FALSE;
}

int type_rank(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

bool layer_available(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

bool instance_extension_available(const char* name) {
  uint32_t count = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateInstanceExtensionProperties(nullptr, &count, extensions.data());
  return std::any_of(extensions.begin(), extensions.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

}  // namespace

void ValidationLog::add(bool is_error, const char* message) {
  (is_error ? errors_ : warnings_)++;
  std::lock_guard<std::mutex> lock(mutex_);
  messages_.emplace_back(message);
}

std::vector<std::string> ValidationLog::messages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return messages_;
}

const char* device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

Instance::Instance(bool validation, uint32_t max_api_version)
    : log_(std::make_unique<ValidationLog>()) {
  VKD_CHECK(!validation || layer_available(kValidationLayer), ErrorCode::Unsupported,
            "validation requested (VKD_VALIDATION=1) but ", kValidationLayer,
            " is not installed (Debian package vulkan-validationlayers)");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkdelegate";
  app.pEngineName = "vkdelegate";
  // Ask for the newest API the loader offers, up to 1.3 (core integer dot product). 1.1 at
  // least: the kernels are SPIR-V 1.3 with subgroup operations, and the device queries are
  // vkGetPhysicalDeviceProperties2's.
  uint32_t loader_version = VK_API_VERSION_1_0;
  vkEnumerateInstanceVersion(&loader_version);
  VKD_CHECK(loader_version >= VK_API_VERSION_1_1, ErrorCode::Unsupported,
            "the Vulkan loader offers API 1.0; vkdelegate needs 1.1 or newer (update libvulkan1)");
  api_version_ = std::max<uint32_t>(
      VK_API_VERSION_1_1, std::min({loader_version, VK_API_VERSION_1_3, max_api_version}));
  app.apiVersion = api_version_;

  std::vector<const char*> layers, extensions;
  // Portability drivers (MoltenVK on macOS and iOS) are only listed to an instance that
  // enumerates them; their devices then enable VK_KHR_portability_subset (Context).
  VkInstanceCreateFlags flags = 0;
  if (instance_extension_available(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = on_validation_message;
  messenger_info.pUserData = log_.get();
  if (validation) {
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  if (validation) info.pNext = &messenger_info;  // also catches create/destroy-time messages
  VKD_VK_CHECK(vkCreateInstance(&info, nullptr, &instance_),
               "vkCreateInstance (is a Vulkan driver installed? e.g. mesa-vulkan-drivers)");

  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create) {
      VkResult r = create(instance_, &messenger_info, nullptr, &messenger_);
      if (r != VK_SUCCESS) {
        vkDestroyInstance(instance_, nullptr);
        check(r, "vkCreateDebugUtilsMessengerEXT");
      }
    }
  }
}

Instance::~Instance() {
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

std::vector<PhysicalDeviceSummary> Instance::devices() const {
  uint32_t count = 0;
  VKD_VK_CHECK(vkEnumeratePhysicalDevices(instance_, &count, nullptr),
               "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> handles(count);
  VKD_VK_CHECK(vkEnumeratePhysicalDevices(instance_, &count, handles.data()),
               "vkEnumeratePhysicalDevices");
  std::vector<PhysicalDeviceSummary> out;
  for (uint32_t i = 0; i < count; ++i) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(handles[i], &props);
    out.push_back({i, props.deviceName, props.deviceType, props.apiVersion, handles[i]});
  }
  return out;
}

PhysicalDeviceSummary Instance::select(const std::string& selector) const {
  const auto all = devices();
  VKD_CHECK(!all.empty(), ErrorCode::Unsupported,
            "no Vulkan device found (install a driver, e.g. mesa-vulkan-drivers for lavapipe)");
  if (selector.empty()) {
    return *std::min_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return type_rank(a.type) < type_rank(b.type);
    });
  }
  const bool numeric = std::all_of(selector.begin(), selector.end(),
                                   [](unsigned char ch) { return std::isdigit(ch); });
  if (numeric) {
    const unsigned long index = std::stoul(selector);
    VKD_CHECK(index < all.size(), ErrorCode::InvalidArgument, "device index ", index,
              " out of range: ", all.size(), " Vulkan device(s) present");
    return all[index];
  }
  for (const auto& d : all) {
    if (lower(d.name).find(lower(selector)) != std::string::npos) return d;
  }
  std::string names;
  for (const auto& d : all) names += (names.empty() ? "" : ", ") + d.name;
  VKD_THROW(ErrorCode::InvalidArgument, "no Vulkan device matches '", selector,
            "'; available: ", names);
}

}  // namespace vkd::vk
