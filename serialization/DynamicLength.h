// The dynamic length of a graph (issue 35): a graph compiled at a maximum sequence length whose
// sizes and ints that follow the length are listed as a * L + b, so the runtime can build the
// graph of any length up to the maximum (GraphAtLength.h). schema.fbs: DynamicLength.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serialization/Blob.h"

namespace vkd::serialization {

// A size or int that follows the graph's dynamic length L: a * L + b (schema.fbs DynamicEntry).
// element: the dimension of a tensor, the item of an int list, 0 for an int.
struct DynamicEntry {
  ValueId value = 0;
  uint32_t element = 0;
  int64_t a = 0;
  int64_t b = 0;
};

// The graph was compiled at `max` and runs at any length in [min, max] (GraphAtLength.h makes
// the graph of one length). deserialize() checks: 1 <= min <= max <= kMaxDynamicLength; entries
// sorted by (value, element), unique; each names a tensor's dimension, an int or an int-list
// item (a constant's only in its first dimension larger than 1, with a >= 0, once: at a shorter
// length it is the prefix of its host bytes); a * max + b is the value written; |a| and |b| within
// kMaxDynamicCoefficient; a tensor dimension is >= 1 at min and at max (so at every length
// between).
struct DynamicLength {
  std::string name;  // for messages ("T"); may be empty
  int64_t min = 1, max = 1;
  std::vector<DynamicEntry> entries;
};
inline constexpr int64_t kMaxDynamicLength = int64_t{1} << 31;
inline constexpr int64_t kMaxDynamicCoefficient = int64_t{1} << 31;

}  // namespace vkd::serialization
