// vkd devices: the Vulkan devices and the profile vkdelegate reads of the selected one. The one
// command that looks below the delegate API (it has no model to load).
#include <cstdio>

#include "core/Env.h"
#include "runtime/vk/Context.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"

namespace vkd::cli {

int cmd_devices(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {{"--device", true}, {"--quirks", false}});
  if (!a.positional.empty()) throw UsageError("unexpected argument '" + a.positional[0] + "'");
  if (a.has("--quirks")) {
    std::fputs(vkd::vk::describe_device_quirks().c_str(), stdout);
    return 0;
  }
  const std::string selector = a.last("--device").value_or(vkd::env_string("VKD_DEVICE"));
  vkd::vk::Instance instance(vkd::env_flag("VKD_VALIDATION"));
  const auto devices = instance.devices();
  const auto chosen = instance.select(selector);
  for (const auto& d : devices) {
    std::printf("[%u] %s (%s)%s\n", d.index, d.name.c_str(), vkd::vk::device_type_name(d.type),
                d.index == chosen.index ? "  <- selected" : "");
  }
  vkd::vk::ContextOptions options = vkd::vk::ContextOptions::from_env();
  options.device_selector = std::to_string(chosen.index);
  vkd::vk::Context context(options);
  std::printf("\nprofile of the selected device:\n%s", context.profile().summary().c_str());
  return 0;
}

}  // namespace vkd::cli
