// The CPU reference of every edge op the interpreter (compiler/Interpreter.h) runs: one function
// per op, in its op family's file (compiler/ops/<Family>.cpp) above the descriptor that points
// at it, each defined with its semantics as PyTorch computes them in float32 on CPU, where that
// is defined. Every family file and this folder's helpers are built with -ffp-contract=off, so
// no fused multiply-add is ever formed.
//
// A reference function reads the node's inputs and arguments from its ReferenceContext and
// returns the node's outputs in order. Not supported (vkd::Error Unsupported naming the node):
// other ranks than those below, zero_point_domain other than INT, preserve_zero = false, dtypes
// other than float32 / int8 / int32 (float16 only for the ops that move data: pixel_shuffle,
// upsample_nearest2d, clone, alias_copy, view_copy; bit-exact). Malformed nodes (missing
// inputs or arguments, shapes that do not fit) give InvalidArgument naming the node.
#pragma once

#include <vector>

#include "compiler/reference/HostTensor.h"

namespace vkd::compiler {

class ReferenceContext;  // compiler/reference/ReferenceContext.h

using ReferenceFn = std::vector<HostTensor> (*)(const ReferenceContext&);

}  // namespace vkd::compiler
