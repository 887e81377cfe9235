// vkd inspect MODEL.vkd: loads the model onto the device and prints what the delegate made of
// it (Delegate::describe()), the graph inputs and outputs, and the memory report.
#include <cstdio>

#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"

namespace vkd::cli {

int cmd_inspect(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {{"--device", true}});
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty() ? "missing MODEL.vkd" : "one model expected");
  }
  const std::string model_path = a.positional[0];
  const std::vector<uint8_t> blob = read_model_file(model_path);
  const DelegateOptions options = delegate_options(a.last("--device"));
  const std::unique_ptr<Delegate> d = create_delegate(blob, options, model_path);

  std::printf("model: %s (%s)\n", model_path.c_str(), human_bytes(blob.size()).c_str());
  std::printf("device: %s\n", d->device_name().c_str());
  std::printf("inputs (%zu):\n", d->input_count());
  for (size_t i = 0; i < d->input_count(); ++i) {
    const TensorInfo info = d->input(i);
    std::printf("  [%zu] %s: %s, %s host bytes\n", i, io_name(info, i, true).c_str(),
                tensor_summary(info).c_str(), std::to_string(info.host_bytes()).c_str());
  }
  std::printf("outputs (%zu):\n", d->output_count());
  for (size_t i = 0; i < d->output_count(); ++i) {
    const TensorInfo info = d->output(i);
    std::printf("  [%zu] %s: %s, %s host bytes\n", i, io_name(info, i, false).c_str(),
                tensor_summary(info).c_str(), std::to_string(info.host_bytes()).c_str());
  }
  std::fputs(memory_report_text(d->memory()).c_str(), stdout);
  std::printf("\ngraph (as loaded on the device):\n%s", indent_lines(d->describe(), "  ").c_str());

  if (options.validation && d->validation_message_count() > 0) {
    std::fprintf(stderr, "vkd inspect: %llu Vulkan validation message(s) (VKD_VALIDATION=1)\n",
                 static_cast<unsigned long long>(d->validation_message_count()));
    return 1;
  }
  return 0;
}

}  // namespace vkd::cli
