// `vkd inspect --dot`: a Graphviz picture of a compiled graph exactly as the blob holds it (read
// with serialization::deserialize, no device). Render with `dot -Tsvg model.dot -o model.svg`.
//
// Tensors are ellipses labelled name / dtype and shape / storage and layout, filled with one
// colour per memory layout (a legend cluster lists them); constants are small and grey; op
// calls are boxes; edges run tensor -> op for inputs and op -> tensor for outputs. The layout
// conversions the compiler inserts (q8ta_convert, float_convert) are red and bold, so the cost
// of a layout decision is visible at a glance.
#pragma once

#include <string>

#include "serialization/Deserializer.h"

namespace vkd::cli {

// The digraph of `graph`, titled `title` (the model path). Which tensor arguments an op writes
// comes from the backend op schema (partitioner_schema/OpSchema.h): deserialize the blob with
// schema::kernel_signatures() so every op is known and has the schema's argument count;
// otherwise throws vkd::Error(InvalidArgument) naming the op call.
std::string graph_to_dot(const serialization::DeserializedGraph& graph, const std::string& title);

// `text` as a double-quoted dot string: '"' and '\' escaped (in labels a lone backslash would
// start an escape such as \N or \l), newlines as \n; other control characters have no dot
// escape and become '?'. Bytes >= 0x80 pass through, so UTF-8 stays UTF-8.
std::string dot_string(const std::string& text);

}  // namespace vkd::cli
