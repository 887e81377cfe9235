// Turning VkResult into vkd::Error: every failed Vulkan call names the result and what was
// being done ("vkCreateBuffer for tensor 'x' (4.0 MiB): VK_ERROR_OUT_OF_DEVICE_MEMORY").
#pragma once

#include <vulkan/vulkan.h>

#include "core/Error.h"

namespace vkd::vk {

const char* result_name(VkResult result);

// Throws vkd::Error (OutOfMemory / DeviceLost / VulkanFailure) unless result is VK_SUCCESS.
void check(VkResult result, const std::string& what);

}  // namespace vkd::vk

#define VKD_VK_CHECK(call, ...) ::vkd::vk::check((call), ::vkd::detail::concat(__VA_ARGS__))
