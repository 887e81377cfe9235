// The input format of fuzz_partition_plan: a partition plan's JSON text, then the files beside
// it, each as kFileSeparator, its name, a NUL and its bytes (up to the next separator or the
// end). JSON text never holds a NUL byte, so the first separator ends the plan; a blob holding
// the separator itself would be cut there (a seed is checked not to). make_seed_corpus writes
// inputs in this format: the plan `vkd compile --partition` writes, its blobs and, where the
// host steps read constants, "weights.safetensors".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vkd::fuzz {

inline constexpr std::string_view kFileSeparator{"\0VKD-FILE\0", 10};
// The file the harness passes as the weights (ModelOptions::weights_path) when the input has it.
inline constexpr std::string_view kWeightsFileName{"weights.safetensors"};

struct PlanInput {
  std::string_view plan;
  std::vector<std::pair<std::string_view, std::string_view>> files;  // (name, bytes)
};

inline PlanInput split_plan_input(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  PlanInput in;
  size_t at = all.find(kFileSeparator);
  in.plan = all.substr(0, at);
  while (at != std::string_view::npos) {
    const size_t start = at + kFileSeparator.size();
    at = all.find(kFileSeparator, start);
    const std::string_view part = all.substr(start, at == std::string_view::npos ? at : at - start);
    const size_t nul = part.find('\0');
    if (nul == std::string_view::npos) continue;  // no name: not a file
    in.files.emplace_back(part.substr(0, nul), part.substr(nul + 1));
  }
  return in;
}

inline std::string join_plan_input(const std::string& plan,
                                   const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out = plan;
  for (const auto& [name, bytes] : files) {
    out.append(kFileSeparator);
    out += name;
    out += '\0';
    out += bytes;
  }
  return out;
}

}  // namespace vkd::fuzz
