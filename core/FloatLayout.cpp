#include "core/FloatLayout.h"

#include "core/Error.h"

namespace vkd {

std::array<int64_t, 4> buffer_strides(MemoryLayout layout, const Dims4& d) {
  switch (layout) {
    case MemoryLayout::WidthPacked:  // N, C, H, W (W fastest)
      return {d.c * d.h * d.w, d.h * d.w, d.w, 1};
    case MemoryLayout::HeightPacked:  // N, C, W, H (H fastest)
      return {d.c * d.w * d.h, d.w * d.h, 1, d.h};
    case MemoryLayout::ChannelsPacked:  // N, H, W, C (C fastest)
      return {d.h * d.w * d.c, 1, d.w * d.c, d.c};
    default: break;
  }
  VKD_THROW(ErrorCode::InvalidArgument, "buffer_strides: layout ", to_string(layout),
            " is not a strided layout (packed int8 layouts: see packed_int8_position)");
}

TextureExtents texture_extents(MemoryLayout layout, const Dims4& d) {
  switch (layout) {
    case MemoryLayout::WidthPacked: return {div_up(d.w, 4), d.h, d.n * d.c};
    case MemoryLayout::HeightPacked: return {d.w, div_up(d.h, 4), d.n * d.c};
    case MemoryLayout::ChannelsPacked: return {d.w, d.h, d.n * div_up(d.c, 4)};
    default: break;
  }
  VKD_THROW(ErrorCode::InvalidArgument, "texture_extents: layout ", to_string(layout),
            " has no texture form (packed int8 layouts are buffer-only)");
}

int packed_dim_nchw(MemoryLayout layout) {
  switch (layout) {
    case MemoryLayout::WidthPacked: return 3;
    case MemoryLayout::HeightPacked: return 2;
    case MemoryLayout::ChannelsPacked: return 1;
    // For the int8x4 layouts: the dim that lives in the byte lanes.
    case MemoryLayout::PackedInt8_4W4C: return 1;
    case MemoryLayout::PackedInt8_4H4W: return 3;
    case MemoryLayout::PackedInt8_4C1W: return 1;
  }
  VKD_THROW(ErrorCode::InvalidArgument, "packed_dim_nchw: unknown layout ",
            static_cast<int>(layout));
}

}  // namespace vkd
