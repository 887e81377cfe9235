#include "runtime/vk/DeviceQuirks.h"

namespace vkd::vk {
namespace {

constexpr uint32_t kVendorAmd = 0x1002;
constexpr uint32_t kVendorIntel = 0x8086;
constexpr uint32_t kVendorQualcomm = 0x5143;
constexpr uint32_t kVendorImgTec = 0x1010;

// Switches a feature off, recording why.
void switch_off(DeviceProfile& p, bool& feature, const std::string& what, const std::string& why) {
  if (!feature) return;
  feature = false;
  p.disabled.push_back(what + " (quirk " + why + ")");
}

void no_subgroup_arithmetic(DeviceProfile& p, const std::string& why) {
  if (!p.subgroup_arithmetic && !p.subgroup_shuffle) return;
  p.subgroup_arithmetic = p.subgroup_shuffle = false;
  p.disabled.push_back("subgroup arithmetic and shuffles (quirk " + why + ")");
}

bool is_power_of_two(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::vector<DeviceQuirk> make_quirks() {
  std::vector<DeviceQuirk> q;
  q.push_back({"amd-proprietary-int8-dot",
               "AMD's proprietary driver (driverID AMD_PROPRIETARY), every version seen",
               "advertises accelerated packed int8 dot products on GPUs without the instruction "
               "(GCN, RDNA1, RDNA2) and returns wrong sums",
               "no int8 dot product (the shift-multiply fallback kernels); RADV is fine",
               "ggml-org/llama.cpp issue 10710; 0xShug0/audio.cpp pull request 193",
               [](const DeviceProfile& p) { return p.driver_id == VK_DRIVER_ID_AMD_PROPRIETARY; },
               [](DeviceProfile& p) {
                 p.quirks.int8_dot_untrusted = true;
                 if (p.int8_dot_product) p.int8_dot_product_accelerated = false;
                 switch_off(p, p.int8_dot_product, "int8 dot product", "amd-proprietary-int8-dot");
               }});
  q.push_back({"moltenvk-amd-subgroup-64", "MoltenVK (driverID MOLTENVK) on AMD GPUs of Intel Macs",
               "reports subgroups of 64 where Metal runs SIMD groups of 32: lanes 32-63 of "
               "subgroup arithmetic and shuffles return garbage",
               "no subgroup arithmetic or shuffles (the shared-memory reductions)",
               "ggml-org/llama.cpp ggml-vulkan.cpp ggml_vk_get_device (issue 15846); "
               "KhronosGroup/MoltenVK issue 2750",
               [](const DeviceProfile& p) {
                 return p.driver_id == VK_DRIVER_ID_MOLTENVK && p.vendor_id == kVendorAmd;
               },
               [](DeviceProfile& p) { no_subgroup_arithmetic(p, "moltenvk-amd-subgroup-64"); }});
  q.push_back({"adreno-subgroup-shuffle",
               "Qualcomm's proprietary driver 512.502.0 (Adreno 640) and 512.842.19 (Adreno 840); "
               "512.800.64 is fine",
               "a GEMM built on subgroupShuffle returns garbage", "no subgroup shuffles",
               "Tencent/ncnn issue 6778",
               [](const DeviceProfile& p) {
                 if (p.driver_id != VK_DRIVER_ID_QUALCOMM_PROPRIETARY) return false;
                 const DriverVersion v = qualcomm_driver_version(p.driver_version);
                 return v == DriverVersion{512, 502, 0} || v == DriverVersion{512, 842, 19};
               },
               [](DeviceProfile& p) {
                 switch_off(p, p.subgroup_shuffle, "subgroup shuffles", "adreno-subgroup-shuffle");
               }});
  q.push_back(
      {"adreno-float16-without-16bit-storage",
       "Qualcomm Adreno (vendor 0x5143) without storageBuffer16BitAccess (old drivers)",
       "float16 arithmetic gives wrong results", "no float16 arithmetic",
       "Tencent/ncnn src/gpu.cpp query_extension_features",
       [](const DeviceProfile& p) { return p.vendor_id == kVendorQualcomm && !p.storage_16bit; },
       [](DeviceProfile& p) {
         switch_off(p, p.float16_arithmetic, "float16 arithmetic",
                    "adreno-float16-without-16bit-storage");
       }});
  q.push_back({"powervr-subgroup-reductions",
               "Imagination's proprietary driver (driverID IMAGINATION_PROPRIETARY), PowerVR "
               "C-Series, driver 1.662.3024 (others untested)",
               "vkCreateComputePipelines fails (VK_ERROR_UNKNOWN) for reductions through "
               "subgroup operations alone",
               "no subgroup arithmetic (the shared-memory reductions)",
               "ggml-org/llama.cpp pull request 28341",
               [](const DeviceProfile& p) {
                 return p.driver_id == VK_DRIVER_ID_IMAGINATION_PROPRIETARY ||
                        (p.driver_id == 0 && p.vendor_id == kVendorImgTec);
               },
               [](DeviceProfile& p) { no_subgroup_arithmetic(p, "powervr-subgroup-reductions"); }});
  q.push_back({"intel-varying-subgroup-size",
               "Intel GPUs (vendor 0x8086; ANV and the Windows driver)",
               "a compute shader's subgroups may be 8, 16 or 32 wide whatever subgroupSize says, "
               "so reductions sized by it go wrong (without full subgroups, which the kernels do "
               "not request)",
               "no subgroup arithmetic (the shared-memory reductions)",
               "ggml-org/llama.cpp pull requests 17356 and 18831 (ggml-vulkan.cpp)",
               [](const DeviceProfile& p) { return p.vendor_id == kVendorIntel; },
               [](DeviceProfile& p) { no_subgroup_arithmetic(p, "intel-varying-subgroup-size"); }});
  q.push_back({"bad-subgroup-size",
               "any driver reporting a subgroup size that is 0 or not a power of two (seen: "
               "Mali-G72 on a Vulkan 1.1 driver reporting 0)",
               "workgroup shapes sized by it loop forever or index out of range",
               "no subgroup operations; workgroups sized as for subgroups of 16",
               "Tencent/ncnn pull request 6459 (issue 6457)",
               [](const DeviceProfile& p) { return !is_power_of_two(p.subgroup_size); },
               [](DeviceProfile& p) {
                 no_subgroup_arithmetic(p, "bad-subgroup-size");
                 switch_off(p, p.subgroup_ballot, "subgroup ballot", "bad-subgroup-size");
                 p.subgroup_size = 16;
               }});
  return q;
}

}  // namespace

DriverVersion qualcomm_driver_version(uint32_t v) {
  return {v >> 22, (v >> 12) & 0x3FFu, v & 0xFFFu};
}

const std::vector<DeviceQuirk>& device_quirks() {
  static const std::vector<DeviceQuirk> quirks = make_quirks();
  return quirks;
}

std::string describe_device_quirks() {
  std::string text;
  for (const DeviceQuirk& q : device_quirks()) {
    text += q.name + "\n  devices:    " + q.devices + "\n  symptom:    " + q.symptom +
            "\n  workaround: " + q.workaround + "\n  source:     " + q.source + "\n";
  }
  return text;
}

std::vector<std::string> apply_device_quirks(DeviceProfile& p) {
  std::vector<std::string> applied;
  for (const DeviceQuirk& q : device_quirks()) {
    if (!q.matches(p)) continue;
    q.apply(p);
    applied.push_back(q.name);
  }
  return applied;
}

}  // namespace vkd::vk
