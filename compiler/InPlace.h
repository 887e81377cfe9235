// Where a concatenation or a slice moves no byte (runtime/ops/Concat.h): a q8ta_cat input whose
// producer writes it straight into its part of the output, a q8ta_slice output that is a view of
// its input. Both need that part to be one contiguous byte range of the whole holding the words
// a tensor of the part has (core/PackedInt8Layout.h, contiguous_slice_offset, on the
// placed layouts: batches, rows of 4W4C / 4C1W and channels of 4H4W when the outer dims are 1),
// bytes copied as they are (copies_bytes, fusion/CopiesBytes.h), and a tensor that shares no
// other's bytes yet. The runtime decides with the same rules as it builds the ops, and copies after
// all where the device's buffer alignment does not allow the offset; this pass only reports.
#pragma once

#include "compiler/GraphIR.h"
#include "compiler/PassReport.h"

namespace vkd::compiler {

// One line per q8ta_cat and q8ta_slice of a placed graph: which inputs are written in place,
// which slices are views, and why the others are copied.
PassReport report_in_place(const Graph& g);

}  // namespace vkd::compiler
