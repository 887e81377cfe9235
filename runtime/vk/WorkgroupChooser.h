// The one place that turns "work items" into a local workgroup size and a dispatch grid,
// clamped to the device limits. Linear work larger than maxComputeWorkGroupCount[0] groups is
// split across y and z; shaders recover the linear index with linear_invocation_id()
// (shaders/common/common.glslh) and guard it against the item count they are given.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/vk/DeviceProfile.h"

namespace vkd::vk {

struct DispatchPlan {
  std::array<uint32_t, 3> local_size{1, 1, 1};
  std::array<uint32_t, 3> group_count{1, 1, 1};
  uint64_t invocations() const;
};

// 1-D work of `items` invocations. `preferred_local` is a hint (default: the device's
// linear default); VKD_WORKGROUP_SIZE overrides it for every linear dispatch.
DispatchPlan plan_linear(const DeviceProfile& profile, uint64_t items,
                         uint32_t preferred_local = 0);

// Default local size for linear dispatches on this device (a multiple of the subgroup size).
uint32_t default_linear_local_size(const DeviceProfile& profile);

}  // namespace vkd::vk
