// Kernels against device limits without a GPU (runtime/vk/KernelLimits.h): the shared memory
// the shader registry reflects (fixed arrays, and arrays sized by specialization constants
// evaluated with a pipeline's values) and the local size, against a profile lowered to a
// device class (core/DeviceClass.h). The expected sizes are worked out from the shaders'
// declarations in the comments.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/DeviceClass.h"
#include "runtime/ops/Linear.h"
#include "runtime/vk/KernelLimits.h"

namespace vkd_test {
namespace {

using vkd::shaders::Kernel;
using vkd::shaders::shader_info;
using vkd::vk::kernel_limit_problem;
using vkd::vk::shared_memory_bytes;

// A desktop GPU's limits, then lowered to `cls` the way read_device_profile lowers them.
vkd::vk::DeviceProfile profile_of(const vkd::DeviceClass* cls) {
  vkd::vk::DeviceProfile p;
  p.name = "desktop";
  p.max_workgroup_invocations = 1024;
  p.max_workgroup_size = {1024, 1024, 64};
  p.max_shared_memory_bytes = 49152;
  p.max_push_constant_bytes = 256;
  if (cls) {
    p.device_class = cls->name;
    p.max_workgroup_invocations = cls->limits.max_workgroup_invocations;
    p.max_workgroup_size = cls->limits.max_workgroup_size;
    p.max_shared_memory_bytes = cls->limits.max_shared_memory_bytes;
    p.max_push_constant_bytes = cls->limits.max_push_constant_bytes;
  }
  return p;
}

TEST(KernelLimits, SharedMemoryOfFixedArrays) {
  // q8ta_linear_gemm: a_tile[BK4][BM] ints + b_tile[BK4][BN / 4] ivec4s + a bool, all fixed.
  const auto& gemm = shader_info(Kernel::q8ta_linear_coopmat_int8_m16k8);
  EXPECT_EQ(gemm.shared_program_length, 0u);
  EXPECT_EQ(shared_memory_bytes(gemm, {256, 1, 1}, {}), gemm.shared_bytes);
  EXPECT_EQ(gemm.shared_bytes, 30720u);
}

TEST(KernelLimits, SharedMemorySizedBySpecializationConstants) {
  // float_masked_mean (4H4W, normalize, staged): staged[STAGE_FLOATS] floats (constant_id 3)
  // plus shared_norm and shared_count.
  const auto& mean = shader_info(Kernel::float_masked_mean_4h4w_normalize_staged);
  ASSERT_GT(mean.shared_program_length, 0u);
  EXPECT_EQ(shared_memory_bytes(mean, {512, 1, 1}, {4094}), 4u * 4094 + 8);
  EXPECT_EQ(shared_memory_bytes(mean, {512, 1, 1}, {100}), 4u * 100 + 8);
}

TEST(KernelLimits, DeviceClassRefusesByName) {
  const vkd::DeviceClass* baseline = vkd::find_device_class("android-baseline-2022");
  ASSERT_NE(baseline, nullptr);
  const vkd::vk::DeviceProfile desktop = profile_of(nullptr), phone = profile_of(baseline);
  // The 16-row cooperative-matrix tile: 256 fixed invocations and 30720 bytes of shared memory.
  const auto& coopmat = shader_info(Kernel::q8ta_linear_coopmat_int8_m16k8);
  EXPECT_EQ(kernel_limit_problem(desktop, coopmat, {1, 1, 1}, {}), "");
  EXPECT_EQ(kernel_limit_problem(phone, coopmat, {1, 1, 1}, {}),
            "kernel q8ta_linear_coopmat_int8_m16k8 runs 256 invocations a workgroup (256x1x1); "
            "device 'desktop' as class android-baseline-2022 allows 128 "
            "(maxComputeWorkGroupInvocations)");
  // The masked mean at 128 invocations: 4 * 4094 + 8 = 16384 bytes of shared memory fit the
  // class exactly; one float more does not.
  const auto& mean = shader_info(Kernel::float_masked_mean_4h4w_normalize_staged);
  EXPECT_EQ(kernel_limit_problem(phone, mean, {128, 1, 1}, {4094}), "");
  EXPECT_EQ(kernel_limit_problem(desktop, mean, {128, 1, 1}, {4095}), "");
  EXPECT_EQ(kernel_limit_problem(phone, mean, {128, 1, 1}, {4095}),
            "kernel float_masked_mean_4h4w_normalize_staged needs 16388 bytes of shared memory; "
            "device 'desktop' as class android-baseline-2022 has 16384 "
            "(maxComputeSharedMemorySize)");
}

TEST(KernelLimits, SpecializedLocalSizeAlongOneAxis) {
  const vkd::vk::DeviceProfile phone = profile_of(vkd::find_device_class("mali-g7x"));
  const auto& mean = shader_info(Kernel::float_masked_mean_4h4w_normalize_staged);
  EXPECT_EQ(kernel_limit_problem(phone, mean, {256, 1, 1}, {64}),
            "kernel float_masked_mean_4h4w_normalize_staged runs 256 invocations a workgroup "
            "(256x1x1); device 'desktop' as class mali-g7x allows 128 "
            "(maxComputeWorkGroupInvocations)");
}

TEST(KernelLimits, ResidualKernelsBindOneBufferMoreThanTheirOps) {
  // residual_add_separately's count (kResidualKernelBuffers): every fused residual kernel a
  // route can take binds it (the split-K GEMM adds its scratch, and needs 256 invocations,
  // which a 4-buffer class does not offer), its plain form one fewer.
  using vkd::vk::storage_buffers_of;
  const std::pair<Kernel, Kernel> fused_and_plain[] = {
      {Kernel::q8ta_linear_gemv_int8_add_fallback_tree,
       Kernel::q8ta_linear_gemv_int8_fallback_tree},
      {Kernel::q8ta_linear_gemv_float_add_fallback_tree,
       Kernel::q8ta_linear_gemv_float_fallback_tree},
      {Kernel::q8ta_linear_cpu_int8_add_n32_loads, Kernel::q8ta_linear_cpu_int8_n32_loads},
      {Kernel::q8ta_linear_gemm_int8_add_fallback_whole,
       Kernel::q8ta_linear_gemm_int8_fallback_whole},
      {Kernel::q8ta_conv2d_4w4c_int8_4w4c_add_fallback,
       Kernel::q8ta_conv2d_4w4c_int8_4w4c_fallback},
  };
  for (const auto& [fused, plain] : fused_and_plain) {
    EXPECT_EQ(storage_buffers_of(shader_info(fused)), vkd::ops::kResidualKernelBuffers)
        << shader_info(fused).name;
    EXPECT_EQ(storage_buffers_of(shader_info(plain)) + 1, vkd::ops::kResidualKernelBuffers)
        << shader_info(plain).name;
  }
}

TEST(KernelLimits, WaysDownFitTheBaselinesFourBuffers) {
  // Each way down's kernel fits the strictest class's storage buffers a stage where the form
  // it replaces does not: the attention with K and V one binding (SHARED_KV), the dynamic
  // linear with its row scales after its rows (OUT_DTYPE 8), the 2-input cat window.
  using vkd::vk::storage_buffers_of;
  const uint32_t baseline = vkd::device_classes().front().limits.max_per_stage_storage_buffers;
  ASSERT_EQ(baseline, 4u);
  const std::pair<Kernel, Kernel> fused_and_down[] = {
      {Kernel::q8ta_attention_int8_fallback_d32_q8_kv2,
       Kernel::q8ta_attention_int8_fallback_d32_q8_kv1},
      {Kernel::q8ta_attention_float_float32_none_kv2,
       Kernel::q8ta_attention_float_float32_none_kv1},
      {Kernel::q8ta_linear_gemv_float_rows_fallback_tree,
       Kernel::q8ta_linear_gemv_float_rows_after_fallback_tree},
      {Kernel::q8ta_linear_cpu_float_rows_n32_loads,
       Kernel::q8ta_linear_cpu_float_rows_after_n32_loads},
      {Kernel::q8ta_linear_gemm_float_rows_fallback_whole,
       Kernel::q8ta_linear_gemm_float_rows_after_fallback_whole},
      {Kernel::q8ta_cat_4w4c_w4, Kernel::q8ta_cat_4w4c_w2},
  };
  for (const auto& [fused, down] : fused_and_down) {
    EXPECT_GT(storage_buffers_of(shader_info(fused)), baseline) << shader_info(fused).name;
    EXPECT_LE(storage_buffers_of(shader_info(down)), baseline) << shader_info(down).name;
  }
}

TEST(DeviceClasses, NamesAndStrictestFirst) {
  EXPECT_EQ(vkd::device_class_names(), "android-baseline-2022, mali-g7x, adreno-6xx, apple-m1");
  EXPECT_EQ(vkd::find_device_class("nope"), nullptr);
  const auto& classes = vkd::device_classes();
  for (const auto& c : classes) {
    EXPECT_LE(classes.front().limits.max_workgroup_invocations, c.limits.max_workgroup_invocations)
        << c.name;
    EXPECT_LE(classes.front().limits.max_shared_memory_bytes, c.limits.max_shared_memory_bytes)
        << c.name;
    EXPECT_LE(classes.front().limits.max_per_stage_storage_buffers,
              c.limits.max_per_stage_storage_buffers)
        << c.name;
    EXPECT_GE(c.api_minor, 1u) << c.name;
  }
}

}  // namespace
}  // namespace vkd_test
