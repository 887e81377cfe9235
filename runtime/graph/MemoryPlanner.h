// Memory planning: tensors whose lifetimes do not overlap share device memory. Pure
// arithmetic over (size, alignment, lifetime) so it is testable without a GPU.
#pragma once

#include <cstdint>
#include <vector>

namespace vkd::graph {

// One buffer to place. Lifetime in node indices, inclusive: [first_use, last_use].
struct PlanItem {
  uint64_t bytes = 0;
  uint64_t alignment = 1;  // power of two
  int64_t first_use = 0;
  int64_t last_use = 0;
};

struct Placement {
  uint32_t block = 0;
  uint64_t offset = 0;
};

struct MemoryPlan {
  std::vector<Placement> placements;  // one per item, same order
  std::vector<uint64_t> block_bytes;  // size of each block
  uint64_t naive_bytes = 0;           // every item in its own slot (size rounded to alignment)
  uint64_t planned_bytes = 0;         // sum of block sizes
};

// Greedy by size (largest first): each item goes to the lowest aligned offset of the first
// block where it overlaps no item with an intersecting lifetime; a block never grows past
// `max_block_bytes` (a new block opens instead). Deterministic for the same input.
MemoryPlan plan_memory(const std::vector<PlanItem>& items, uint64_t max_block_bytes);

}  // namespace vkd::graph
