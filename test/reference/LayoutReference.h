// An independent word/lane formula per packed int8 layout, for GPU tests that check raw words
// (padding included). Deliberately written from the closed forms in docs/PACKED_INT8_LAYOUTS.md,
// not from the runtime's code.
#pragma once

#include <cstdint>
#include <vector>

#include "core/DType.h"

namespace vkd::testing {

struct RefShape {
  int64_t n, c, h, w;
};

inline int64_t ref_div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The [N, C, H, W] of `sizes` of rank 1 to 4 (missing leading dims are 1).
inline RefShape ref_shape_of(const std::vector<int64_t>& sizes) {
  int64_t d[4] = {1, 1, 1, 1};
  for (size_t i = 0; i < sizes.size() && i < 4; ++i) d[4 - sizes.size() + i] = sizes[i];
  return {d[0], d[1], d[2], d[3]};
}

inline int64_t ref_word_count(MemoryLayout layout, const RefShape& s) {
  const int64_t C4 = ref_div_up(s.c, 4), H4 = ref_div_up(s.h, 4), W4 = ref_div_up(s.w, 4);
  switch (layout) {
    case MemoryLayout::PackedInt8_4W4C: return s.n * s.h * W4 * C4 * 4;
    case MemoryLayout::PackedInt8_4H4W: return s.n * s.c * H4 * W4 * 4;
    default: return s.n * s.h * C4 * s.w;
  }
}

// Expected words of `nchw` int8 values in `layout`; every padding lane holds `zero_point`.
inline std::vector<int32_t> ref_pack(MemoryLayout layout, const RefShape& s,
                                     const std::vector<int8_t>& nchw, int zero_point) {
  const int64_t C4 = ref_div_up(s.c, 4), H4 = ref_div_up(s.h, 4), W4 = ref_div_up(s.w, 4);
  std::vector<uint8_t> bytes(static_cast<size_t>(ref_word_count(layout, s) * 4),
                             static_cast<uint8_t>(zero_point));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t h = 0; h < s.h; ++h)
        for (int64_t w = 0; w < s.w; ++w) {
          int64_t word = 0, lane = 0;
          if (layout == MemoryLayout::PackedInt8_4W4C) {
            word = 4 * (((n * s.h + h) * W4 + w / 4) * C4 + c / 4) + w % 4;
            lane = c % 4;
          } else if (layout == MemoryLayout::PackedInt8_4H4W) {
            word = 4 * (((n * s.c + c) * H4 + h / 4) * W4 + w / 4) + h % 4;
            lane = w % 4;
          } else {
            word = ((n * s.h + h) * C4 + c / 4) * s.w + w;
            lane = c % 4;
          }
          bytes[word * 4 + lane] = static_cast<uint8_t>(nchw[((n * s.c + c) * s.h + h) * s.w + w]);
        }
  std::vector<int32_t> words(bytes.size() / 4);
  for (size_t i = 0; i < words.size(); ++i) {
    words[i] =
        static_cast<int32_t>(uint32_t(bytes[4 * i]) | uint32_t(bytes[4 * i + 1]) << 8 |
                             uint32_t(bytes[4 * i + 2]) << 16 | uint32_t(bytes[4 * i + 3]) << 24);
  }
  return words;
}

}  // namespace vkd::testing
