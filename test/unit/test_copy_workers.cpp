// CopyWorkers (runtime/vk/CopyWorkers.h): the threads that share an execute's large host
// copies. CPU only: every copy is compared with the bytes it must produce, and the bytes
// around the destination must stay as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/vk/CopyWorkers.h"

namespace {

using vkd::CopyWorkers;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Copies `bytes` from an odd offset of a random source to an odd offset of a destination
// filled with a guard pattern, and checks both the copied range and the guards.
void expect_copy(CopyWorkers& workers, size_t bytes, uint32_t seed) {
  const size_t src_offset = 3, dst_offset = 5, guard = 64;
  const std::vector<uint8_t> src = random_bytes(src_offset + bytes, seed);
  std::vector<uint8_t> dst(dst_offset + bytes + guard, 0xA5);
  workers.copy(dst.data() + dst_offset, src.data() + src_offset, bytes);
  for (size_t i = 0; i < dst_offset; ++i) ASSERT_EQ(dst[i], 0xA5) << "guard byte " << i;
  for (size_t i = 0; i < bytes; ++i) {
    ASSERT_EQ(dst[dst_offset + i], src[src_offset + i])
        << "byte " << i << " of " << bytes << " (" << workers.threads() << " threads)";
  }
  for (size_t i = dst_offset + bytes; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "guard " << i;
}

TEST(CopyWorkers, StartsTheThreadsItIsAskedFor) {
  EXPECT_EQ(CopyWorkers(0).threads(), 1u);
  EXPECT_EQ(CopyWorkers(1).threads(), 1u);
  EXPECT_EQ(CopyWorkers(4).threads(), 4u);
}

// Sizes around the parallel threshold and the chunk size, with a partial last chunk.
TEST(CopyWorkers, EverySizeCopiesExactlyItsBytes) {
  const size_t min = CopyWorkers::kMinParallelBytes, chunk = CopyWorkers::kChunkBytes;
  const std::vector<size_t> sizes = {
      0, 1, 4097, min - 1, min, min + 1, min + chunk - 3, 3 * min + 17, 40 * chunk + 1};
  for (unsigned threads : {1u, 2u, 4u, 7u}) {
    CopyWorkers workers(threads);
    uint32_t seed = threads;
    for (size_t bytes : sizes) expect_copy(workers, bytes, ++seed);
  }
}

// Many copies back to back through the same threads: a helper that wakes late must never
// touch a later job with an earlier one's pointers, and every job must be complete on return.
TEST(CopyWorkers, BackToBackCopiesThroughTheSameThreads) {
  CopyWorkers workers(4);
  const size_t big = 5 * CopyWorkers::kMinParallelBytes + 11;
  std::vector<uint8_t> a = random_bytes(big, 1), b = random_bytes(big, 2);
  std::vector<uint8_t> dst(big);
  for (int i = 0; i < 300; ++i) {
    const std::vector<uint8_t>& src = (i % 2) ? a : b;
    const size_t bytes = big - static_cast<size_t>(i % 7) * CopyWorkers::kChunkBytes;
    workers.copy(dst.data(), src.data(), bytes);
    ASSERT_TRUE(std::equal(src.begin(), src.begin() + static_cast<long>(bytes), dst.begin()))
        << "copy " << i;
  }
}

}  // namespace
