#include "core/PackedInt8Layout.h"

#include <vector>

#include "core/Error.h"

namespace vkd {

namespace {

void check_layout_and_dims(MemoryLayout layout, const Dims4& d) {
  VKD_CHECK(is_packed_int8(layout), ErrorCode::InvalidArgument, "layout ", to_string(layout),
            " is not a packed int8 layout (expected 4W4C, 4H4W or 4C1W)");
  VKD_CHECK(d.n >= 1 && d.c >= 1 && d.h >= 1 && d.w >= 1, ErrorCode::InvalidArgument, "dims [", d.n,
            ",", d.c, ",", d.h, ",", d.w, "]: every size must be >= 1");
}

}  // namespace

int64_t packed_int8_word_count(MemoryLayout layout, const Dims4& d) {
  check_layout_and_dims(layout, d);
  const int64_t C4 = div_up(d.c, 4), H4 = div_up(d.h, 4), W4 = div_up(d.w, 4);
  switch (layout) {
    case MemoryLayout::PackedInt8_4W4C: return d.n * d.h * W4 * C4 * 4;
    case MemoryLayout::PackedInt8_4H4W: return d.n * d.c * H4 * W4 * 4;
    case MemoryLayout::PackedInt8_4C1W: return d.n * d.h * C4 * d.w;
    default: break;
  }
  VKD_THROW(ErrorCode::Internal, "unhandled packed int8 layout");
}

WordLane packed_int8_position(MemoryLayout layout, const Dims4& d, int64_t n, int64_t c, int64_t h,
                              int64_t w) {
  check_layout_and_dims(layout, d);
  VKD_CHECK(n >= 0 && n < d.n && c >= 0 && c < d.c && h >= 0 && h < d.h && w >= 0 && w < d.w,
            ErrorCode::InvalidArgument, "element (", n, ",", c, ",", h, ",", w,
            ") out of range for dims [", d.n, ",", d.c, ",", d.h, ",", d.w, "]");
  const int64_t C4 = div_up(d.c, 4), H4 = div_up(d.h, 4), W4 = div_up(d.w, 4);
  switch (layout) {
    case MemoryLayout::PackedInt8_4W4C:
      return {4 * (((n * d.h + h) * W4 + w / 4) * C4 + c / 4) + w % 4, static_cast<int>(c % 4)};
    case MemoryLayout::PackedInt8_4H4W:
      return {4 * (((n * d.c + c) * H4 + h / 4) * W4 + w / 4) + h % 4, static_cast<int>(w % 4)};
    case MemoryLayout::PackedInt8_4C1W:
      return {((n * d.h + h) * C4 + c / 4) * d.w + w, static_cast<int>(c % 4)};
    default: break;
  }
  VKD_THROW(ErrorCode::Internal, "unhandled packed int8 layout");
}

int64_t contiguous_slice_offset(MemoryLayout layout, const Dims4& dims, int dim4, int64_t start,
                                int64_t length) {
  check_layout_and_dims(layout, dims);
  const int64_t size[4] = {dims.n, dims.c, dims.h, dims.w};
  VKD_CHECK(dim4 >= 0 && dim4 < 4 && start >= 0 && length >= 1 && start + length <= size[dim4],
            ErrorCode::InvalidArgument, "slice [", start, ", ", start + length, ") of dim ", dim4,
            " is outside dims [", dims.n, ",", dims.c, ",", dims.h, ",", dims.w, "]");
  // Memory order outer to inner (N first), and whether each dim is packed 4 to a block.
  std::vector<int> order;
  bool blocked[4] = {false, false, false, false};
  switch (layout) {
    case MemoryLayout::PackedInt8_4W4C: order = {0, 2, 3, 1}, blocked[1] = blocked[3] = true; break;
    case MemoryLayout::PackedInt8_4H4W: order = {0, 1, 2, 3}, blocked[2] = blocked[3] = true; break;
    default:  // 4C1W
      order = {0, 2, 1, 3}, blocked[1] = true;
      break;
  }
  for (int d : order) {
    if (d == dim4) break;
    // A packed dim's blocks are what lies outer (the element within a block is innermost).
    if ((blocked[d] ? div_up(size[d], 4) : size[d]) != 1) return -1;
  }
  const bool ends = start + length == size[dim4];
  if (blocked[dim4] && (start % 4 != 0 || (length % 4 != 0 && !ends))) return -1;
  int64_t at[4] = {0, 0, 0, 0};
  at[dim4] = start;
  return 4 * packed_int8_position(layout, dims, at[0], at[1], at[2], at[3]).word;
}

}  // namespace vkd
