// The input format of fuzz_graph_ir: the graph IR JSON text, optionally followed by
// kWeightsSeparator and the bytes of a safetensors file holding the weights its values name
// in "data". JSON text never holds a NUL byte, so the first separator splits the input.
// make_seed_corpus writes inputs in this format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace vkd::fuzz {

inline constexpr std::string_view kWeightsSeparator{"\0VKD-SAFETENSORS\0", 17};

// (json, weights): weights is nullopt when the input has no separator.
inline std::pair<std::string_view, std::optional<std::string_view>> split_graph_ir_input(
    const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t at = all.find(kWeightsSeparator);
  if (at == std::string_view::npos) return {all, std::nullopt};
  return {all.substr(0, at), all.substr(at + kWeightsSeparator.size())};
}

}  // namespace vkd::fuzz
