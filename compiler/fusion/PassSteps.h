// The steps of fuse_and_lower (compiler/Fuse.cpp) around its patterns and lowerings: applying
// the matches, folding weight dequantizations, assigning int8x4 activations their quantization,
// and the final schema check.
#pragma once

#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/fusion/FuseState.h"

namespace vkd::compiler::fusion {

// Replaces matched nodes (each match at the position of its last node: its inputs are
// defined before its first node, its output is read after its last) and drops
// intermediates. Returns the original index of every remaining node.
std::vector<int> apply_fusions(FuseState& state);

// Removes weight dequantize nodes whose outputs only fed fused ops, and the scale / zero-
// point constants left unread; keeps `origin` (original index per node) in step.
void fold_weight_dqs(FuseState& state, std::vector<int>& origin);

// int8 activations read or written by backend ops become Int8x4 with their quantization.
void assign_int8x4(FuseState& state);

// Every backend node the pass leaves must match its OpSchema entry exactly; throws
// vkd::Error(Internal) otherwise. Edge nodes are not checked.
void check_against_schema(const Graph& g, const Node& n);

}  // namespace vkd::compiler::fusion
