// vkd: the vkdelegate command-line tool. Every error is caught here and printed; exit codes:
// 0 success, 1 runtime failure, 2 bad usage or bad input.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "runtime/common/Error.h"
#include "runtime/vk/Context.h"

namespace {

constexpr const char* kUsage =
    "usage: vkd <command> [options]\n"
    "commands:\n"
    "  devices [--device SEL]   list Vulkan devices and the profile vkdelegate reads\n"
    "environment:\n"
    "  VKD_DEVICE=SEL           device index or name substring (default: discrete > integrated >\n"
    "                           virtual > CPU)\n"
    "  VKD_VALIDATION=1         enable the Khronos validation layer\n"
    "  VKD_DISABLE_INT8_DOT=1   pretend the device has no int8 dot product\n";

int cmd_devices(const std::vector<std::string>& args) {
  std::string selector = vkd::vk::env_string("VKD_DEVICE");
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--device" && i + 1 < args.size()) {
      selector = args[++i];
    } else {
      std::fprintf(stderr, "vkd devices: unknown option '%s'\n%s", args[i].c_str(), kUsage);
      return 2;
    }
  }
  vkd::vk::Instance instance(vkd::vk::env_flag("VKD_VALIDATION"));
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "devices") return cmd_devices(args);
    std::fprintf(stderr, "vkd: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const vkd::Error& e) {
    std::fprintf(stderr, "vkd %s: error (%s): %s\n", command.c_str(), vkd::to_string(e.code()),
                 e.what());
    return e.code() == vkd::ErrorCode::InvalidArgument ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkd %s: error: %s\n", command.c_str(), e.what());
    return 1;
  }
}
