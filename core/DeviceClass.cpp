#include "core/DeviceClass.h"

namespace vkd {
namespace {

// The Android baseline (Khronos VP_ANDROID_baseline_2022), which the phone classes start from:
// Vulkan 1.1 and what every Android device offers.
DeviceClass android_baseline() {
  DeviceClass c;
  c.name = "android-baseline-2022";
  c.description = "Khronos VP_ANDROID_baseline_2022, the floor of most Android devices";
  c.api_minor = 1;
  c.limits.max_shared_memory_bytes = 16384;
  c.limits.max_workgroup_invocations = 128;
  c.limits.max_workgroup_size = {128, 128, 64};
  c.limits.max_workgroup_count = 65535;
  c.limits.max_per_stage_storage_buffers = 4;
  c.limits.max_per_stage_storage_images = 4;
  c.limits.max_image_dimension_3d = 512;
  c.limits.max_storage_buffer_range_bytes = 134217728;
  c.limits.max_push_constant_bytes = 128;
  c.subgroup_sizes = "4-128";
  return c;
}

// The values and their sources: docs/DEVICES.md "The classes". A class that spans many GPUs
// takes the lowest value its drivers report; the phone classes differ from the baseline where
// their drivers all offer more.
std::vector<DeviceClass> make_classes() {
  DeviceClass mali = android_baseline();
  mali.name = "mali-g7x";
  mali.description = "ARM Mali Bifrost and Valhall G71-G78 on Vulkan 1.1 drivers";
  mali.limits.max_shared_memory_bytes = 32768;
  mali.limits.max_per_stage_storage_buffers = 35;
  mali.limits.max_per_stage_storage_images = 8;
  mali.storage_16bit = true;
  mali.shared_memory_pays = false;
  mali.subgroup_sizes = "4, 8 (Bifrost), 16 (Valhall)";

  DeviceClass adreno = android_baseline();
  adreno.name = "adreno-6xx";
  adreno.description = "Qualcomm Adreno 6xx (610-690), their drivers' lowest values";
  adreno.limits.max_workgroup_invocations = 512;
  adreno.limits.max_workgroup_size = {512, 512, 64};
  adreno.limits.max_per_stage_storage_buffers = 24;
  adreno.limits.max_per_stage_storage_images = 64;
  adreno.limits.max_image_dimension_3d = 2048;
  adreno.subgroup_sizes = "64, 128";

  DeviceClass apple;
  apple.name = "apple-m1";
  apple.description = "Apple M1 through MoltenVK 1.2 (a portability driver)";
  apple.api_minor = 2;
  apple.limits.max_shared_memory_bytes = 32768;
  apple.limits.max_workgroup_invocations = 1024;
  apple.limits.max_workgroup_size = {1024, 1024, 1024};
  apple.limits.max_workgroup_count = 1073741824;
  apple.limits.max_per_stage_storage_buffers = 31;
  apple.limits.max_per_stage_storage_images = 8;
  apple.limits.max_image_dimension_3d = 2048;
  apple.limits.max_storage_buffer_range_bytes = 4294967295;
  apple.limits.max_push_constant_bytes = 4096;
  apple.subgroup_arithmetic = apple.storage_16bit = apple.float16_arithmetic = true;
  apple.subgroup_sizes = "32";
  return {android_baseline(), mali, adreno, apple};
}

}  // namespace

const std::vector<DeviceClass>& device_classes() {
  static const std::vector<DeviceClass> classes = make_classes();
  return classes;
}

const DeviceClass* find_device_class(std::string_view name) {
  for (const DeviceClass& c : device_classes()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string device_class_names() {
  std::string names;
  for (const DeviceClass& c : device_classes()) names += (names.empty() ? "" : ", ") + c.name;
  return names;
}

}  // namespace vkd
