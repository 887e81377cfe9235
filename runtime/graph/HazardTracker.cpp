#include "runtime/graph/HazardTracker.h"

#include <algorithm>

namespace vkd::graph {
namespace {

bool any_overlap(const std::vector<MemoryRange>& a, const std::vector<MemoryRange>& b) {
  return std::any_of(a.begin(), a.end(), [&](const MemoryRange& x) {
    return std::any_of(b.begin(), b.end(), [&](const MemoryRange& y) { return x.overlaps(y); });
  });
}

}  // namespace

bool HazardTracker::add(const NodeAccess& node) {
  const bool hazard = any_overlap(node.reads, written_) ||   // read after write
                      any_overlap(node.writes, written_) ||  // write after write
                      any_overlap(node.writes, read_);       // write after read
  if (hazard) {
    read_.clear();
    written_.clear();
  }
  read_.insert(read_.end(), node.reads.begin(), node.reads.end());
  written_.insert(written_.end(), node.writes.begin(), node.writes.end());
  return hazard;
}

std::vector<bool> plan_barriers(const std::vector<NodeAccess>& nodes) {
  HazardTracker tracker;
  std::vector<bool> barrier_before;
  barrier_before.reserve(nodes.size());
  for (const NodeAccess& node : nodes) barrier_before.push_back(tracker.add(node));
  return barrier_before;
}

}  // namespace vkd::graph
