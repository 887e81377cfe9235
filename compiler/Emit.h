// Serializes a compiled graph (every node a backend op with a kernel, every tensor placed) into
// a delegate blob, then reads it back with the validating deserializer against the op schema.
// `source_graph_hash`: graph_ir_hash() of the graph IR it was compiled from (GraphHash.h),
// recorded in the blob's header; 0 records none.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/GraphIR.h"
#include "serialization/DynamicLength.h"

namespace vkd::compiler {

// `dynamic`: the blob's dynamic length table (compiler/DynamicLength.h), none by default.
std::vector<uint8_t> emit_blob(const Graph& g, uint64_t source_graph_hash = 0,
                               const serialization::DynamicLength* dynamic = nullptr);

}  // namespace vkd::compiler
