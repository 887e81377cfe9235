#include "core/DeviceClass.h"

namespace vkd {
namespace {

// The values and their sources: docs/DEVICES.md "Device classes". A class that spans many
// GPUs takes the lowest value its drivers report.
std::vector<DeviceClass> make_classes() {
  std::vector<DeviceClass> classes;
  {
    DeviceClass c;
    c.name = "android-baseline-2022";
    c.description = "Khronos VP_ANDROID_baseline_2022, the floor of most Android devices";
    c.api_minor = 1;
    c.max_shared_memory_bytes = 16384;
    c.max_workgroup_invocations = 128;
    c.max_workgroup_size = {128, 128, 64};
    c.max_workgroup_count = 65535;
    c.max_per_stage_storage_buffers = 4;
    c.max_per_stage_storage_images = 4;
    c.max_image_dimension_3d = 512;
    c.max_storage_buffer_range_bytes = 134217728;
    c.max_push_constant_bytes = 128;
    c.subgroup_sizes = "4-128";
    classes.push_back(c);
  }
  {
    DeviceClass c;
    c.name = "mali-g7x";
    c.description = "ARM Mali Bifrost and Valhall G71-G78 on Vulkan 1.1 drivers";
    c.api_minor = 1;
    c.max_shared_memory_bytes = 32768;
    c.max_workgroup_invocations = 128;
    c.max_workgroup_size = {128, 128, 64};
    c.max_workgroup_count = 65535;
    c.max_per_stage_storage_buffers = 35;
    c.max_per_stage_storage_images = 8;
    c.max_image_dimension_3d = 512;
    c.max_storage_buffer_range_bytes = 134217728;
    c.max_push_constant_bytes = 128;
    c.storage_16bit = true;
    c.shared_memory_pays = false;
    c.subgroup_sizes = "4, 8 (Bifrost), 16 (Valhall)";
    classes.push_back(c);
  }
  {
    DeviceClass c;
    c.name = "adreno-6xx";
    c.description = "Qualcomm Adreno 6xx (610-690), their drivers' lowest values";
    c.api_minor = 1;
    c.max_shared_memory_bytes = 16384;
    c.max_workgroup_invocations = 512;
    c.max_workgroup_size = {512, 512, 64};
    c.max_workgroup_count = 65535;
    c.max_per_stage_storage_buffers = 24;
    c.max_per_stage_storage_images = 64;
    c.max_image_dimension_3d = 2048;
    c.max_storage_buffer_range_bytes = 134217728;
    c.max_push_constant_bytes = 128;
    c.subgroup_sizes = "64, 128";
    classes.push_back(c);
  }
  {
    DeviceClass c;
    c.name = "apple-m1";
    c.description = "Apple M1 through MoltenVK 1.2 (a portability driver)";
    c.api_minor = 2;
    c.max_shared_memory_bytes = 32768;
    c.max_workgroup_invocations = 1024;
    c.max_workgroup_size = {1024, 1024, 1024};
    c.max_workgroup_count = 1073741824;
    c.max_per_stage_storage_buffers = 31;
    c.max_per_stage_storage_images = 8;
    c.max_image_dimension_3d = 2048;
    c.max_storage_buffer_range_bytes = 4294967295;
    c.max_push_constant_bytes = 4096;
    c.subgroup_arithmetic = true;
    c.storage_16bit = true;
    c.float16_arithmetic = true;
    c.subgroup_sizes = "32";
    classes.push_back(c);
  }
  return classes;
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
