// The packed int8x4 layouts: where element (n, c, h, w) lives (int32 word + byte lane).
// Definitions (C4 = ceil(C/4), H4 = ceil(H/4), W4 = ceil(W/4); lane 0 = least-significant byte):
//   4W4C: word 4*(((n*H + h)*W4 + w/4)*C4 + c/4) + w%4, lane c%4, words N*H*W4*C4*4
//   4H4W: word 4*(((n*C + c)*H4 + h/4)*W4 + w/4) + h%4, lane w%4, words N*C*H4*W4*4
//   4C1W: word ((n*H + h)*C4 + c/4)*W + w,              lane c%4, words N*H*C4*W
// Padding lanes and rows hold the tensor's zero point. See docs/PACKED_INT8_LAYOUTS.md.
#pragma once

#include <cstdint>

#include "core/DType.h"
#include "core/TensorSpec.h"

namespace vkd {

struct WordLane {
  int64_t word;
  int lane;
  bool operator==(const WordLane& o) const { return word == o.word && lane == o.lane; }
};

// Number of int32 words a tensor of `dims` occupies in `layout` (a packed-int8 layout).
int64_t packed_int8_word_count(MemoryLayout layout, const Dims4& dims);

// Position of element (n, c, h, w); requires 0 <= index < size on every dim.
WordLane packed_int8_position(MemoryLayout layout, const Dims4& dims, int64_t n, int64_t c,
                              int64_t h, int64_t w);

// The byte offset of the slice [start, start + length) along dim `dim4` (0 N, 1 C, 2 H, 3 W)
// of a tensor of `dims` in `layout` when that slice is one contiguous byte range holding exactly
// the words, padding included, of a tensor of the slice's dims in the same layout (so that
// tensor can share the bytes: a view, or a producer writing into its part of a concatenation);
// -1 otherwise. Contiguous: every dim outer to the slice's in memory order has one element (a
// dim packed 4 to a block, 4W4C C and W, 4H4W H and W, 4C1W C: one block); the sliced dim, if
// packed, needs a start on a block and whole blocks unless the slice ends the dim (no padding
// of the slice may hold the tensor's data). Memory order: N, then 4W4C: H, W, C; 4H4W: C, H, W;
// 4C1W: H, C, W.
int64_t contiguous_slice_offset(MemoryLayout layout, const Dims4& dims, int dim4, int64_t start,
                                int64_t length);

}  // namespace vkd
