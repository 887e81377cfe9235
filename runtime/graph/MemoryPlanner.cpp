#include "runtime/graph/MemoryPlanner.h"

#include <algorithm>
#include <numeric>

#include "core/Error.h"

namespace vkd::graph {
namespace {

uint64_t align_to(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool lifetimes_overlap(const PlanItem& a, const PlanItem& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<PlanItem>& items, uint64_t max_block_bytes) {
  MemoryPlan plan;
  plan.placements.resize(items.size());
  for (const auto& item : items) {
    VKD_CHECK(item.alignment > 0 && (item.alignment & (item.alignment - 1)) == 0,
              ErrorCode::Internal, "memory plan: alignment ", item.alignment,
              " is not a power of two");
    VKD_CHECK(item.first_use <= item.last_use, ErrorCode::Internal, "memory plan: lifetime [",
              item.first_use, ", ", item.last_use, "] is empty");
    plan.naive_bytes += align_to(item.bytes, item.alignment);
  }

  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (items[a].bytes != items[b].bytes) return items[a].bytes > items[b].bytes;
    return items[a].first_use < items[b].first_use;
  });

  std::vector<std::vector<size_t>> placed_in_block;  // item indices per block
  for (size_t index : order) {
    const PlanItem& item = items[index];
    bool done = false;
    for (size_t b = 0; b < placed_in_block.size() && !done; ++b) {
      // Items in this block that are alive at the same time, by offset.
      std::vector<size_t> live;
      for (size_t other : placed_in_block[b]) {
        if (lifetimes_overlap(item, items[other])) live.push_back(other);
      }
      std::sort(live.begin(), live.end(), [&](size_t x, size_t y) {
        return plan.placements[x].offset < plan.placements[y].offset;
      });
      uint64_t offset = 0;
      for (size_t other : live) {
        const uint64_t begin = plan.placements[other].offset;
        if (offset + item.bytes <= begin) break;  // fits in the gap before `other`
        offset = std::max(offset, align_to(begin + items[other].bytes, item.alignment));
      }
      if (offset + item.bytes <= max_block_bytes) {
        plan.placements[index] = {static_cast<uint32_t>(b), offset};
        placed_in_block[b].push_back(index);
        plan.block_bytes[b] = std::max(plan.block_bytes[b], offset + item.bytes);
        done = true;
      }
    }
    if (!done) {
      VKD_CHECK(item.bytes <= max_block_bytes, ErrorCode::Unsupported, "memory plan: a ",
                item.bytes, "-byte buffer exceeds the ", max_block_bytes, "-byte allocation limit");
      plan.placements[index] = {static_cast<uint32_t>(placed_in_block.size()), 0};
      placed_in_block.push_back({index});
      plan.block_bytes.push_back(item.bytes);
    }
  }
  plan.planned_bytes =
      std::accumulate(plan.block_bytes.begin(), plan.block_bytes.end(), uint64_t{0});
  return plan;
}

}  // namespace vkd::graph
