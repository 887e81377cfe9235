// Device classes: the limits and features of a kind of GPU (a phone's, Apple's through
// MoltenVK), as presets that make any device behave like that class. The runtime lowers its
// device profile to a class (VKD_DEVICE_CLASS, ContextOptions::device_class), so lavapipe in CI
// runs every kernel under a phone's limits; the compiler takes a class's texture extent for
// its layout choice (vkd compile --target CLASS). Plain data, no Vulkan: where each value comes
// from is in docs/DEVICES.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vkd {

// Limits a device is lowered to, each 0 for none: a device above one is lowered to it; below,
// it keeps its own (a class's, and ProfileOverrides::limits).
struct DeviceLimits {
  uint64_t max_storage_buffer_range_bytes = 0;
  uint64_t max_memory_allocation_bytes = 0;
  uint32_t max_push_constant_bytes = 0;
  uint32_t max_image_dimension_3d = 0;  // a class's: also the compiler's texture extent for it
  uint32_t max_per_stage_storage_buffers = 0;
  uint32_t max_per_stage_storage_images = 0;
  uint32_t max_workgroup_count = 0;  // every axis
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_size{};
  uint64_t device_local_heap_bytes = 0;
  uint32_t max_shared_memory_bytes = 0;  // maxComputeSharedMemorySize
};

struct DeviceClass {
  std::string name;         // VKD_DEVICE_CLASS value, `vkd compile --target`
  std::string description;  // which devices, which source

  // Vulkan API version the class's drivers offer (1.minor).
  uint32_t api_minor = 1;
  DeviceLimits limits;
  // Features the class cannot count on: switched off where the device has them.
  bool int8_dot_product = false;
  bool subgroup_arithmetic = false;
  bool storage_16bit = false;
  bool float16_arithmetic = false;
  bool vulkan_memory_model = false;
  bool cooperative_matrix = false;
  // Whether shared memory is faster than the caches (no on Mali: ordinary cached memory, so
  // the GEMM runs register-tiled; DeviceProfile::register_tiled_gemm).
  bool shared_memory_pays = true;
  // The subgroup sizes the class's GPUs run (for reports; a device's own size cannot be
  // changed: CI runs lavapipe at subgroup 4 for the small end).
  std::string subgroup_sizes;
};

// Every class, strictest first.
const std::vector<DeviceClass>& device_classes();

// The class named `name`, or nullptr.
const DeviceClass* find_device_class(std::string_view name);

// "a, b, c": the class names, for error messages and --help.
std::string device_class_names();

}  // namespace vkd
