// vkd inspect MODEL.vkd [--dot FILE.dot [--force]]: loads the model onto the device and prints
// what the delegate made of it (Delegate::describe()), the graph inputs and outputs, and the
// memory report. --dot first writes a Graphviz picture of the blob's graph (Dot.h). A
// partitioned model (MODEL.partition.json) is described by InspectPartitioned.h.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <variant>

#include "core/Error.h"
#include "model/PartitionPlan.h"
#include "partitioner_schema/KernelSignatures.h"
#include "serialization/Deserializer.h"
#include "serialization/GraphAtLength.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/Dot.h"
#include "tools/vkd/Files.h"
#include "tools/vkd/InspectPartitioned.h"

namespace vkd::cli {
namespace {

// The picture needs only the blob, so it is written before the device is touched (and stays
// when loading fails). The blob is read with the runtime's op signatures, which is also what
// the dot writer needs to tell an op's outputs from its inputs.
void write_dot_file(const std::string& path, const std::vector<uint8_t>& blob,
                    const std::string& model_path, bool force) {
  std::string dot;
  size_t op_count = 0;
  try {
    const serialization::OpSignatureTable ops = schema::kernel_signatures();
    const serialization::DeserializedGraph graph = serialization::deserialize(blob, &ops);
    dot = graph_to_dot(graph, model_path);
    op_count = graph.ops.size();
  } catch (const Error& e) {
    throw CliError(e.code() == ErrorCode::InvalidArgument ? 2 : 1,
                   "cannot draw model '" + model_path + "': " + e.what());
  }
  write_file(path, dot.data(), dot.size(), force);
  std::printf("dot: wrote %s (%zu op calls)\n", path.c_str(), op_count);
}

// A blob compiled for a maximum sequence length: the range and each input and output size that
// follows the length ("ids dim 1 = 1*T"); nothing for a static blob.
void print_dynamic_length(const std::vector<uint8_t>& blob) {
  const serialization::OpSignatureTable ops = schema::kernel_signatures();
  const serialization::DeserializedGraph g = serialization::deserialize(blob, &ops);
  if (!g.dynamic) return;
  const serialization::DynamicLength& d = *g.dynamic;
  std::printf("dynamic length: %s from %lld to %lld (any length runs without recompiling)\n",
              serialization::length_name(d).c_str(), static_cast<long long>(d.min),
              static_cast<long long>(d.max));
  auto list = [&](const char* title, const std::vector<serialization::GraphIO>& io) {
    std::string text;
    for (size_t i = 0; i < io.size(); ++i) {
      for (const auto& e : d.entries) {
        if (e.value != io[i].value) continue;
        const auto& t = std::get<serialization::TensorValue>(g.values[e.value]);
        text += std::string(text.empty() ? "" : ", ") + (io[i].name.empty() ? t.name : io[i].name) +
                " dim " + std::to_string(e.element) + " = " + serialization::affine_string(d, e);
      }
    }
    if (!text.empty()) std::printf("  %s: %s\n", title, text.c_str());
  };
  list("inputs", g.inputs);
  list("outputs", g.outputs);
}

}  // namespace

int cmd_inspect(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(
      args, {{"--device", true}, {"--dot", true}, {"--force", false}, {"--weights", true}});
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty() ? "missing MODEL.vkd" : "one model expected");
  }
  const std::string model_path = a.positional[0];
  const auto weights = a.last("--weights");
  if (weights && weights->empty()) throw UsageError("--weights needs a file name");
  const auto dot_path = a.last("--dot");
  if (a.has("--force") && !dot_path) throw UsageError("--force applies to --dot only");
  if (model::is_partition_plan_path(model_path)) {
    if (dot_path) throw UsageError("--dot takes a .vkd model (draw each partition's blob)");
    return inspect_partitioned(model_path, weights, a.last("--device"));
  }
  if (weights) throw UsageError("--weights is only used with a partitioned model");
  if (dot_path) {
    if (dot_path->empty()) throw UsageError("--dot needs a file name");
    FilePlan plan;
    plan.add_input("the model", model_path);
    plan.add_output("dot file", "--dot " + *dot_path, *dot_path);
    plan.check(a.has("--force"));
  }
  const std::vector<uint8_t> blob = read_model_file(model_path);
  if (dot_path) write_dot_file(*dot_path, blob, model_path, a.has("--force"));
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
  print_dynamic_length(blob);
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
