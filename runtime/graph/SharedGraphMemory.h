// Device memory that several graphs of one model share (issue 35: a blob with a dynamic length
// builds one graph per length it runs). Constants: a constant whose packed bytes equal another
// graph's constant, or the first bytes of one (a table cut to a shorter length's first rows), is
// bound inside that constant's memory instead of being uploaded again. Intermediates: the
// graphs never run at the same time (their owner serializes and waits for each execute), so
// every graph whose intermediates' plan fits the first graph's blocks uses those blocks.
// Ownership: blocks are held by shared_ptr by each graph bound in them (GraphMemory), so no
// memory is freed while a graph uses it; the pool only remembers them (weak_ptr).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/vk/Memory.h"

namespace vkd::graph {

// Packed constant bytes by content: the XXH64 of the whole and, for a tensor whose first
// dimension larger than 1 has at most kMaxPrefixRows rows, of every leading run of those rows.
struct ConstantFingerprint {
  uint64_t bytes = 0;
  uint64_t hash = 0;
  std::vector<std::pair<uint64_t, uint64_t>> prefixes;  // (bytes, hash) of each leading rows
};
inline constexpr int64_t kMaxPrefixRows = 8192;
ConstantFingerprint fingerprint_constant(const std::vector<int64_t>& sizes,
                                         const std::vector<uint8_t>& packed);

// One uploaded constant: where its bytes live.
struct SharedConstant {
  std::shared_ptr<const vk::MemoryBlock> block;
  uint64_t offset = 0;
  uint64_t reserved = 0;  // bytes the plan reserved for it at `offset`
};

class SharedGraphMemory {
 public:
  // A constant uploaded at `offset` of `block` (`reserved` bytes there) with these contents.
  void add_constant(const ConstantFingerprint& f, std::shared_ptr<const SharedConstant> c);
  // An uploaded constant (still held by some graph) whose bytes, or whose first bytes, are
  // exactly `bytes` bytes hashing to `hash`, in memory of a type `type_bits` allows, at an offset
  // `alignment` divides, not in `taken`; null if none.
  bool has_constants() const { return !constants_.empty(); }
  std::shared_ptr<const SharedConstant> find_constant(
      uint64_t bytes, uint64_t hash, uint32_t type_bits, uint64_t alignment,
      const std::vector<const SharedConstant*>& taken) const;

  // The intermediates' blocks of the first graph that offers them; kept for the owner's life.
  void offer_intermediates(const std::vector<std::shared_ptr<const vk::MemoryBlock>>& blocks);
  // Those blocks when a plan of `block_bytes` in memory of a type `type_bits` allows fits in
  // them (block by block); empty otherwise.
  std::vector<std::shared_ptr<const vk::MemoryBlock>> intermediates_for(
      const std::vector<uint64_t>& block_bytes, uint32_t type_bits) const;

 private:
  std::multimap<std::pair<uint64_t, uint64_t>, std::weak_ptr<const SharedConstant>> constants_;
  std::vector<std::shared_ptr<const vk::MemoryBlock>> intermediates_;
};

}  // namespace vkd::graph
