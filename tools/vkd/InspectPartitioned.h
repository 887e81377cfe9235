// `vkd inspect MODEL.partition.json [--weights W.safetensors] [--device SEL]`: a partitioned
// model loaded as `vkd run` loads it (vkd::Model: every file checked, every blob loaded on the
// device), then described: its inputs and outputs, each step in order with where it runs (the
// GPU blob with its memory report, or the host op and where it was in the original graph), and
// every tensor the plan describes with its dtype, shape and quantization, who writes it and
// which steps read it.
#pragma once

#include <optional>
#include <string>

namespace vkd::cli {

// The process exit code (0, or 1 on validation messages); errors are CliError.
int inspect_partitioned(const std::string& plan_path, const std::optional<std::string>& weights,
                        const std::optional<std::string>& device);

}  // namespace vkd::cli
