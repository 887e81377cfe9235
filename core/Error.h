// The one error type used inside the library. Everything below the API boundary throws
// vkd::Error; the boundary (CLI, custom-op binary, delegate API) catches it and turns it into
// a message and a status. No abort(), no exit() inside the library.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace vkd {

enum class ErrorCode {
  InvalidArgument,  // the caller gave something malformed (shape, dtype, layout, file)
  Unsupported,      // valid request the device or the library cannot serve
  OutOfMemory,
  DeviceLost,
  VulkanFailure,  // any other failed Vulkan call
  Internal,
  // The GPU did not finish a submission within the configured time. The work is still in
  // flight: everything it uses stays alive until the device is idle (vk::Context).
  Timeout,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

const char* to_string(ErrorCode code);

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace vkd

// VKD_CHECK(cond, code, message parts...): throws vkd::Error(code, "message") when !cond.
#define VKD_CHECK(cond, code, ...)                                    \
  do {                                                                \
    if (!(cond)) {                                                    \
      throw ::vkd::Error((code), ::vkd::detail::concat(__VA_ARGS__)); \
    }                                                                 \
  } while (0)

#define VKD_THROW(code, ...) throw ::vkd::Error((code), ::vkd::detail::concat(__VA_ARGS__))
