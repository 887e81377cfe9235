// The caps on one tensor's size, the same wherever sizes come from outside: graph IR values
// and the shapes their ops infer (compiler/Parse), safetensors headers (compiler/Safetensors),
// partition plans (model/PartitionPlan) and blobs (validate() in TensorSpec.h, which
// deserialize calls). Every reader checks sizes with checked_element_count() or
// tensor_size_problem() before it multiplies, allocates or indexes with them, so a crafted size
// ([2^62 + 1, 4], whose product wraps to 4) is refused by name instead of overflowing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkd {

// Dims of a tensor anywhere (graph IR, plans; device tensors have at most 4, TensorSpec.h).
inline constexpr size_t kMaxTensorRank = 6;
// Elements of one tensor: the kernels index elements and words with int32.
inline constexpr int64_t kMaxTensorElements = (int64_t{1} << 31) - 1;
// Bytes of one tensor: kMaxTensorElements of the widest element read (int64 and float64 in a
// safetensors file), 16 GiB - 8.
inline constexpr uint64_t kMaxTensorBytes = uint64_t{8} * uint64_t{kMaxTensorElements};

// The element count of `sizes` (1 for rank 0), or nullopt when a size is negative or the
// product of the sizes, each 0 counted as 1, is above kMaxTensorElements. Counting a 0 as 1
// bounds every partial product too (strides, the elements before a dim), so nothing computed
// from sizes that pass overflows. Never overflows itself.
inline std::optional<int64_t> checked_element_count(const std::vector<int64_t>& sizes) {
  int64_t bound = 1;
  bool empty = false;
  for (const int64_t s : sizes) {
    if (s < 0) return std::nullopt;
    if (s == 0) {
      empty = true;
      continue;
    }
    if (s > kMaxTensorElements / bound) return std::nullopt;  // bound * s would pass the cap
    bound *= s;
  }
  return empty ? 0 : bound;
}

// What is wrong with a tensor of `sizes` whose elements take `element_bytes` each ("" when
// nothing): a rank above `max_rank`, a negative size, a product of the sizes above
// kMaxTensorElements or bytes above kMaxTensorBytes. Callers prefix which tensor it is.
inline std::string tensor_size_problem(const std::vector<int64_t>& sizes, size_t element_bytes,
                                       size_t max_rank = kMaxTensorRank) {
  if (sizes.size() > max_rank) {
    return "rank " + std::to_string(sizes.size()) + " is above the limit of " +
           std::to_string(max_rank);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) {
      return "size " + std::to_string(sizes[i]) + " in dim " + std::to_string(i) + " is negative";
    }
  }
  const std::optional<int64_t> count = checked_element_count(sizes);
  if (!count) {
    return "the product of the sizes (numel) is above the limit of 2^31 - 1 elements per "
           "tensor";
  }
  if (*count > 0 && element_bytes > kMaxTensorBytes / static_cast<uint64_t>(*count)) {
    return std::to_string(*count) + " elements of " + std::to_string(element_bytes) +
           " bytes are above the limit of " + std::to_string(kMaxTensorBytes) + " bytes per tensor";
  }
  return "";
}

}  // namespace vkd
