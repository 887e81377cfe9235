// Serializes a compiled graph (every node a backend op with a kernel, every tensor placed) into
// a delegate blob, then reads it back with the validating deserializer against the op schema.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/GraphIR.h"

namespace vkd::compiler {

std::vector<uint8_t> emit_blob(const Graph& g);

}  // namespace vkd::compiler
