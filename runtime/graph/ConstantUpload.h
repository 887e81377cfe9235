// prepare()'s constant upload: every constant's packer run once and its bytes copied to the
// GPU through one host-visible staging buffer of bounded size, freed before prepare() goes on,
// so the memory a load needs stays near the model's own size.
#pragma once

#include <cstdint>

#include "runtime/graph/GraphDefinition.h"
#include "runtime/graph/GraphMemory.h"

namespace vkd::graph {

// Uploads the constants of `graph` (bound by `memory`) through at most `batch_bytes` of staging
// (larger buffer constants are copied in chunks; a texture constant is staged whole), dropping
// each packer once run; the staging and the packed bytes count towards the memory's load peak.
void upload_constants(vk::Context& context, GraphDefinition& graph, GraphMemory& memory,
                      uint64_t batch_bytes);

}  // namespace vkd::graph
