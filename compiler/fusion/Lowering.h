// What the direct lowerings (Patterns.h's DirectLowering, one per family in compiler/ops/) share:
// reading a unary node and rewriting it in place into its backend op.
#pragma once

#include <string>

#include "compiler/GraphIR.h"
#include "compiler/fusion/FuseState.h"

namespace vkd::compiler::fusion {

// The input of a node with one (leading) input and one output, or nullptr: no unary lowering
// handles other nodes.
const Value* unary_input(const Graph& g, const Node& n);

bool is_float32(const Value* in);

// "node 3 (aten.relu)": the origin a lowered node records.
std::string origin_of(const Node& n, int where);

// Rewrites `n` (node `where`) into unary backend op `backend` with `args`, unless the options
// rule that op out; returns `backend`, or "" with `n` unchanged.
std::string rewrite_unary(FuseState& state, Node& n, int where, const std::string& backend,
                          Args args);

// A per-tensor quantization as the scale / zero_point / quant_min / quant_max arguments.
Args qparam_args(const QuantInfo& q);

// An int8x4 copy of int8 constant `name` (one byte per element, NCHW: the blob's int8x4
// constant form, packed into the activation's layout when loaded): what a kernel reads a
// constant operand from (constant_operand, Match.h); returns the copy's name.
std::string int8x4_constant(Graph& g, const std::string& name);

}  // namespace vkd::compiler::fusion
