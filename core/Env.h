// Environment variables the library reads (VKD_DEVICE, VKD_VALIDATION, VKD_WORKGROUP_SIZE, ...):
// Vulkan-free, so the op builders and the Vulkan layer read them the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vkd {

// True when the environment variable is set to something other than "", "0", "false", "off",
// "no" (any case).
bool env_flag(const char* name);
// The variable's text, "" when unset.
std::string env_string(const char* name);
// The variable as a whole number in [lo, hi]; nullopt when unset or empty. Anything else (text,
// a sign, trailing characters, out of range) is an InvalidArgument naming the variable.
std::optional<uint32_t> env_uint(const char* name, uint32_t lo, uint32_t hi);

}  // namespace vkd
