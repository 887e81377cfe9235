// Chains of data movement (view_copy, permute / transpose, clones) on quantized data, and the
// one backend op that moves the elements the same way. The data-movement pattern and lowering
// (compiler/ops/Permute.cpp) fuse them; fuse_view (compiler/ops/Copy.cpp) hands over the views that
// start such a chain.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"

namespace vkd::compiler::fusion {

struct FuseState;

// A chain found from one of its data-movement nodes, on int8 data (int8 view / permute / clone
// nodes, what sink_dequantize leaves), or on floats from a dequantize to a quantize, with
// q -> dq pairs between the moves (what FX's reference graphs put around every reshape). A
// pair whose quantize has other parameters than the dequantize before it requantizes: the
// chain ends at that quantize, and the next one starts at its dequantize.
struct MoveChain {
  std::string source;             // the int8 value the chain reads
  std::string output;             // the int8 value it writes ("" when a float chain has no q)
  int dq = -1, q = -1;            // a float chain's first dequantize and final quantize
  std::vector<int> nodes;         // every node in data order: dq, moves and pairs, q
  std::vector<int> moves;         // the data-movement nodes alone, in data order
  std::vector<std::string> dead;  // intermediate values
  std::string why;                // a float chain without a final quantize: what reads it
  bool float_domain() const { return dq >= 0; }
};

// The chain through data-movement node `anchor` (as far as every intermediate has one reader),
// or nullopt when it reads neither int8 data nor a dequantize.
std::optional<MoveChain> find_move_chain(const Graph& g, int anchor);

// Whether the chain permutes dims or passes through a tensor above rank 4, which plain views
// and clones (fuse_view's own pattern) never do.
bool needs_movement_op(const Graph& g, const MoveChain& c);

// "dq -> aten.view_copy -> q": the labels of the chain's nodes, for the report.
std::string chain_label(const Graph& g, const std::vector<int>& nodes);

// A float chain's quantization: the first dequantize (`in`), every pair inside (round trips
// of `in`) and the final quantize (`out`). "" or why the chain does not fuse.
std::string check_chain_quantization(const Graph& g, const MoveChain& c, QuantInfo& in,
                                     QuantInfo& out);

// A float chain that moves its elements as a view but whose final quantize `out` has other
// parameters than its dequantize `in` (compiler/ops/Copy.cpp): the view on the int8 data (identity
// / q8ta_view) into a new int8 value, then q8ta_clamp requantizing that into the chain's output,
// when the clamp gives what dq -> q gives for all 256 values (check_clamp_requantization). "" when
// committed, else why not (nothing committed).
std::string commit_requantized_view(FuseState& state, int anchor, const MoveChain& c,
                                    const QuantInfo& in, const QuantInfo& out);

// Output dim k of permute / transpose node `n` is input dim dims[k] (dims made non-negative).
std::vector<int64_t> permutation_of(const Graph& g, const Node& n);

// How a chain moves elements, as one backend op.
struct Movement {
  enum Kind { View, ChannelShuffle, Permute } kind = View;
  int64_t groups = 1;         // ChannelShuffle: out channel c = in channel (c % g) * C/g + c / g
  std::vector<int64_t> dims;  // Permute: output dim k is input dim dims[k], over the 4-D sizes
  // Permute: the permuted 4-D data is then only reshaped into the result (a conv's [N, C, H, W]
  // flattened into tokens [N, H*W, C]); `permuted` its 4-D sizes.
  bool then_view = false;
  std::vector<int64_t> permuted;
  std::string describe() const;  // "channel shuffle (groups 2)", "permute [0, 2, 3, 1]", ...
};

// The movement of `moves` (data-movement nodes, data order) from value `from` to value `to`,
// both at most 4-D (sizes padded to 4-D with leading 1s, as device tensors are): the composite
// is evaluated for every element and compared with each candidate op. "" or why no backend op
// moves elements that way.
std::string classify_movement(const Graph& g, const std::vector<const Node*>& moves,
                              const std::string& from, const std::string& to, Movement& out);

// The data-movement pattern from `anchor` (compiler/ops/Permute.cpp): true when the chain through
// it is this pattern's (needs_movement_op), fused or reported; false for a chain of plain views.
bool fuse_move_chain(FuseState& state, int anchor);

}  // namespace vkd::compiler::fusion
