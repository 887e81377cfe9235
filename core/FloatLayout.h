// Float/int (non-int8x4) layouts in buffer and 3-D texture storage.
//   Buffer: plain strided storage; the packed dim is the fastest one.
//     WidthPacked = NCHW contiguous, HeightPacked = N,C,W,H order, ChannelsPacked = NHWC.
//   Texture3D: one texel (4 components) holds 4 consecutive elements of the packed dim.
//     WidthPacked:    texel (w/4, h, n*C + c),   component w%4; extents (W4, H, N*C)
//     HeightPacked:   texel (w, h/4, n*C + c),   component h%4; extents (W, H4, N*C)
//     ChannelsPacked: texel (w, h, n*C4 + c/4),  component c%4; extents (W, H, N*C4)
//   Texel components past the end of the packed dim hold 0.
#pragma once

#include <array>
#include <cstdint>

#include "core/DType.h"
#include "core/TensorSpec.h"

namespace vkd {

// Element strides in units of elements, in NCHW order {n, c, h, w}, for buffer storage.
std::array<int64_t, 4> buffer_strides(MemoryLayout layout, const Dims4& dims);

struct TextureExtents {
  int64_t x = 1, y = 1, z = 1;
};
TextureExtents texture_extents(MemoryLayout layout, const Dims4& dims);

// Index of the dim that is packed, in NCHW numbering (0 = N, 1 = C, 2 = H, 3 = W).
int packed_dim_nchw(MemoryLayout layout);

}  // namespace vkd
