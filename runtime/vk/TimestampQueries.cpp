#include "runtime/vk/TimestampQueries.h"

#include "runtime/vk/VkError.h"

namespace vkd::vk {

TimestampQueries::TimestampQueries(VkDevice device, const DeviceProfile& profile, uint32_t regions)
    : device_(device), regions_(regions), period_ns_(profile.timestamp_period_ns) {
  if (!profile.timestamps || regions == 0) return;
  mask_ = profile.timestamp_valid_bits >= 64 ? ~0ull : ((1ull << profile.timestamp_valid_bits) - 1);
  VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  ci.queryCount = 2 * regions;
  VkQueryPool pool = VK_NULL_HANDLE;
  VKD_VK_CHECK(vkCreateQueryPool(device, &ci, nullptr, &pool), "vkCreateQueryPool");
  pool_ = UniqueQueryPool(device, pool);
}

void TimestampQueries::reset(CommandBuffer& cmd) const {
  if (pool_) cmd.reset_queries(pool_.get(), 0, 2 * regions_);
}

void TimestampQueries::begin(CommandBuffer& cmd, uint32_t region) const {
  if (pool_) cmd.write_timestamp(pool_.get(), 2 * region);
}

void TimestampQueries::end(CommandBuffer& cmd, uint32_t region) const {
  if (pool_) cmd.write_timestamp(pool_.get(), 2 * region + 1);
}

std::vector<uint64_t> TimestampQueries::read_ticks() const {
  std::vector<uint64_t> ticks(2 * regions_);
  VKD_VK_CHECK(
      vkGetQueryPoolResults(device_, pool_.get(), 0, 2 * regions_, ticks.size() * sizeof(uint64_t),
                            ticks.data(), sizeof(uint64_t),
                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
      "vkGetQueryPoolResults");
  for (uint64_t& t : ticks) t &= mask_;
  return ticks;
}

double TimestampQueries::ticks_to_us(uint64_t t0, uint64_t t1) const {
  const uint64_t delta = (t1 - t0) & mask_;  // wraps correctly inside the valid bits
  return double(delta) * period_ns_ / 1000.0;
}

std::vector<double> TimestampQueries::read_us() const {
  std::vector<double> out;
  if (!pool_) return out;
  const std::vector<uint64_t> ticks = read_ticks();
  out.reserve(regions_);
  for (uint32_t r = 0; r < regions_; ++r)
    out.push_back(ticks_to_us(ticks[2 * r], ticks[2 * r + 1]));
  return out;
}

double TimestampQueries::span_us() const { return regions_ == 0 ? 0.0 : span_us(0, regions_ - 1); }

double TimestampQueries::span_us(uint32_t first, uint32_t last) const {
  if (!pool_) return 0.0;
  VKD_CHECK(first <= last && last < regions_, ErrorCode::Internal, "timestamp regions ", first,
            "..", last, " outside ", regions_);
  const std::vector<uint64_t> ticks = read_ticks();
  return ticks_to_us(ticks[2 * first], ticks[2 * last + 1]);
}

}  // namespace vkd::vk
