// What the family files of partitioner_schema/ops/ share: the placements they name, the
// argument builders (single arguments and the groups many ops repeat) and the op builders that
// say what the runtime does with an op. Each <Family>.cpp defines <family>_schemas with them.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "partitioner_schema/OpSchema.h"

namespace vkd::schema {

inline constexpr Placement kBufW{StorageType::Buffer, MemoryLayout::WidthPacked};
inline constexpr Placement k4W4C{StorageType::Buffer, MemoryLayout::PackedInt8_4W4C};
inline constexpr Placement k4H4W{StorageType::Buffer, MemoryLayout::PackedInt8_4H4W};
inline constexpr Placement k4C1W{StorageType::Buffer, MemoryLayout::PackedInt8_4C1W};

// --- argument builders --------------------------------------------------------------------
ArgSchema tensor_in(std::string name, std::vector<DType> dtypes, PlacementSet set,
                    std::vector<Placement> preferred = {});
ArgSchema tensor_out(std::string name, std::vector<DType> dtypes, PlacementSet set,
                     std::vector<Placement> preferred = {});
// One or more tensors of one argument (a value_list in the blob).
ArgSchema tensor_list_in(std::string name, std::vector<DType> dtypes, PlacementSet set);
ArgSchema tied(ArgSchema a, int to);
// Weights, per-channel scales and bias: constants the op prepacks itself.
ArgSchema constant_in(std::string name, DType dtype);
// int8 weights of rank `weight_rank` ([N, K] or [C_out, C_in / groups, KH, KW]) and one float32
// scale and bias per output channel, named `prefix`weight, `prefix`weight_scales, `prefix`bias
// (an op with two convolutions names the first one's "dw_").
std::vector<ArgSchema> per_channel_weights(int weight_rank, const std::string& prefix = "");
ArgSchema scalar(std::string name, ArgKind kind);

std::vector<ArgSchema> per_tensor_qparams(const std::string& prefix);
std::vector<ArgSchema> quant_range();
// A fused relu / clamp on an int8 output.
std::vector<ArgSchema> activation_range();

void append(std::vector<ArgSchema>& out, ArgSchema arg);
void append(std::vector<ArgSchema>& out, std::vector<ArgSchema> args);
// An op's arguments in blob order, from single arguments and groups of them.
template <typename... Parts>
std::vector<ArgSchema> arg_list(Parts&&... parts) {
  std::vector<ArgSchema> out;
  (append(out, std::forward<Parts>(parts)), ...);
  return out;
}

// The epilogue arguments of q8ta_conv2d_add / q8ta_linear_add after the op's own `before` ones:
// the op's int8 output (`prefix` scale, zero point, activation range), the tensor added to it
// (`other`, one of `set`, preferably `preferred`) with its qparams, then the sum's qparams,
// activation range and output, in `other`'s placement (runtime/ops/Linear.h, ResidualAdd).
std::vector<ArgSchema> residual_add_args(const std::string& prefix, PlacementSet set,
                                         Placement preferred, size_t before);

// --- op builders: what the runtime does with the op, named at each entry ------------------
OpSchema kernel_op(std::string name, std::string summary, std::vector<ArgSchema> args);
// Output == input: always removed by the compiler, so it needs no kernel.
OpSchema identity_op(std::string name, std::string summary, std::vector<ArgSchema> args);
// No kernel yet: the compiler parses and checks it and reports it as not yet runnable.
OpSchema schema_only_op(std::string name, std::string summary, std::vector<ArgSchema> args);

}  // namespace vkd::schema
