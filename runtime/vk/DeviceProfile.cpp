#include "runtime/vk/DeviceProfile.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <thread>

#include "core/Env.h"
#include "runtime/vk/DeviceQuirks.h"
#include "runtime/vk/Instance.h"

namespace vkd::vk {
namespace {

constexpr uint32_t kVendorArm = 0x13B5;

bool has_extension(const std::vector<VkExtensionProperties>& all, const char* name) {
  for (const auto& e : all) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

std::string version_string(uint32_t v) {
  std::ostringstream os;
  os << VK_API_VERSION_MAJOR(v) << "." << VK_API_VERSION_MINOR(v) << "." << VK_API_VERSION_PATCH(v);
  return os.str();
}

void read_cooperative_matrix_shapes(VkInstance instance, VkPhysicalDevice device,
                                    DeviceProfile& p) {
#ifdef VK_KHR_cooperative_matrix  // Debian 12's headers (1.3.239) predate the KHR extension
  if (p.cooperative_matrix_khr) {
    auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
    uint32_t count = 0;
    if (get && get(device, &count, nullptr) == VK_SUCCESS) {
      std::vector<VkCooperativeMatrixPropertiesKHR> props(
          count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
      if (get(device, &count, props.data()) == VK_SUCCESS) {
        for (const auto& c : props) {
          if (c.AType == VK_COMPONENT_TYPE_SINT8_KHR && c.BType == VK_COMPONENT_TYPE_SINT8_KHR &&
              c.CType == VK_COMPONENT_TYPE_SINT32_KHR &&
              c.ResultType == VK_COMPONENT_TYPE_SINT32_KHR && c.scope == VK_SCOPE_SUBGROUP_KHR) {
            p.int8_cooperative_matrix_shapes.push_back({c.MSize, c.NSize, c.KSize, true});
          }
        }
      }
    }
  }
#endif
  if (p.cooperative_matrix_nv) {
    auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    uint32_t count = 0;
    if (get && get(device, &count, nullptr) == VK_SUCCESS) {
      std::vector<VkCooperativeMatrixPropertiesNV> props(
          count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      if (get(device, &count, props.data()) == VK_SUCCESS) {
        for (const auto& c : props) {
          if (c.AType == VK_COMPONENT_TYPE_SINT8_NV && c.BType == VK_COMPONENT_TYPE_SINT8_NV &&
              c.CType == VK_COMPONENT_TYPE_SINT32_NV && c.DType == VK_COMPONENT_TYPE_SINT32_NV &&
              c.scope == VK_SCOPE_SUBGROUP_NV) {
            p.int8_cooperative_matrix_shapes.push_back({c.MSize, c.NSize, c.KSize, false});
          }
        }
      }
    }
  }
}

template <typename T, typename U>
void lower_to(T& limit, U cap) {
  if (cap != 0 && static_cast<T>(cap) < limit) limit = static_cast<T>(cap);
}

void apply_limit_overrides(const ProfileOverrides::Limits& caps, DeviceProfile& p) {
  lower_to(p.max_storage_buffer_range_bytes, caps.max_storage_buffer_range_bytes);
  lower_to(p.max_memory_allocation_bytes, caps.max_memory_allocation_bytes);
  lower_to(p.max_push_constant_bytes, caps.max_push_constant_bytes);
  lower_to(p.max_image_dimension_3d, caps.max_image_dimension_3d);
  lower_to(p.max_per_stage_storage_buffers, caps.max_per_stage_storage_buffers);
  lower_to(p.max_per_stage_storage_images, caps.max_per_stage_storage_images);
  for (auto& count : p.max_workgroup_count) lower_to(count, caps.max_workgroup_count);
  lower_to(p.max_workgroup_invocations, caps.max_workgroup_invocations);
  for (int i = 0; i < 3; ++i) lower_to(p.max_workgroup_size[i], caps.max_workgroup_size[i]);
  lower_to(p.device_local_heap_bytes, caps.device_local_heap_bytes);
  lower_to(p.max_shared_memory_bytes, caps.max_shared_memory_bytes);
}

}  // namespace

std::optional<uint32_t> choose_queue_family(const std::vector<VkQueueFamilyProperties>& families) {
  std::optional<uint32_t> best;
  int best_rank = 0;
  for (uint32_t i = 0; i < families.size(); ++i) {
    const VkQueueFamilyProperties& f = families[i];
    if (!(f.queueFlags & VK_QUEUE_COMPUTE_BIT) || f.queueCount == 0) continue;
    const int rank =
        1 + (f.timestampValidBits > 0 ? 2 : 0) + ((f.queueFlags & VK_QUEUE_GRAPHICS_BIT) ? 0 : 1);
    if (rank > best_rank) {
      best = i;
      best_rank = rank;
    }
  }
  return best;
}

DeviceProfile read_device_profile(VkInstance instance, uint32_t instance_api_version,
                                  VkPhysicalDevice device, const ProfileOverrides& overrides,
                                  EnabledExtensions* ext) {
  DeviceProfile p;
  const DeviceClass* cls = overrides.device_class;
  uint32_t ext_count = 0;
  vkEnumerateDeviceExtensionProperties(device, nullptr, &ext_count, nullptr);
  std::vector<VkExtensionProperties> exts(ext_count);
  vkEnumerateDeviceExtensionProperties(device, nullptr, &ext_count, exts.data());

  VkPhysicalDeviceProperties base;
  vkGetPhysicalDeviceProperties(device, &base);
  p.name = base.deviceName;
  p.vendor_id = base.vendorID;
  p.device_id = base.deviceID;
  p.type = base.deviceType;
  p.driver_version = base.driverVersion;
  // The version the device is used as: an instance (or a device class) older than the device
  // makes the newer core features unusable without their extensions.
  p.api_version = std::min(base.apiVersion, instance_api_version);
  if (p.api_version < VK_API_VERSION_1_1) {
    p.unusable = "its driver offers Vulkan " + version_string(base.apiVersion) +
                 "; vkdelegate needs 1.1 or newer (SPIR-V 1.3 kernels, subgroup operations)";
    return p;
  }
  const bool v12 = p.api_version >= VK_API_VERSION_1_2;
  const bool v13 = p.api_version >= VK_API_VERSION_1_3;
  // Enabled whenever present: the instance may have been created for an older API version
  // than the device's, and then the Vulkan 1.3 core feature alone does not count.
  ext->integer_dot_product = has_extension(exts, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  ext->storage_8bit = !v12 && has_extension(exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  ext->float16_int8 = !v12 && has_extension(exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  ext->portability_subset = has_extension(exts, "VK_KHR_portability_subset");
  // Before 1.2 these structures exist only with their extension: chained without it they are
  // invalid usage (Vulkan 1.1 drivers: Android 10-12 phones).
  const bool has_storage_8bit = v12 || ext->storage_8bit;
  const bool has_float16_int8 = v12 || ext->float16_int8;
  const bool has_driver_properties =
      v12 || has_extension(exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  ext->cooperative_matrix_nv = has_extension(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  ext->cooperative_matrix_khr = has_extension(exts, "VK_KHR_cooperative_matrix");
  ext->pipeline_executable_properties =
      has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  const bool dot_available = v13 || ext->integer_dot_product;

  // Properties chain.
  VkPhysicalDeviceShaderIntegerDotProductProperties dot_props{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maint3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &subgroup;
  subgroup.pNext = &maint3;
  maint3.pNext = has_driver_properties ? static_cast<void*>(&driver) : nullptr;
  driver.pNext = dot_available ? &dot_props : nullptr;
  if (!has_driver_properties && dot_available) maint3.pNext = &dot_props;
  vkGetPhysicalDeviceProperties2(device, &props2);

  // Features chain.
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot_feat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDevice16BitStorageFeatures storage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16i8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceVulkanMemoryModelFeatures memory_model{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES};
  VkPhysicalDeviceFeatures2 feats2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  // The chain, each structure only where the version or its extension defines it.
  void** tail = &feats2.pNext;
  auto chain = [&tail](auto& feature) {
    *tail = &feature;
    tail = &feature.pNext;
  };
  chain(storage16);  // core 1.1
  if (v12) chain(memory_model);
  if (has_storage_8bit) chain(storage8);
  if (has_float16_int8) chain(f16i8);
  if (dot_available) chain(dot_feat);
  // Only chained when the extension exists: an unknown structure in the chain is invalid usage.
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_feat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (ext->pipeline_executable_properties) chain(executable_feat);
  vkGetPhysicalDeviceFeatures2(device, &feats2);

  std::memcpy(p.pipeline_cache_uuid.data(), base.pipelineCacheUUID, VK_UUID_SIZE);
  if (has_driver_properties) {
    p.driver_id = driver.driverID;
    p.driver_name = driver.driverName;
    p.driver_info = driver.driverInfo;
  }

  p.int8_dot_product = dot_available && dot_feat.shaderIntegerDotProduct;
  p.int8_dot_product_accelerated =
      p.int8_dot_product && dot_props.integerDotProduct4x8BitPackedSignedAccelerated;
  p.storage_8bit = has_storage_8bit && storage8.storageBuffer8BitAccess;
  p.storage_16bit = storage16.storageBuffer16BitAccess;
  p.int8_arithmetic = has_float16_int8 && f16i8.shaderInt8;
  p.float16_arithmetic = has_float16_int8 && f16i8.shaderFloat16;
  p.vulkan_memory_model = v12 && memory_model.vulkanMemoryModel;
  p.memory_model_device_scope = p.vulkan_memory_model && memory_model.vulkanMemoryModelDeviceScope;
  p.cooperative_matrix_nv = ext->cooperative_matrix_nv;
  p.cooperative_matrix_khr = ext->cooperative_matrix_khr;
  read_cooperative_matrix_shapes(instance, device, p);
  p.pipeline_executable_info =
      ext->pipeline_executable_properties && executable_feat.pipelineExecutableInfo;

  p.subgroup_size = subgroup.subgroupSize;
  p.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  p.subgroup_shuffle =
      p.subgroup_arithmetic && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  p.subgroup_ballot = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);
  const auto& lim = base.limits;
  for (int i = 0; i < 3; ++i) {
    p.max_workgroup_size[i] = lim.maxComputeWorkGroupSize[i];
    p.max_workgroup_count[i] = lim.maxComputeWorkGroupCount[i];
  }
  p.max_workgroup_invocations = lim.maxComputeWorkGroupInvocations;
  p.max_shared_memory_bytes = lim.maxComputeSharedMemorySize;
  p.max_storage_buffer_range_bytes = lim.maxStorageBufferRange;
  p.max_memory_allocation_bytes = maint3.maxMemoryAllocationSize;
  p.max_push_constant_bytes = lim.maxPushConstantsSize;
  p.max_image_dimension_3d = lim.maxImageDimension3D;
  p.max_per_stage_storage_buffers = lim.maxPerStageDescriptorStorageBuffers;
  p.max_per_stage_storage_images = lim.maxPerStageDescriptorStorageImages;

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(device, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
      p.device_local_heap_bytes =
          std::max<uint64_t>(p.device_local_heap_bytes, mem.memoryHeaps[i].size);
    }
  }

  uint32_t qcount = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(device, &qcount, nullptr);
  std::vector<VkQueueFamilyProperties> queues(qcount);
  vkGetPhysicalDeviceQueueFamilyProperties(device, &qcount, queues.data());
  p.queue_family = choose_queue_family(queues);
  if (p.queue_family) p.timestamp_valid_bits = queues[*p.queue_family].timestampValidBits;
  p.timestamps = p.timestamp_valid_bits > 0 && lim.timestampPeriod > 0.0f;
  p.timestamp_period_ns = lim.timestampPeriod;
  p.fence_spin_us = p.is_cpu() ? 0 : 20000;
  p.pipeline_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  p.host_copy_threads = p.is_cpu() ? 1u : std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  p.compact_kernels = p.is_cpu();

  // Known driver bugs (DeviceQuirks.h): each matching entry's workaround, by name.
  p.quirks_applied = apply_device_quirks(p);

  // Features switched off: by a context option or its environment variable (so fallback paths
  // run on any device), or because the device class cannot count on them. goes() says whether
  // `feature` (present) is to go, and records the first reason.
  auto goes = [&p, cls](bool present, bool by_option, const char* env, bool class_has,
                        const char* feature) {
    if (!present) return false;
    std::string why;
    if (by_option) {
      why = "context option";
    } else if (env && env_flag(env)) {
      why = env;
    } else if (cls && !class_has) {
      why = "device class " + cls->name;
    } else {
      return false;
    }
    p.disabled.push_back(std::string(feature) + " (" + why + ")");
    return true;
  };
  const auto class_has = [cls](bool DeviceClass::* feature) { return !cls || cls->*feature; };
  if (goes(p.int8_dot_product, overrides.disable_int8_dot, "VKD_DISABLE_INT8_DOT",
           class_has(&DeviceClass::int8_dot_product), "int8 dot product")) {
    p.int8_dot_product = p.int8_dot_product_accelerated = false;
  }
  if (goes(p.cooperative_matrix_nv || p.cooperative_matrix_khr,
           overrides.disable_cooperative_matrix, "VKD_DISABLE_COOPMAT",
           class_has(&DeviceClass::cooperative_matrix), "cooperative matrix")) {
    p.cooperative_matrix_nv = p.cooperative_matrix_khr = false;
    p.int8_cooperative_matrix_shapes.clear();
  }
  if (goes(p.subgroup_arithmetic, overrides.disable_subgroup_arithmetic,
           "VKD_DISABLE_SUBGROUP_ARITH", class_has(&DeviceClass::subgroup_arithmetic),
           "subgroup arithmetic")) {
    p.subgroup_arithmetic = p.subgroup_shuffle = false;
  }
  if (goes(p.float16_arithmetic || p.storage_16bit, false, "VKD_DISABLE_FLOAT16", true,
           "float16")) {
    p.float16_arithmetic = p.storage_16bit = false;
  }
  if (goes(p.storage_16bit, false, nullptr, class_has(&DeviceClass::storage_16bit),
           "16-bit storage")) {
    p.storage_16bit = false;
  }
  if (goes(p.float16_arithmetic, false, nullptr, class_has(&DeviceClass::float16_arithmetic),
           "float16 arithmetic")) {
    p.float16_arithmetic = false;
  }
  if (goes(p.vulkan_memory_model, false, nullptr, class_has(&DeviceClass::vulkan_memory_model),
           "the Vulkan memory model")) {
    p.vulkan_memory_model = p.memory_model_device_scope = false;
  }
  // After the subgroup override: the CPU kernels need subgroup operations (kReqSubgroup). A
  // device class is a GPU's: its kernels are the GPU kernels.
  p.cpu_kernels = p.is_cpu() && p.subgroup_size == 8 && p.subgroup_arithmetic && p.subgroup_ballot;
  if (goes(p.cpu_kernels, overrides.disable_cpu_kernels, "VKD_DISABLE_CPU_KERNELS", !cls,
           "CPU-shaped kernels")) {
    p.cpu_kernels = false;
  }
  if (const auto compact = env_uint("VKD_COMPACT_KERNELS", 0, 1)) {
    p.compact_kernels = *compact == 1;
  }
  p.register_tiled_gemm =
      !p.cpu_kernels && (p.vendor_id == kVendorArm || (cls && !cls->shared_memory_pays));
  if (const auto tiled = env_uint("VKD_REGISTER_TILED_GEMM", 0, 1)) {
    p.register_tiled_gemm = *tiled == 1 && !p.cpu_kernels;
  }
  apply_limit_overrides(overrides.limits, p);
  if (cls) {
    p.device_class = cls->name;
    apply_limit_overrides(cls->limits, p);
  }
  return p;
}

bool DeviceProfile::has_int8_cooperative_matrix_nv(uint32_t m, uint32_t n, uint32_t k) const {
  if (!cooperative_matrix_nv || !int8_arithmetic || !vulkan_memory_model) return false;
  return std::any_of(
      int8_cooperative_matrix_shapes.begin(), int8_cooperative_matrix_shapes.end(),
      [&](const CooperativeMatrixShape& s) { return !s.khr && s.m == m && s.n == n && s.k == k; });
}

std::string DeviceProfile::summary() const {
  std::ostringstream os;
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  os << name << " (" << device_type_name(type) << ", vendor 0x" << std::hex << vendor_id
     << " device 0x" << device_id << std::dec << ")\n";
  if (!unusable.empty()) {
    os << "  not usable: " << unusable << "\n";
    return os.str();
  }
  if (!device_class.empty()) {
    os << "  as device class " << device_class << " (its limits and features, VKD_DEVICE_CLASS)\n";
  }
  os << "  Vulkan " << version_string(api_version) << ", driver " << driver_name << " "
     << driver_info << "\n";
  os << "  int8 dot product: " << yes(int8_dot_product)
     << " (accelerated: " << yes(int8_dot_product_accelerated) << ")\n";
  os << "  8-bit storage: " << yes(storage_8bit) << ", 16-bit storage: " << yes(storage_16bit)
     << ", int8 arith: " << yes(int8_arithmetic) << ", float16 arith: " << yes(float16_arithmetic)
     << ", memory model: " << yes(vulkan_memory_model)
     << " (device scope: " << yes(memory_model_device_scope) << ")\n";
  os << "  kernel statistics (VK_KHR_pipeline_executable_properties): "
     << yes(pipeline_executable_info) << "\n";
  os << "  cooperative matrix: NV " << yes(cooperative_matrix_nv) << ", KHR "
     << yes(cooperative_matrix_khr) << "; int8 shapes:";
  if (int8_cooperative_matrix_shapes.empty()) os << " none";
  for (const auto& s : int8_cooperative_matrix_shapes) {
    os << " " << s.m << "x" << s.n << "x" << s.k << (s.khr ? "(KHR)" : "(NV)");
  }
  os << "\n  subgroup " << subgroup_size << (subgroup_arithmetic ? " (arithmetic)" : "")
     << (subgroup_ballot ? " (ballot)" : "") << ", workgroup size max " << max_workgroup_size[0]
     << "x" << max_workgroup_size[1] << "x" << max_workgroup_size[2] << " ("
     << max_workgroup_invocations << " invocations), workgroup count max " << max_workgroup_count[0]
     << "x" << max_workgroup_count[1] << "x" << max_workgroup_count[2] << "\n";
  os << "  shared memory " << max_shared_memory_bytes << " B, storage buffer range "
     << max_storage_buffer_range_bytes << " B, push constants " << max_push_constant_bytes
     << " B, image 3D " << max_image_dimension_3d << " texels, per stage "
     << max_per_stage_storage_buffers << " storage buffers and " << max_per_stage_storage_images
     << " storage images\n";
  os << "  queue family ";
  if (queue_family) {
    os << *queue_family;
  } else {
    os << "none with compute";
  }
  os << ", device-local heap " << (device_local_heap_bytes >> 20) << " MiB, timestamps "
     << (timestamps ? "yes" : "no") << " (period " << timestamp_period_ns << " ns, "
     << timestamp_valid_bits << " bits), fence polled " << fence_spin_us << " us before sleeping\n";
  os << "  pipelines created on up to " << pipeline_threads << " threads, host copies on up to "
     << host_copy_threads << " threads"
     << (compact_kernels ? ", compact kernels (no speed-only specializations or unrolling)" : "")
     << "\n  CPU-shaped kernels: " << yes(cpu_kernels) << "\n";
  for (const auto& d : disabled) os << "  disabled: " << d << "\n";
  for (const auto& q : quirks_applied) {
    os << "  quirk: " << q << " (vkd devices --quirks: the table and its sources)\n";
  }
  return os.str();
}

}  // namespace vkd::vk
