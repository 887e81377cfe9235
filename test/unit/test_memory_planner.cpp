// Memory planning (runtime/graph/MemoryPlanner.h): pure arithmetic, no GPU.
#include <gtest/gtest.h>

#include <random>

#include "core/Error.h"
#include "runtime/graph/MemoryPlanner.h"

namespace {

using vkd::graph::MemoryPlan;
using vkd::graph::plan_memory;
using vkd::graph::PlanItem;

// Independent check of a plan: inside the limit, aligned, and no two items that are alive at
// the same time share a byte.
void expect_valid(const std::vector<PlanItem>& items, const MemoryPlan& plan, uint64_t limit) {
  ASSERT_EQ(plan.placements.size(), items.size());
  uint64_t total = 0;
  for (uint64_t b : plan.block_bytes) {
    EXPECT_LE(b, limit);
    total += b;
  }
  EXPECT_EQ(plan.planned_bytes, total);
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& p = plan.placements[i];
    ASSERT_LT(p.block, plan.block_bytes.size());
    EXPECT_EQ(p.offset % items[i].alignment, 0u) << "item " << i;
    EXPECT_LE(p.offset + items[i].bytes, plan.block_bytes[p.block]) << "item " << i;
    for (size_t j = 0; j < i; ++j) {
      const auto& q = plan.placements[j];
      const bool alive_together =
          items[i].first_use <= items[j].last_use && items[j].first_use <= items[i].last_use;
      const bool same_bytes = p.block == q.block && p.offset < q.offset + items[j].bytes &&
                              q.offset < p.offset + items[i].bytes;
      EXPECT_FALSE(alive_together && same_bytes) << "items " << j << " and " << i << " overlap";
    }
  }
}

TEST(MemoryPlanner, ChainOfIntermediatesReusesMemory) {
  // x -> t0 -> t1 -> t2 -> t3 -> t4 -> y: node k reads t(k-1) and writes t(k), so at most two
  // intermediates are alive at once.
  std::vector<PlanItem> items;
  for (int k = 0; k < 5; ++k) items.push_back({1000, 16, k, k + 1});
  const MemoryPlan plan = plan_memory(items, 1u << 30);
  expect_valid(items, plan, 1u << 30);
  EXPECT_EQ(plan.naive_bytes, 5 * 1008u);  // sizes rounded up to the alignment
  EXPECT_EQ(plan.planned_bytes, 1008u + 1000u);
  ASSERT_EQ(plan.block_bytes.size(), 1u);
}

TEST(MemoryPlanner, OverlappingLifetimesNeverShare) {
  std::vector<PlanItem> items = {{64, 64, 0, 3}, {64, 64, 1, 2}, {64, 64, 2, 5}};
  const MemoryPlan plan = plan_memory(items, 1u << 20);
  expect_valid(items, plan, 1u << 20);
  EXPECT_EQ(plan.planned_bytes, 192u);
}

TEST(MemoryPlanner, SmallItemFillsAGapBetweenLiveItems) {
  // A (alive 0-1) and C (alive 0-3) bracket a gap that B (alive 2-3) fits into once A is dead.
  std::vector<PlanItem> items = {{256, 16, 0, 1}, {512, 16, 0, 3}, {128, 16, 2, 3}};
  const MemoryPlan plan = plan_memory(items, 1u << 20);
  expect_valid(items, plan, 1u << 20);
  EXPECT_EQ(plan.planned_bytes, 768u);
}

TEST(MemoryPlanner, BlockLimitOpensNewBlocks) {
  std::vector<PlanItem> items = {{600, 4, 0, 9}, {600, 4, 0, 9}, {600, 4, 0, 9}};
  const MemoryPlan plan = plan_memory(items, 1000);
  expect_valid(items, plan, 1000);
  EXPECT_EQ(plan.block_bytes.size(), 3u);
}

TEST(MemoryPlanner, ItemLargerThanTheLimitIsAnError) {
  try {
    plan_memory({{2048, 4, 0, 0}}, 1024);
    FAIL() << "expected an error";
  } catch (const vkd::Error& e) {
    EXPECT_EQ(e.code(), vkd::ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("2048-byte buffer exceeds the 1024-byte"),
              std::string::npos)
        << e.what();
  }
}

TEST(MemoryPlanner, RandomGraphsGiveValidPlansNoLargerThanNaive) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    // One alignment per graph, as a device gives for all its storage buffers (with mixed
    // alignments a plan may exceed the naive sum by the alignment padding).
    std::vector<PlanItem> items;
    const int n = 1 + static_cast<int>(rng() % 40);
    const uint64_t alignment = uint64_t{1} << (rng() % 9);
    for (int i = 0; i < n; ++i) {
      const int64_t first = rng() % 30;
      items.push_back(
          {1 + rng() % 5000, alignment, first, first + static_cast<int64_t>(rng() % 8)});
    }
    const uint64_t limit = 20000;
    const MemoryPlan plan = plan_memory(items, limit);
    expect_valid(items, plan, limit);
    EXPECT_LE(plan.planned_bytes, plan.naive_bytes) << "trial " << trial;
  }
}

}  // namespace
