// A tensor's logical description: sizes (rank <= 4, NCHW order), dtype, storage, layout.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/DType.h"

namespace vkd {

// "[1,3,5,7]" (or with another separator, e.g. ", " in compiler messages).
std::string sizes_string(const std::vector<int64_t>& sizes, const char* separator = ",");

// Logical sizes viewed as 4-D [N, C, H, W]: a tensor of rank < 4 is [1, ...]-prefixed.
struct Dims4 {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t numel() const { return n * c * h * w; }
  bool operator==(const Dims4& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
};

inline int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t align_up(int64_t a, int64_t b) { return div_up(a, b) * b; }

struct TensorSpec {
  std::vector<int64_t> sizes;  // NCHW order, 1 <= rank <= 4, every size >= 1
  DType dtype = DType::Float32;
  StorageType storage = StorageType::Buffer;
  MemoryLayout layout = MemoryLayout::WidthPacked;

  Dims4 dims4() const;
  int64_t numel() const;
  std::string describe() const;  // e.g. "[1,3,5,7] int8x4 buffer 4W4C"
};

// Throws vkd::Error naming the problem if sizes/dtype/storage/layout do not go together.
void validate(const TensorSpec& spec);

}  // namespace vkd
