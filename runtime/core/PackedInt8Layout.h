// The packed int8x4 layouts: where element (n, c, h, w) lives (int32 word + byte lane).
// Definitions (C4 = ceil(C/4), H4 = ceil(H/4), W4 = ceil(W/4); lane 0 = least-significant byte):
//   4W4C: word 4*(((n*H + h)*W4 + w/4)*C4 + c/4) + w%4, lane c%4, words N*H*W4*C4*4
//   4H4W: word 4*(((n*C + c)*H4 + h/4)*W4 + w/4) + h%4, lane w%4, words N*C*H4*W4*4
//   4C1W: word ((n*H + h)*C4 + c/4)*W + w,              lane c%4, words N*H*C4*W
// Padding lanes and rows hold the tensor's zero point. See docs/PACKED_INT8_LAYOUTS.md.
#pragma once

#include <cstdint>

#include "runtime/core/DType.h"
#include "runtime/core/TensorSpec.h"

namespace vkd {

struct WordLane {
  int64_t word;
  int lane;
  bool operator==(const WordLane& o) const { return word == o.word && lane == o.lane; }
};

// Number of int32 words a tensor of `dims` occupies in `layout` (a packed-int8 layout).
int64_t packed_int8_word_count(MemoryLayout layout, const Dims4& dims);

// Position of element (n, c, h, w); requires 0 <= index < size on every dim.
WordLane packed_int8_position(MemoryLayout layout, const Dims4& dims, int64_t n,
                              int64_t c, int64_t h, int64_t w);

}  // namespace vkd
