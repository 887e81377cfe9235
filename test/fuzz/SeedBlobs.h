// Real delegate blobs for fuzz_load_blob's seed corpus: every op with a kernel, called with
// the argument order of partitioner_schema/ops/, on small shapes (one execution on
// lavapipe takes milliseconds), and the conv2d / linear routes each taken at least once.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vkd::fuzz {

// (name, blob) pairs; each blob passes deserialize() with the runtime's op signatures.
std::vector<std::pair<std::string, std::vector<uint8_t>>> op_seed_blobs();

}  // namespace vkd::fuzz
