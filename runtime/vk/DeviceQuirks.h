// Known driver bugs and what vkdelegate does about each: a table of (which devices and
// drivers, what goes wrong, the workaround as a profile change), every entry from a public
// report (its source in the entry). read_device_profile applies the matching entries; `vkd
// devices` lists what each changed and `vkd devices --quirks` the whole table. A pure function
// of the profile's identity fields, tested without a GPU.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/vk/DeviceProfile.h"

namespace vkd::vk {

struct DeviceQuirk {
  std::string name;     // as listed: "amd-proprietary-int8-dot"
  std::string devices;  // which vendors, devices and drivers, in words
  std::string symptom;  // what goes wrong without the workaround
  std::string workaround;
  std::string source;  // repository + file, or issue / pull request
  // Whether the profile (its vendor, device, driver id and version, name, features as read)
  // is one the entry is about.
  std::function<bool(const DeviceProfile&)> matches;
  // The workaround: features switched off (each recorded in `disabled` with the entry's name)
  // or values corrected.
  std::function<void(DeviceProfile&)> apply;
};

// Every entry, in the order they apply.
const std::vector<DeviceQuirk>& device_quirks();

// Applies the entries that match `p`; returns their names.
std::vector<std::string> apply_device_quirks(DeviceProfile& p);

// Qualcomm's proprietary driver encodes driverVersion as VK_MAKE_VERSION(512, minor, patch)
// with the 10-bit major (so VK_API_VERSION_MAJOR reads 0): its (512, minor, patch).
struct DriverVersion {
  uint32_t major = 0, minor = 0, patch = 0;
  bool operator==(const DriverVersion& o) const {
    return major == o.major && minor == o.minor && patch == o.patch;
  }
};
DriverVersion qualcomm_driver_version(uint32_t driver_version);

}  // namespace vkd::vk
