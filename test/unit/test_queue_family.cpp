// The queue family choice without a GPU (runtime/vk/DeviceProfile.h choose_queue_family), on
// the family tables real drivers report: NVIDIA's universal family 0 beside its compute-only
// family 2, AMD's graphics + async compute, a phone's single universal family, lavapipe's.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/vk/DeviceProfile.h"

namespace vkd_test {
namespace {

using vkd::vk::choose_queue_family;

VkQueueFamilyProperties family(VkQueueFlags flags, uint32_t count, uint32_t timestamp_bits) {
  VkQueueFamilyProperties f{};
  f.queueFlags = flags;
  f.queueCount = count;
  f.timestampValidBits = timestamp_bits;
  return f;
}

constexpr VkQueueFlags kUniversal =
    VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT;
constexpr VkQueueFlags kCompute = VK_QUEUE_COMPUTE_BIT | VK_QUEUE_TRANSFER_BIT;

TEST(QueueFamily, PrefersComputeOnlyFamilyWithTimestamps) {
  // NVIDIA (H200, driver 580): universal, transfer-only, compute-only, then video families.
  const std::vector<VkQueueFamilyProperties> nvidia = {
      family(kUniversal, 16, 64), family(VK_QUEUE_TRANSFER_BIT, 2, 64), family(kCompute, 8, 64),
      family(VK_QUEUE_VIDEO_DECODE_BIT_KHR, 4, 32)};
  EXPECT_EQ(choose_queue_family(nvidia), std::optional<uint32_t>(2));
}

TEST(QueueFamily, SingleUniversalFamily) {
  // Phones (Mali, Adreno) and lavapipe: one family does everything.
  EXPECT_EQ(choose_queue_family({family(kUniversal, 1, 64)}), std::optional<uint32_t>(0));
}

TEST(QueueFamily, TimestampsOutrankComputeOnly) {
  // A compute-only family without timestamps would lose every GPU time figure.
  const std::vector<VkQueueFamilyProperties> families = {family(kUniversal, 1, 48),
                                                         family(kCompute, 2, 0)};
  EXPECT_EQ(choose_queue_family(families), std::optional<uint32_t>(0));
  // Neither has timestamps: the compute-only one.
  const std::vector<VkQueueFamilyProperties> untimed = {family(kUniversal, 1, 0),
                                                        family(kCompute, 2, 0)};
  EXPECT_EQ(choose_queue_family(untimed), std::optional<uint32_t>(1));
}

TEST(QueueFamily, FirstOfEqualFamiliesAndNoneWithoutCompute) {
  const std::vector<VkQueueFamilyProperties> two = {family(kCompute, 4, 64),
                                                    family(kCompute, 4, 64)};
  EXPECT_EQ(choose_queue_family(two), std::optional<uint32_t>(0));
  // A family that reports no queues is no family.
  EXPECT_EQ(choose_queue_family({family(kCompute, 0, 64), family(kUniversal, 1, 64)}),
            std::optional<uint32_t>(1));
  EXPECT_EQ(choose_queue_family({family(VK_QUEUE_TRANSFER_BIT, 1, 64)}), std::nullopt);
  EXPECT_EQ(choose_queue_family({}), std::nullopt);
}

}  // namespace
}  // namespace vkd_test
