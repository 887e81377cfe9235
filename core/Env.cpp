#include "core/Env.h"

#include <cctype>
#include <cstdlib>

#include "core/Error.h"

namespace vkd {

bool env_flag(const char* name) {
  std::string s = env_string(name);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !(s.empty() || s == "0" || s == "false" || s == "off" || s == "no");
}

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::optional<uint32_t> env_uint(const char* name, uint32_t lo, uint32_t hi) {
  const std::string text = env_string(name);
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  bool digits = text.size() <= 10;
  for (char c : text) {
    digits = digits && c >= '0' && c <= '9';
    if (digits) value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  VKD_CHECK(digits && value >= lo && value <= hi, ErrorCode::InvalidArgument,
            "environment variable ", name, "='", text, "' is not a whole number in [", lo, ", ", hi,
            "]");
  return static_cast<uint32_t>(value);
}

}  // namespace vkd
