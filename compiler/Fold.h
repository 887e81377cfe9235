// Identity folding, after layout propagation: identity nodes (clone/alias/view) and
// conversions whose input and output share a placement are removed, and conversion pairs that
// cancel (A -> B -> A through a value nothing else reads) are removed. A graph input copied
// straight to a graph output keeps one copy node (a blob needs an op to write the output).
#pragma once

#include "compiler/GraphIR.h"
#include "compiler/PassReport.h"

namespace vkd::compiler {

PassReport fold_identities(Graph& g);

}  // namespace vkd::compiler
