// The CPU reference of every edge op the interpreter (compiler/Interpreter.h) runs: one function
// per op, grouped by op family (one .cpp per family in this folder), each defined with its
// semantics as PyTorch computes them in float32 on CPU, where that is defined. The op's
// descriptor (compiler/ops/<Family>.cpp) declares the function and points at it. Every family is
// built with -ffp-contract=off, so no fused multiply-add is ever formed.
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
