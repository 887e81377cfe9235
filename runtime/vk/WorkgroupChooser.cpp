#include "runtime/vk/WorkgroupChooser.h"

#include <algorithm>
#include <string>

#include "core/Env.h"
#include "core/Error.h"
#include "runtime/vk/Instance.h"

namespace vkd::vk {

uint64_t DispatchPlan::invocations() const {
  return uint64_t(local_size[0]) * local_size[1] * local_size[2] * group_count[0] * group_count[1] *
         group_count[2];
}

uint32_t default_linear_local_size(const DeviceProfile& profile) {
  // 128 keeps at least four subgroups of 32 (two of 64) in a workgroup, which hides memory
  // latency on desktop GPUs; CPU devices (lavapipe) vectorize over the subgroup and gain
  // nothing from larger groups.
  const uint32_t wanted = profile.is_cpu() ? 64u : 128u;
  return std::min(wanted,
                  std::min(profile.max_workgroup_size[0], profile.max_workgroup_invocations));
}

DispatchPlan plan_linear(const DeviceProfile& profile, uint64_t items, uint32_t preferred_local) {
  uint32_t local = preferred_local ? preferred_local : default_linear_local_size(profile);
  if (const auto forced = env_uint("VKD_WORKGROUP_SIZE", 1, 1u << 16)) local = *forced;
  local = std::max(
      1u, std::min({local, profile.max_workgroup_size[0], profile.max_workgroup_invocations}));

  DispatchPlan plan;
  plan.local_size = {local, 1, 1};
  const uint64_t groups = std::max<uint64_t>(1, (items + local - 1) / local);
  const uint64_t max_x = profile.max_workgroup_count[0];
  if (groups <= max_x) {
    plan.group_count = {static_cast<uint32_t>(groups), 1, 1};
    return plan;
  }
  const uint64_t gy_needed = (groups + max_x - 1) / max_x;
  const uint64_t max_y = profile.max_workgroup_count[1];
  const uint64_t gy = std::min(gy_needed, max_y);
  const uint64_t gz = (gy_needed + gy - 1) / gy;
  VKD_CHECK(gz <= profile.max_workgroup_count[2], ErrorCode::Unsupported, "dispatch of ", items,
            " invocations exceeds the device's workgroup-count limits (",
            profile.max_workgroup_count[0], " x ", profile.max_workgroup_count[1], " x ",
            profile.max_workgroup_count[2], " groups of ", local, ")");
  plan.group_count = {static_cast<uint32_t>(max_x), static_cast<uint32_t>(gy),
                      static_cast<uint32_t>(gz)};
  return plan;
}

}  // namespace vkd::vk
