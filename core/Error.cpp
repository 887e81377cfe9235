#include "core/Error.h"

namespace vkd {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::OutOfMemory: return "out of memory";
    case ErrorCode::DeviceLost: return "device lost";
    case ErrorCode::VulkanFailure: return "Vulkan failure";
    case ErrorCode::Internal: return "internal error";
    case ErrorCode::Timeout: return "timeout";
  }
  return "unknown error";
}

}  // namespace vkd
