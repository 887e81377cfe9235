#include "runtime/graph/SharedGraphMemory.h"

#include <algorithm>

#include "serialization/Xxh64.h"

namespace vkd::graph {

ConstantFingerprint fingerprint_constant(const std::vector<int64_t>& sizes,
                                         const std::vector<uint8_t>& packed) {
  ConstantFingerprint f;
  f.bytes = packed.size();
  // The rows of the first dimension larger than 1: the dimension a dynamic length cuts a
  // constant in (serialization/DynamicLength.h), whose leading rows are a prefix of its bytes.
  int64_t rows = 1;
  for (const int64_t s : sizes) {
    if (s > 1) {
      rows = s;
      break;
    }
  }
  serialization::Xxh64 h;
  if (rows > 1 && rows <= kMaxPrefixRows && packed.size() % static_cast<uint64_t>(rows) == 0) {
    const uint64_t row_bytes = packed.size() / static_cast<uint64_t>(rows);
    for (int64_t r = 0; r + 1 < rows; ++r) {
      h.update(packed.data() + r * row_bytes, row_bytes);
      f.prefixes.emplace_back((r + 1) * row_bytes, h.digest());
    }
    h.update(packed.data() + (rows - 1) * row_bytes, row_bytes);
  } else {
    h.update(packed.data(), packed.size());
  }
  f.hash = h.digest();
  return f;
}

void SharedGraphMemory::add_constant(const ConstantFingerprint& f,
                                     std::shared_ptr<const SharedConstant> c) {
  // Expired entries (of graphs destroyed since) are dropped as the pool grows.
  for (auto it = constants_.begin(); it != constants_.end();) {
    it = it->second.expired() ? constants_.erase(it) : std::next(it);
  }
  constants_.emplace(std::make_pair(f.bytes, f.hash), c);
  for (const auto& p : f.prefixes) constants_.emplace(p, c);
}

std::shared_ptr<const SharedConstant> SharedGraphMemory::find_constant(
    uint64_t bytes, uint64_t hash, uint32_t type_bits, uint64_t alignment,
    const std::vector<const SharedConstant*>& taken) const {
  const auto [first, last] = constants_.equal_range({bytes, hash});
  for (auto it = first; it != last; ++it) {
    std::shared_ptr<const SharedConstant> c = it->second.lock();
    if (!c || std::find(taken.begin(), taken.end(), c.get()) != taken.end()) continue;
    if (!(type_bits & (1u << c->block->memory_type()))) continue;
    if (alignment == 0 || c->offset % alignment != 0) continue;
    return c;
  }
  return nullptr;
}

void SharedGraphMemory::offer_intermediates(
    const std::vector<std::shared_ptr<const vk::MemoryBlock>>& blocks) {
  if (intermediates_.empty()) intermediates_ = blocks;
}

std::vector<std::shared_ptr<const vk::MemoryBlock>> SharedGraphMemory::intermediates_for(
    const std::vector<uint64_t>& block_bytes, uint32_t type_bits) const {
  if (block_bytes.size() > intermediates_.size()) return {};
  for (size_t b = 0; b < block_bytes.size(); ++b) {
    const vk::MemoryBlock& block = *intermediates_[b];
    if (block_bytes[b] > block.size() || !(type_bits & (1u << block.memory_type()))) return {};
  }
  return {intermediates_.begin(),
          intermediates_.begin() + static_cast<std::ptrdiff_t>(block_bytes.size())};
}

}  // namespace vkd::graph
