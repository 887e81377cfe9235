// JSON parsing shared by the graph IR and safetensors readers: nlohmann's parser with duplicate
// object keys rejected (nlohmann would silently keep the last one). Internal to vkd_compiler.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace vkd::compiler {

// InvalidArgument "malformed JSON at byte N: ..." or "duplicate key 'k' in JSON object 'o'";
// callers prefix the source (file name).
nlohmann::ordered_json parse_json_strict(const std::string& text);

// A JSON integer as int64 (false for floats, bools and unsigned values above INT64_MAX).
bool json_int(const nlohmann::ordered_json& j, int64_t* out);

}  // namespace vkd::compiler
