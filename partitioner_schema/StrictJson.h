// JSON parsing shared by the graph IR and safetensors readers: nlohmann's parser with duplicate
// object keys rejected (nlohmann would silently keep the last one). Internal to vkd_compiler.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vkd::compiler {

// InvalidArgument "malformed JSON at byte N: ..." or "duplicate key 'k' in JSON object 'o'";
// callers prefix the source (file name).
nlohmann::ordered_json parse_json_strict(const std::string& text);

}  // namespace vkd::compiler
