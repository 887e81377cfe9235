// CPU reference for q8ta_embedding / embedding, written for the tests (it shares no code with
// the compiler, the shaders or the runtime): out[r, c] = table[ids[r], c] for every id r of the
// ids in C order, the rows of a [V, C] table; an id outside [0, V) reads the nearest row (what
// the kernel does to stay in bounds; the host refuses such ids before they reach it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace vkd::testing {

template <typename T>
std::vector<T> ref_embedding(const std::vector<T>& table, int64_t rows, int64_t cols,
                             const std::vector<int32_t>& ids) {
  std::vector<T> out;
  out.reserve(ids.size() * static_cast<size_t>(cols));
  for (int32_t id : ids) {
    const int64_t r = std::clamp<int64_t>(id, 0, rows - 1);
    out.insert(out.end(), table.begin() + r * cols, table.begin() + (r + 1) * cols);
  }
  return out;
}

}  // namespace vkd::testing
