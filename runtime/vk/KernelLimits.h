// A kernel's needs against the device's limits, checked when its pipeline is built: the local
// size (fixed in the shader or specialized), the shared memory (the reflected variables, those
// sized by specialization constants evaluated with the pipeline's values) and the push
// constants. The driver would fail, hang or read out of bounds past them; a device class
// (core/DeviceClass.h) lowers the limits below what the driver under it has, and only this
// check holds kernels to them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/vk/DeviceProfile.h"
#include "vkd/generated/ShaderRegistry.h"

namespace vkd::vk {

// The workgroup's shared memory in bytes: the fixed part plus the program's value, with
// `local_size` for constant_ids 0-2 and `spec_constants` (the kernel's ids >= 3 in order).
uint64_t shared_memory_bytes(const shaders::ShaderInfo& info,
                             const std::array<uint32_t, 3>& local_size,
                             const std::vector<uint32_t>& spec_constants);

// The storage buffers a kernel binds (its bindings that are not storage images), and whether
// they fit a stage of `profile` (maxPerStageDescriptorStorageBuffers): the one count the graph's
// check at add_node and the ops' ways down (a kernel's smaller form where it does not fit) use.
uint32_t storage_buffers_of(const shaders::ShaderInfo& info);
bool fits_storage_buffers(const DeviceProfile& profile, shaders::Kernel kernel);
// Why a kernel does not fit, in the words of the graph's check at add_node and of a way down's
// line: "kernel K binds 5 storage buffers; the device's maxPerStageDescriptorStorageBuffers is
// 4"; `what` names the kernel(s) in the second form.
std::string storage_buffers_problem(const DeviceProfile& profile, shaders::Kernel kernel);
std::string storage_buffers_problem(const DeviceProfile& profile, const std::string& what,
                                    uint32_t buffers);

// What of the kernel exceeds `profile`, in words naming the limit and both values; empty
// when it fits.
std::string kernel_limit_problem(const DeviceProfile& profile, const shaders::ShaderInfo& info,
                                 const std::array<uint32_t, 3>& local_size,
                                 const std::vector<uint32_t>& spec_constants);

}  // namespace vkd::vk
