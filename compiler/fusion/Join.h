// Joins of two committed convolution matches into one backend op, run once every pattern was
// matched (DepthwisePointwise.cpp, ShuffledHead.cpp): a match W whose int8 output only the match
// P reads, as its first input, merges into P, so that output is never written. What every such
// join shares: the loop over the matches with its report lines, and the checks of the part a
// convolution plays in the fused op.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/fusion/FuseState.h"

namespace vkd::compiler::fusion {

// Match f's weight shape: [C_out, C_in / groups, KH, KW].
const std::vector<int64_t>& weight_shape(const Graph& g, const Fusion& f);

// A match of one q8ta_conv2d family convolution (any variant: the merged ops have no groups
// argument and are none).
bool is_one_conv(const Graph& g, const Fusion& f);

// "" when match f's convolution is a 1x1 of stride 1, padding 0, dilation 1 and groups 1; else
// what it is, and that the fused op's `role` convolution must be one.
std::string check_pointwise_geometry(const Graph& g, const Fusion& f, const std::string& role);

// "" when match f, the fused op's `role` convolution, is backend op `op` (`what`: that op as the
// reason describes it, "a plain q8ta_conv2d (int8 output)").
std::string check_conv_op(const Fusion& f, const std::string& role, const std::string& op,
                          const std::string& what);

// "" when the fused op may keep W's output to itself: `target` may be targeted, and nothing but
// P (through the dequantize with P's input qparams) reads it.
std::string check_hidden(const FuseState& state, const Fusion& w, const Fusion& p,
                         const std::string& target);

// P's node takes W's head: W's input with its qparams for P's, W's weights, weight scales and
// bias before P's, and W's output parameters (scale, zero point, activation range) as
// `prefix`scale, ... (P's input qparams were those, checked by check_hidden). W's geometry and
// P's leftover arguments are the caller's.
void merge_writer_head(const Fusion& w, Fusion& p, const std::string& prefix);

// One join: a committed match W writing the first input of a committed match P merges into P.
struct Join {
  const char* what;                                 // W's part in the report: "depthwise"
  bool (*reads)(const Graph& g, const Fusion& p);   // P is a candidate
  bool (*writes)(const Graph& g, const Fusion& w);  // W is this pattern (else no line)
  std::string (*check)(const FuseState& state, const Fusion& w, const Fusion& p);
  std::string (*target)(const Fusion& p);
  void (*merge)(const Fusion& w, Fusion& p);  // P's inputs and arguments
};

// Every (W, P) pair of `join`, reported either way ("fused <what> <W's op> 'w' (nodes) into
// <P's op> 'p' (nodes): <target> reads 'x' and writes 'p'; 'w' (C channels) is not written" /
// "not fused: ...: <why>"; off with --no-fuse-epilogue); a W merged into P goes from the matches
// and its output (now computed inside P only) from the graph.
void run_join(FuseState& state, const Join& join);

}  // namespace vkd::compiler::fusion
