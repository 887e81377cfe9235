// Command-buffer pieces the graph's parts share: the copy between a tensor and a staging buffer
// (input and output staging, constant upload), and a submission that survives a timeout
// (constant upload, image layouts, benchmark).
#pragma once

#include <memory>
#include <string>

#include "core/Error.h"
#include "runtime/graph/GpuTensor.h"
#include "runtime/vk/Commands.h"
#include "runtime/vk/Context.h"

namespace vkd::graph {

// Records the copy between tensor `t` and a staging buffer (at `staging_offset`) in either
// direction; an image leaves GENERAL only for the copy.
void record_copy(vk::CommandBuffer& cb, const GpuTensor& t, VkBuffer staging, bool to_device,
                 uint64_t staging_offset = 0);

// Submits `cmd` and waits. On a timeout the submission is still in flight, so `cmd` and the
// caller's other local objects it uses go to the context, which frees them once the device is
// idle, instead of being destroyed by the unwinding.
template <typename... InUse>
void submit_and_wait_keeping(vk::Context& context, vk::CommandBuffer& cmd, const std::string& what,
                             InUse&... in_use) {
  try {
    context.submit_and_wait(cmd, what);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Timeout) {
      context.keep_until_idle(std::make_shared<vk::CommandBuffer>(std::move(cmd)));
      (context.keep_until_idle(std::make_shared<InUse>(std::move(in_use))), ...);
    }
    throw;
  }
}

}  // namespace vkd::graph
