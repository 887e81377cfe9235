// Everything ops need to know about the device, decided once when the device is opened.
// Ops read this and never query Vulkan themselves. Environment overrides switch features off
// (so fallback paths can be tested on any device); named quirk flags record known driver bugs.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/DeviceClass.h"

namespace vkd::vk {

struct CooperativeMatrixShape {
  uint32_t m, n, k;
  bool khr;  // advertised through VK_KHR_cooperative_matrix (else VK_NV_cooperative_matrix)
};

struct DeviceProfile {
  // Identity
  std::string name;
  uint32_t vendor_id = 0, device_id = 0;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0, driver_version = 0;
  VkDriverId driver_id = static_cast<VkDriverId>(0);
  std::string driver_name, driver_info;
  std::array<uint8_t, VK_UUID_SIZE> pipeline_cache_uuid{};

  // Arithmetic and storage features (already AND-ed with the env overrides and quirks)
  bool int8_dot_product = false;              // OpSDot on packed 4x8 usable
  bool int8_dot_product_accelerated = false;  // driver says packed 4x8 signed is fast
  bool storage_8bit = false, storage_16bit = false;
  bool int8_arithmetic = false, float16_arithmetic = false;
  bool vulkan_memory_model = false;  // the Vulkan memory model (cooperative-matrix kernels)
  // vulkanMemoryModelDeviceScope: with the memory model enabled, a kernel may use Device scope
  // (any GLSL atomic or memoryBarrierBuffer without the memory-model extension) only with it.
  bool memory_model_device_scope = false;
  bool cooperative_matrix_nv = false, cooperative_matrix_khr = false;
  std::vector<CooperativeMatrixShape> int8_cooperative_matrix_shapes;  // int8 x int8 -> int32

  // Diagnostics: VK_KHR_pipeline_executable_properties with pipelineExecutableInfo, i.e. the
  // driver can report what it compiled each kernel into (registers, shared memory, ...). Only
  // enabled on the device when ContextOptions::capture_kernel_statistics asks for it.
  bool pipeline_executable_info = false;

  // Subgroups and workgroups
  uint32_t subgroup_size = 1;
  bool subgroup_arithmetic = false;  // basic + arithmetic subgroup operations in compute shaders
  bool subgroup_shuffle = false;     // and shuffles (subgroupShuffleXor)
  bool subgroup_ballot =
      false;  // ballot subgroup operations (subgroupBroadcast) in compute shaders
  // Kernels shaped for a CPU device (Mesa lavapipe: llvmpipe runs a workgroup on one thread,
  // each subgroup of 8 invocations as one 256-bit SIMD vector; a load whose address is not
  // built from constants and push constants alone is a loop over the 8 lanes, a barrier a
  // coroutine switch): no shared memory, values shared by subgroupBroadcast, wide register
  // tiles in plain int32 arithmetic. Set for VK_PHYSICAL_DEVICE_TYPE_CPU with 8-wide subgroups
  // and ballot + arithmetic subgroup operations; VKD_DISABLE_CPU_KERNELS switches it off (then
  // such a device runs the GPU kernels, which the tests also cover there).
  bool cpu_kernels = false;
  std::array<uint32_t, 3> max_workgroup_size{};
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_count{};
  uint32_t max_shared_memory_bytes = 0;

  // Limits, with explicit units
  uint64_t max_storage_buffer_range_bytes = 0;
  uint64_t max_memory_allocation_bytes = 0;
  uint32_t max_push_constant_bytes = 0;
  uint32_t max_image_dimension_3d = 0;
  uint32_t max_per_stage_storage_buffers = 0;
  uint32_t max_per_stage_storage_images = 0;
  uint64_t device_local_heap_bytes = 0;

  // The queue family submissions go to (choose_queue_family; empty: the device has no compute
  // queue, which Context refuses).
  std::optional<uint32_t> queue_family;

  // GPU timing, on the queue family's queues
  bool timestamps = false;
  double timestamp_period_ns = 1.0;
  uint32_t timestamp_valid_bits = 0;

  // Host waits: how long to poll a submission's fence before sleeping on it (microseconds).
  // GPUs: long enough for a whole small model, because a sleeping vkWaitForFences wakes late;
  // CPU devices (lavapipe): 0, a polling thread would take a core from the device's workers.
  uint32_t fence_spin_us = 0;
  // Host threads that create a graph's pipelines at once (PipelineCache::get_all): the
  // machine's hardware threads, at most 8 (a graph has a few dozen distinct kernels at most).
  // A driver that compiles at pipeline creation spends the first inference's time there.
  uint32_t pipeline_threads = 1;
  // Host threads that share one large input or output copy of an execute (CopyWorkers): GPUs
  // the machine's hardware threads, at most 4 (one thread copies memory the GPU wrote at
  // 10-15 GB/s; more than 4 did not help, see BENCHMARKS); CPU devices 1, as their copies
  // are into the device's own memory and the device's workers want the cores.
  uint32_t host_copy_threads = 1;
  // The GEMM route runs register-tiled, without shared memory (q8ta_linear_cpu.glsl's SHARE 0
  // form): GPUs whose shared memory is ordinary cached memory, ARM Mali (vendor 0x13B5; ARM's
  // OpenCL guide: local memory has "no performance advantage" there) and the mali-g7x class.
  // CPU devices run the same kernel's subgroup form (cpu_kernels). VKD_REGISTER_TILED_GEMM=0/1
  // overrides it (measurements).
  bool register_tiled_gemm = false;
  // Kernels built for a short compile rather than the last bit of GPU speed: specializations
  // that only make a kernel faster stay at their general value (fewer distinct pipelines) and
  // long unrolled loops stay loops. CPU devices: lavapipe compiles every pipeline with LLVM at
  // its first dispatch, one after the other on its queue thread (0.05-1.3 s each), and neither
  // choice changed its run time (README example, vkd run --bench). Today: the epilogue's
  // ACC_BELOW_2_22 (Linear.h) and the GEMM's COMPACT. VKD_COMPACT_KERNELS=0/1 overrides it.
  bool compact_kernels = false;

  // The device class the profile was lowered to (ProfileOverrides::device_class), empty for the
  // device as it is.
  std::string device_class;
  // Why vkdelegate cannot use the device (a Vulkan 1.0 driver), empty when it can; Context
  // refuses such a device with this text, `vkd devices` lists it.
  std::string unusable;

  // Named driver-bug flags, set by the quirk table (DeviceQuirks.h), and the names of the
  // table's entries that applied.
  struct Quirks {
    bool int8_dot_untrusted = false;  // AMD proprietary driver: claims dot4, gives wrong sums
  } quirks;
  std::vector<std::string> quirks_applied;

  // Which features an environment variable or a quirk switched off, for `vkd devices`.
  std::vector<std::string> disabled;

  bool is_cpu() const { return type == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  // Kernels may use Device-scope atomics and memoryBarrierBuffer (GLSL without the memory-model
  // extension): always without the memory model, with it only with its device-scope feature.
  bool device_scope_atomics() const { return !vulkan_memory_model || memory_model_device_scope; }
  std::string summary() const;  // multi-line human-readable description

  // Whether a kernel can use int8 x int8 -> int32 cooperative matrices of m x n x k through
  // VK_NV_cooperative_matrix (with what such a shader also needs: int8 arithmetic and the
  // Vulkan memory model).
  bool has_int8_cooperative_matrix_nv(uint32_t m, uint32_t n, uint32_t k) const;
};

// Device extensions vkdelegate enables when the device has them.
struct EnabledExtensions {
  bool integer_dot_product = false;             // VK_KHR_shader_integer_dot_product (pre-1.3)
  bool storage_8bit = false;                    // VK_KHR_8bit_storage (pre-1.2)
  bool cooperative_matrix_nv = false;           // VK_NV_cooperative_matrix
  bool cooperative_matrix_khr = false;          // VK_KHR_cooperative_matrix
  bool pipeline_executable_properties = false;  // VK_KHR_pipeline_executable_properties
  bool float16_int8 = false;                    // VK_KHR_shader_float16_int8 (pre-1.2)
  bool portability_subset = false;  // VK_KHR_portability_subset: enabled whenever offered
};

// Features the caller switches off in code (same effect as the environment overrides).
struct ProfileOverrides {
  // A device class: its limits lower the device's and the features it lacks are switched off
  // (the instance takes its API version: ContextOptions::device_class).
  const DeviceClass* device_class = nullptr;
  bool disable_int8_dot = false;
  bool disable_cooperative_matrix = false;
  bool disable_subgroup_arithmetic = false;
  bool disable_cpu_kernels = false;
  // Lower a limit to emulate a smaller device (0 = keep the device's own): lets tests and
  // users check that a graph fits e.g. a mobile GPU's limits on any machine.
  using Limits = DeviceLimits;
  Limits limits;
};

// The driver-bug table (DeviceQuirks.h) as text: each entry's devices, symptom, workaround
// and source (`vkd devices --quirks`).
std::string describe_device_quirks();

// The queue family to submit to, of a device's `families`: one with compute and timestamps,
// preferring one without graphics (a dedicated compute family: on an H200 a submission there
// reached its fence 1.4-7 us sooner than on the universal family 0, docs/BENCHMARKS.md),
// then one without timestamps (no GPU timing), again without graphics first. Empty when
// none has compute.
std::optional<uint32_t> choose_queue_family(const std::vector<VkQueueFamilyProperties>& families);

// The profile of `device` as an instance of API version `instance_api_version` uses it (the
// older of the two), lowered by `overrides`.
DeviceProfile read_device_profile(VkInstance instance, uint32_t instance_api_version,
                                  VkPhysicalDevice device, const ProfileOverrides& overrides,
                                  EnabledExtensions* extensions_out);

}  // namespace vkd::vk
