// q8ta_embedding / embedding / embedding_add: rows of a constant table gathered by int32 token
// ids (aten.embedding), int8 (requantized by the compiler) or float32 (plus up to two float32
// tensors added in order: embedding_add).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"

namespace vkd::ops {

struct EmbeddingParams {
  int64_t rows = 0, cols = 0;  // the table is [rows, cols] = [V, C]
  // rows * cols elements in C order, int8 (q8ta_embedding) or float32 (embedding); read when
  // the graph is prepared, so it must stay valid until prepare() returns.
  const void* table = nullptr;
  // int8 rows: the output's parameters, which the table was quantized with (its zero point pads
  // the output); none: float32 rows.
  std::optional<QuantParams> output;
  // Float32 rows only (embedding_add): 0 to kMaxEmbeddingAddends width-packed float32 buffers
  // added to the rows in order, each add rounded on its own. Each holds the output's trailing
  // dims (its sizes after dropping leading 1s end the output's sizes): broadcast along the rest.
  std::vector<graph::ValueRef> addends;
};

inline constexpr size_t kMaxEmbeddingAddends = 2;

// out[..., c] = table[clamp(ids[...], 0, V - 1), c] (shaders/q8ta_embedding.glsl): no
// arithmetic. `indices`: int32, width-packed buffer [..., T] (rank 1..3); `output`: its sizes +
// [C], int8x4 4H4W (int8 rows; padding = zp_out) or a width-packed float32 buffer. The table
// becomes a constant of the graph named after `output`. An id outside [0, V) reads row 0 or
// V - 1 (no out-of-bounds read); the blob's ops also declare the ids' limit to the graph
// (limit_ids), whose input writes then refuse such an id. With addends: out = (row + a1) + a2
// in float32, float_add's bits (shaders/q8ta_embedding.glsl).
void add_embedding_node(graph::ComputeGraph& graph, graph::ValueRef indices, graph::ValueRef output,
                        const EmbeddingParams& params);

}  // namespace vkd::ops
