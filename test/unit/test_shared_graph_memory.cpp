// SharedGraphMemory (runtime/graph/SharedGraphMemory.h), what the graphs of a dynamic length
// share: a constant found by its bytes or by its first rows (never a shorter run that is not a
// whole number of rows, never twice in one graph, gone once no graph holds it); intermediate
// blocks given to a plan that fits them and to no other.
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/graph/SharedGraphMemory.h"
#include "serialization/Xxh64.h"
#include "test/unit/GpuTest.h"

namespace {

using vkd::graph::ConstantFingerprint;
using vkd::graph::fingerprint_constant;
using vkd::graph::SharedConstant;
using vkd::graph::SharedGraphMemory;
using vkd::serialization::xxh64;

class SharedGraphMemoryTest : public vkd_test::GpuTest {
 protected:
  std::shared_ptr<const vkd::vk::MemoryBlock> block(uint64_t bytes) {
    return std::make_shared<const vkd::vk::MemoryBlock>(
        ctx().memory().allocate_block(bytes, ~0u, "test block"));
  }
};

std::vector<uint8_t> table(size_t bytes) {
  std::vector<uint8_t> t(bytes);
  for (size_t i = 0; i < bytes; ++i) t[i] = static_cast<uint8_t>(i * 7 + 3);
  return t;
}

TEST(SharedGraphMemoryFingerprint, HashesTheWholeAndEveryLeadingRunOfRows) {
  const std::vector<uint8_t> t = table(16 * 32);  // [1, 16, 8] float32: rows of 32 bytes
  const ConstantFingerprint f = fingerprint_constant({1, 16, 8}, t);
  EXPECT_EQ(f.bytes, t.size());
  EXPECT_EQ(f.hash, xxh64(t.data(), t.size()));
  ASSERT_EQ(f.prefixes.size(), 15u);
  for (size_t r = 1; r < 16; ++r) {
    EXPECT_EQ(f.prefixes[r - 1].first, r * 32);
    EXPECT_EQ(f.prefixes[r - 1].second, xxh64(t.data(), r * 32));
  }
  // [1, 1, 8]: the rows of its first dim larger than 1, 8 of 4 bytes.
  EXPECT_EQ(fingerprint_constant({1, 1, 8}, table(32)).prefixes.size(), 7u);
  // No dim larger than 1, or more rows than kMaxPrefixRows: the whole only.
  EXPECT_TRUE(fingerprint_constant({1, 1, 1}, table(4)).prefixes.empty());
  EXPECT_TRUE(
      fingerprint_constant({vkd::graph::kMaxPrefixRows + 1, 1}, table(4 * 8193)).prefixes.empty());
}

TEST_F(SharedGraphMemoryTest, ConstantsAreFoundByTheirBytesOrTheirFirstRows) {
  SharedGraphMemory shared;
  const std::vector<uint8_t> t = table(16 * 32);
  auto c = std::make_shared<const SharedConstant>(SharedConstant{block(4096), 256, t.size()});
  shared.add_constant(fingerprint_constant({1, 16, 8}, t), c);
  const uint64_t alignment = 16;
  EXPECT_EQ(shared.find_constant(t.size(), xxh64(t.data(), t.size()), ~0u, alignment, {}), c);
  EXPECT_EQ(shared.find_constant(5 * 32, xxh64(t.data(), 5 * 32), ~0u, alignment, {}), c);
  // Other bytes, a run that is no whole number of rows, a memory type or alignment the buffer
  // does not allow, or already taken by this graph: none.
  std::vector<uint8_t> other = t;
  other[40] ^= 1;
  EXPECT_EQ(shared.find_constant(5 * 32, xxh64(other.data(), 5 * 32), ~0u, alignment, {}), nullptr);
  EXPECT_EQ(shared.find_constant(40, xxh64(t.data(), 40), ~0u, alignment, {}), nullptr);
  EXPECT_EQ(shared.find_constant(t.size(), xxh64(t.data(), t.size()),
                                 ~(1u << c->block->memory_type()), alignment, {}),
            nullptr);
  EXPECT_EQ(shared.find_constant(t.size(), xxh64(t.data(), t.size()), ~0u, 512, {}), nullptr);
  EXPECT_EQ(shared.find_constant(t.size(), xxh64(t.data(), t.size()), ~0u, alignment, {c.get()}),
            nullptr);
  // Once no graph holds it, it is gone (the pool keeps weak references only).
  const std::weak_ptr<const vkd::vk::MemoryBlock> memory = c->block;
  c.reset();
  EXPECT_TRUE(memory.expired());
  EXPECT_EQ(shared.find_constant(t.size(), xxh64(t.data(), t.size()), ~0u, alignment, {}), nullptr);
}

TEST_F(SharedGraphMemoryTest, IntermediatesGoToAPlanThatFitsTheFirstBlocksOnly) {
  SharedGraphMemory shared;
  EXPECT_TRUE(shared.intermediates_for({64}, ~0u).empty());  // nothing offered yet
  const auto first = block(1024), second = block(256);
  shared.offer_intermediates({first, second});
  shared.offer_intermediates({block(4096)});  // the first offer stays
  EXPECT_EQ(shared.intermediates_for({1024, 256}, ~0u),
            (std::vector<std::shared_ptr<const vkd::vk::MemoryBlock>>{first, second}));
  EXPECT_EQ(shared.intermediates_for({512}, ~0u),
            (std::vector<std::shared_ptr<const vkd::vk::MemoryBlock>>{first}));
  EXPECT_TRUE(shared.intermediates_for({1025}, ~0u).empty());         // too large
  EXPECT_TRUE(shared.intermediates_for({512, 257}, ~0u).empty());     // second block too large
  EXPECT_TRUE(shared.intermediates_for({512, 64, 64}, ~0u).empty());  // more blocks
  EXPECT_TRUE(shared.intermediates_for({512}, ~(1u << first->memory_type())).empty());
}

}  // namespace
