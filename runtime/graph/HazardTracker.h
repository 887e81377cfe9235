// Where a graph needs pipeline barriers between its dispatches: before a node only when it
// touches memory that a node since the last barrier wrote (read-after-write, write-after-write)
// or writes memory that such a node read (write-after-read). Independent dispatches (several
// ops reading one input into different outputs) then run back to back.
//
// Decided on byte ranges of device memory, not on tensors: the memory plan lets intermediates
// whose lifetimes do not overlap share bytes, so two different tensors can be the same memory.
// Pure arithmetic, testable without a GPU.
#pragma once

#include <cstdint>
#include <vector>

namespace vkd::graph {

// Bytes [offset, offset + bytes) of one device memory allocation, named by `memory` (a shared
// block of the memory plan, or an image's own memory).
struct MemoryRange {
  uint32_t memory = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;

  bool overlaps(const MemoryRange& other) const {
    return memory == other.memory && bytes > 0 && other.bytes > 0 &&
           offset < other.offset + other.bytes && other.offset < offset + bytes;
  }
};

// The memory one dispatch node may read and may write.
struct NodeAccess {
  std::vector<MemoryRange> reads;
  std::vector<MemoryRange> writes;
};

// Walks the nodes in recording order and remembers what was read and written since the last
// barrier it asked for.
class HazardTracker {
 public:
  // Adds the next node; returns whether a barrier must be recorded before it. A barrier orders
  // everything recorded before it, so afterwards only this node's accesses are pending.
  bool add(const NodeAccess& node);

 private:
  std::vector<MemoryRange> read_, written_;  // since the last barrier
};

// barrier_before[n] for each node in order. The first entry is false: what comes before the
// first dispatch (input copies, an earlier run) is the recorder's to order.
std::vector<bool> plan_barriers(const std::vector<NodeAccess>& nodes);

}  // namespace vkd::graph
