// GPU timing from Vulkan timestamp queries: a pair of timestamps around each timed region,
// converted to microseconds with the device's (fractional) timestamp period.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "runtime/vk/Commands.h"
#include "runtime/vk/DeviceProfile.h"
#include "runtime/vk/Handle.h"

namespace vkd::vk {

class TimestampQueries {
 public:
  TimestampQueries() = default;
  TimestampQueries(VkDevice device, const DeviceProfile& profile, uint32_t regions);

  bool enabled() const { return static_cast<bool>(pool_); }
  uint32_t regions() const { return regions_; }
  void reset(CommandBuffer& cmd) const;
  // begin: written once all earlier commands completed (so waiting on them is not counted);
  // end: written once the region's commands completed.
  void begin(CommandBuffer& cmd, uint32_t region) const;
  void end(CommandBuffer& cmd, uint32_t region) const;
  // Durations of every region of the last completed submission, in microseconds.
  std::vector<double> read_us() const;
  // From the first region's begin to the last region's end of the last completed submission
  // (what the regions took together, gaps and overlaps included), in microseconds; 0 when
  // disabled.
  double span_us() const;
  // The same from region `first`'s begin to region `last`'s end.
  double span_us(uint32_t first, uint32_t last) const;

 private:
  std::vector<uint64_t> read_ticks() const;  // every query, masked to the valid bits
  double ticks_to_us(uint64_t t0, uint64_t t1) const;

  VkDevice device_ = VK_NULL_HANDLE;
  UniqueQueryPool pool_;
  uint32_t regions_ = 0;
  double period_ns_ = 1.0;
  uint64_t mask_ = ~0ull;
};

}  // namespace vkd::vk
