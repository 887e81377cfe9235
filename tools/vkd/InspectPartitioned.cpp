#include "tools/vkd/InspectPartitioned.h"

#include <cstdio>
#include <map>
#include <vector>

#include "core/Error.h"
#include "model/PartitionPlan.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "vkdelegate/Model.hpp"

namespace vkd::cli {
namespace {

std::unique_ptr<Model> load_model(const std::string& plan_path,
                                  const std::optional<std::string>& weights,
                                  const DelegateOptions& options) {
  ModelOptions model_options;
  model_options.delegate = options;
  model_options.weights_path = weights.value_or("");
  std::unique_ptr<Model> model;
  std::string error;
  const Status s = Model::load(plan_path, model_options, &model, &error);
  if (s != Status::Ok) throw CliError(exit_code_for(s), error);
  return model;
}

void print_io(const char* what, const std::vector<TensorInfo>& infos, bool is_input) {
  std::printf("%s (%zu):\n", what, infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    std::printf("  [%zu] %s: %s, %s host bytes\n", i, io_name(infos[i], i, is_input).c_str(),
                tensor_summary(infos[i]).c_str(), std::to_string(infos[i].host_bytes()).c_str());
  }
}

std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) {
    if (!n.empty()) s += (s.empty() ? "" : ", ") + n;
  }
  return s.empty() ? "(none)" : s;
}

// "step 1  host  aten.max_pool2d   xd -> m  (node 3 (aten.max_pool2d), reference interpreter)"
void print_steps(const std::vector<StepInfo>& steps) {
  std::printf("steps (%zu):\n", steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepInfo& s = steps[i];
    const std::string flow = name_list(s.inputs) + " -> " + name_list(s.outputs);
    if (s.place == StepPlace::Gpu) {
      std::printf("  step %zu  GPU   %-24s %s\n%s", i, s.blob.c_str(), flow.c_str(),
                  memory_report_text(s.memory, "    ").c_str());
    } else {
      std::printf("  step %zu  host  %-24s %s  (%s, reference interpreter)\n", i, s.op.c_str(),
                  flow.c_str(), s.origin.empty() ? s.op.c_str() : s.origin.c_str());
    }
  }
}

// "int8 [1,4,3,5] scale 0.05 zero_point 3 [-128, 127]"
std::string tensor_text(const model::PlanTensor& t) {
  std::string s = std::string(to_string(t.dtype)) + " " + sizes_string(t.shape);
  if (t.quant) {
    char q[96];
    std::snprintf(q, sizeof q, " scale %g zero_point %lld [%lld, %lld]", t.quant->scale,
                  static_cast<long long>(t.quant->zero_point),
                  static_cast<long long>(t.quant->quant_min),
                  static_cast<long long>(t.quant->quant_max));
    s += q;
  }
  return s;
}

// Every tensor of the plan in the order it becomes available, with who provides it and who
// reads it: the tensors the host holds between steps.
void print_tensors(const model::PartitionPlan& plan) {
  std::map<std::string, std::string> writer;
  std::map<std::string, std::vector<std::string>> readers;
  std::vector<std::string> order;
  auto provide = [&](const std::string& name, const std::string& who) {
    if (writer.emplace(name, who).second) order.push_back(name);
  };
  for (const std::string& name : plan.inputs) provide(name, "model input");
  for (const auto& [name, t] : plan.tensors) {
    if (t.constant) provide(name, "weights '" + t.weights_name + "'");
  }
  for (const model::PlanStep& s : plan.steps) {
    for (const std::string& name : s.inputs) {
      if (!name.empty()) readers[name].push_back("step " + std::to_string(s.index));
    }
    for (const std::string& name : s.outputs) provide(name, "step " + std::to_string(s.index));
  }
  for (const std::string& name : plan.outputs) readers[name].push_back("model output");
  std::printf("tensors (%zu):\n", order.size());
  for (const std::string& name : order) {
    std::printf("  %s: %s  (%s -> %s)\n", name.c_str(), tensor_text(plan.tensor(name)).c_str(),
                writer[name].c_str(), name_list(readers[name]).c_str());
  }
}

}  // namespace

int inspect_partitioned(const std::string& plan_path, const std::optional<std::string>& weights,
                        const std::optional<std::string>& device) {
  const DelegateOptions options = delegate_options(device);
  const std::unique_ptr<Model> model = load_model(plan_path, weights, options);
  // The load checked the plan; its tensors' dtypes, shapes and quantization are read from it.
  const model::PartitionPlan plan = model::read_partition_plan(plan_path);
  std::vector<StepInfo> steps;
  for (size_t i = 0; i < model->step_count(); ++i) steps.push_back(model->step(i));
  const size_t gpu = plan.gpu_step_count();
  std::printf("model: %s (partitioned: %zu step(s), %zu on the GPU, %zu on the host)\n",
              plan_path.c_str(), steps.size(), gpu, steps.size() - gpu);
  std::printf("device: %s\n", model->device_name().c_str());
  std::vector<TensorInfo> inputs, outputs;
  for (size_t i = 0; i < model->input_count(); ++i) inputs.push_back(model->input(i));
  for (size_t i = 0; i < model->output_count(); ++i) outputs.push_back(model->output(i));
  print_io("inputs", inputs, true);
  print_io("outputs", outputs, false);
  print_steps(steps);
  print_tensors(plan);
  if (options.validation && model->validation_message_count() > 0) {
    std::fprintf(stderr, "vkd inspect: %llu Vulkan validation message(s) (VKD_VALIDATION=1)\n",
                 static_cast<unsigned long long>(model->validation_message_count()));
    return 1;
  }
  return 0;
}

}  // namespace vkd::cli
