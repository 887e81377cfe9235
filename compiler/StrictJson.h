// JSON parsing shared by the graph IR, safetensors header and partition plan readers: nlohmann's
// parser with duplicate object keys rejected (nlohmann would silently keep the last one) and the
// nesting capped at kMaxJsonDepth. Used by vkd_compiler and model/.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace vkd::compiler {

// The deepest nesting of arrays and objects accepted (the documents read need 5 or 6 levels).
inline constexpr int kMaxJsonDepth = 64;

// InvalidArgument "malformed JSON at byte N: ...", "duplicate key 'k' in JSON object 'o'" or
// "JSON nested deeper than 64 levels ..."; callers prefix the source (file name).
nlohmann::ordered_json parse_json_strict(const std::string& text);

// A JSON integer as int64 (false for floats, bools and unsigned values above INT64_MAX).
bool json_int(const nlohmann::ordered_json& j, int64_t* out);

}  // namespace vkd::compiler
