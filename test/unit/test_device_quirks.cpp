// The driver-bug table without a GPU (runtime/vk/DeviceQuirks.h): profiles with the identity
// fields of the reported devices, each entry's match and its workaround.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/vk/DeviceQuirks.h"

namespace vkd_test {
namespace {

using vkd::vk::apply_device_quirks;
using vkd::vk::DeviceProfile;

// A GPU with every feature the quirks touch, subgroups of 32.
DeviceProfile gpu(uint32_t vendor, VkDriverId driver, uint32_t driver_version = 0) {
  DeviceProfile p;
  p.name = "gpu";
  p.vendor_id = vendor;
  p.driver_id = driver;
  p.driver_version = driver_version;
  p.int8_dot_product = p.int8_dot_product_accelerated = true;
  p.subgroup_size = 32;
  p.subgroup_arithmetic = p.subgroup_shuffle = p.subgroup_ballot = true;
  p.storage_16bit = p.float16_arithmetic = true;
  return p;
}

TEST(DeviceQuirks, NvidiaAndRadvKeepEverything) {
  DeviceProfile nvidia = gpu(0x10DE, VK_DRIVER_ID_NVIDIA_PROPRIETARY, 580u << 22);
  EXPECT_TRUE(apply_device_quirks(nvidia).empty());
  EXPECT_TRUE(nvidia.int8_dot_product && nvidia.subgroup_arithmetic);
  DeviceProfile radv = gpu(0x1002, VK_DRIVER_ID_MESA_RADV);
  EXPECT_TRUE(apply_device_quirks(radv).empty());
  EXPECT_TRUE(radv.int8_dot_product);
}

TEST(DeviceQuirks, AmdProprietaryLosesTheDotProduct) {
  DeviceProfile amd = gpu(0x1002, VK_DRIVER_ID_AMD_PROPRIETARY);
  EXPECT_EQ(apply_device_quirks(amd), std::vector<std::string>{"amd-proprietary-int8-dot"});
  EXPECT_FALSE(amd.int8_dot_product);
  EXPECT_FALSE(amd.int8_dot_product_accelerated);
  EXPECT_TRUE(amd.quirks.int8_dot_untrusted);
  EXPECT_TRUE(amd.subgroup_arithmetic);
  ASSERT_EQ(amd.disabled.size(), 1u);
  EXPECT_EQ(amd.disabled[0], "int8 dot product (quirk amd-proprietary-int8-dot)");
}

TEST(DeviceQuirks, MoltenVkOnAmdLosesSubgroupArithmetic) {
  DeviceProfile mac_amd = gpu(0x1002, VK_DRIVER_ID_MOLTENVK);
  EXPECT_EQ(apply_device_quirks(mac_amd), std::vector<std::string>{"moltenvk-amd-subgroup-64"});
  EXPECT_FALSE(mac_amd.subgroup_arithmetic || mac_amd.subgroup_shuffle);
  DeviceProfile apple_silicon = gpu(0x106B, VK_DRIVER_ID_MOLTENVK);
  EXPECT_TRUE(apply_device_quirks(apple_silicon).empty());
}

TEST(DeviceQuirks, AdrenoShuffleOnTheReportedDriversOnly) {
  // VK_MAKE_VERSION(512, 502, 0) and (512, 842, 19): bit 31 set, the 10-bit major 512.
  EXPECT_EQ(vkd::vk::qualcomm_driver_version(0x801F6000u).minor, 502u);
  EXPECT_EQ(vkd::vk::qualcomm_driver_version(0x8034A013u).patch, 19u);
  DeviceProfile bad = gpu(0x5143, VK_DRIVER_ID_QUALCOMM_PROPRIETARY, 0x801F6000u);
  EXPECT_EQ(apply_device_quirks(bad), std::vector<std::string>{"adreno-subgroup-shuffle"});
  EXPECT_FALSE(bad.subgroup_shuffle);
  EXPECT_TRUE(bad.subgroup_arithmetic);
  DeviceProfile fine = gpu(0x5143, VK_DRIVER_ID_QUALCOMM_PROPRIETARY, 0x80320040u);  // 512.800.64
  EXPECT_TRUE(apply_device_quirks(fine).empty());
  // Without 16-bit storage an Adreno loses float16 arithmetic too.
  fine.storage_16bit = false;
  EXPECT_EQ(apply_device_quirks(fine),
            std::vector<std::string>{"adreno-float16-without-16bit-storage"});
  EXPECT_FALSE(fine.float16_arithmetic);
}

TEST(DeviceQuirks, IntelPowerVrAndBadSubgroupSizes) {
  DeviceProfile intel = gpu(0x8086, VK_DRIVER_ID_INTEL_OPEN_SOURCE_MESA);
  EXPECT_EQ(apply_device_quirks(intel), std::vector<std::string>{"intel-varying-subgroup-size"});
  EXPECT_FALSE(intel.subgroup_arithmetic);
  DeviceProfile powervr = gpu(0x1010, VK_DRIVER_ID_IMAGINATION_PROPRIETARY);
  EXPECT_EQ(apply_device_quirks(powervr), std::vector<std::string>{"powervr-subgroup-reductions"});
  DeviceProfile mali = gpu(0x13B5, VK_DRIVER_ID_ARM_PROPRIETARY);
  mali.subgroup_size = 0;
  EXPECT_EQ(apply_device_quirks(mali), std::vector<std::string>{"bad-subgroup-size"});
  EXPECT_EQ(mali.subgroup_size, 16u);
  EXPECT_FALSE(mali.subgroup_arithmetic || mali.subgroup_ballot);
  DeviceProfile odd = gpu(0x13B5, VK_DRIVER_ID_ARM_PROPRIETARY);
  odd.subgroup_size = 12;
  EXPECT_EQ(apply_device_quirks(odd), std::vector<std::string>{"bad-subgroup-size"});
}

TEST(DeviceQuirks, EveryEntryNamesItsSource) {
  for (const auto& q : vkd::vk::device_quirks()) {
    EXPECT_FALSE(q.name.empty());
    EXPECT_FALSE(q.devices.empty()) << q.name;
    EXPECT_FALSE(q.symptom.empty()) << q.name;
    EXPECT_FALSE(q.workaround.empty()) << q.name;
    EXPECT_FALSE(q.source.empty()) << q.name;
  }
}

}  // namespace
}  // namespace vkd_test
