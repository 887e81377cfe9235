// sink_dequantize: the pass before fuse_and_lower (compiler/Fuse.h), declared apart so that
// its unit (SinkDequantize.cpp) needs no driver header.
#pragma once

#include "compiler/GraphIR.h"
#include "compiler/PassReport.h"

namespace vkd::compiler {

// The pass before fuse_and_lower: a per-tensor dequantize of an int8 activation whose result
// only flows through data movement (view_copy, permute / transpose, clones) into readers other
// than a quantize moves below that movement, which then moves the int8 values (they commute
// exactly); each reader gets a dequantize of its own. So dq -> view -> transpose -> view -> conv
// fuses into an int8 channel shuffle and an int8 conv. Report lines:
//   "moved dq (node 12) below aten.view_copy -> ... (node 13..16): they move the int8 values of
//    'x', 'y' is dequantized after them"
// Node numbers are those of the graph as the pass gets it.
PassReport sink_dequantize(Graph& g);

}  // namespace vkd::compiler
