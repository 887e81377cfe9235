// A graph with a dynamic length (DynamicLength.h) at one length: what the runtime builds when
// the inputs are shorter than the maximum the blob was compiled at. Pure arithmetic on the
// deserialized graph; constants stay views into the blob.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serialization/Deserializer.h"

namespace vkd::serialization {

// `g` with every entry of its dynamic length set to a * length + b and every tensor spec
// validated again (vkd::validate). `length` must lie in [min, max]; InvalidArgument otherwise or
// when `g` has no dynamic length.
DeserializedGraph graph_at_length(const DeserializedGraph& g, int64_t length);

// The length the inputs' shapes give (`sizes[i]` of input i, `names[i]` its name): each input
// dimension an entry names must be a * L + b for one L in [min, max], every other dimension as
// compiled. The maximum when no input size follows the length; `g.dynamic` must be set.
// InvalidArgument naming the input, the dimension, what it must be and the limit otherwise.
int64_t length_of_inputs(const DeserializedGraph& g, const std::vector<std::vector<int64_t>>& sizes,
                         const std::vector<std::string>& names);

// "T" (or "L" when the blob names none), "1*T", "3*T+2": for messages and `vkd inspect`.
std::string length_name(const DynamicLength& d);
std::string affine_string(const DynamicLength& d, const DynamicEntry& e);

}  // namespace vkd::serialization
