#include "tools/vkd/RunPartitioned.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/PartitionedModel.h"

namespace vkd::cli {
namespace {

using compiler::HostTensor;

// The input files in model input order; every mismatch with the plan in one CliError(2).
std::vector<const InputArg*> match_plan_inputs(const PartitionedModel& m,
                                               const std::vector<InputArg>& inputs) {
  std::vector<std::string> errors;
  const std::vector<const InputArg*> matched = match_inputs(m.input_infos(), inputs, errors);
  if (!errors.empty()) throw CliError(2, join_lines(errors));
  return matched;
}

// The files the run reads besides the model and the inputs: every blob, the weights.
std::vector<std::pair<std::string, std::string>> plan_files(const PartitionPlan& plan,
                                                            const RunOptions& opt) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const PlanStep& s : plan.steps) {
    if (s.on_gpu) files.emplace_back("the partition " + s.blob, s.blob_path);
  }
  if (opt.weights) files.emplace_back("the weights file", *opt.weights);
  return files;
}

// Each input file as the host tensor the plan describes (a float16 tensor may come from a
// float32 file, rounded as the runtime rounds an upload).
TensorMap plan_inputs(const PartitionPlan& plan, const std::vector<const InputArg*>& matched) {
  TensorMap inputs;
  for (size_t i = 0; i < matched.size(); ++i) {
    const PlanTensor& t = plan.tensor(plan.inputs[i]);
    const NpyArray& arr = matched[i]->array;
    const bool narrow = t.dtype == DType::Float16 && arr.dtype == NpyDType::Float32;
    inputs[t.name] = HostTensor{t.dtype, t.shape,
                                narrow ? float32_bytes_to_float16(arr.data) : arr.data};
  }
  return inputs;
}

void print_plan_header(const RunOptions& opt, const PartitionedModel& m,
                       const std::vector<const InputArg*>& matched) {
  const PartitionPlan& plan = m.plan();
  const size_t gpu = plan.gpu_step_count();
  std::printf("model: %s (%zu step(s): %zu partition(s) on the GPU, %zu on the host), %zu "
              "input(s), %zu output(s)\n",
              opt.model_path.c_str(), plan.steps.size(), gpu, plan.steps.size() - gpu,
              plan.inputs.size(), plan.outputs.size());
  std::printf("device: %s\n", m.device_name().c_str());
  for (const PlanStep& s : plan.steps) {
    if (!s.on_gpu) continue;
    std::printf("%s:\n%s", s.label().c_str(),
                memory_report_text(m.delegate(s.index)->memory(), "  ").c_str());
  }
  const std::vector<TensorInfo> infos = m.input_infos();
  for (size_t i = 0; i < matched.size(); ++i) {
    std::printf("input  %s: %s <- %s\n", infos[i].name.c_str(),
                tensor_summary(infos[i]).c_str(), matched[i]->path.c_str());
  }
}

std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) {
    if (!n.empty()) s += (s.empty() ? "" : ", ") + n;
  }
  return s;
}

std::string gpu_time(const std::vector<NodeProfile>& profile) {
  if (profile.empty()) return "GPU time n/a";
  return "GPU " + fixed(total_gpu_us(profile), 2) + " \xC2\xB5s";
}

// "step 0  GPU   m.p0.vkd         x -> xd   GPU 12.34 µs over 2 dispatch node(s), ..."
void print_step(const StepTiming& t) {
  const PlanStep& s = *t.step;
  const std::string flow = name_list(s.inputs) + " -> " + name_list(s.outputs);
  if (s.on_gpu) {
    std::printf("step %zu  GPU   %-20s %-24s %s over %zu dispatch node(s), execute %.3f ms "
                "host wall\n",
                s.index, s.blob.c_str(), flow.c_str(), gpu_time(t.profile).c_str(),
                t.profile.size(), t.wall_us / 1000.0);
  } else {
    std::printf("step %zu  host  %-20s %-24s CPU %s \xC2\xB5s (%s, reference interpreter)\n",
                s.index, s.op.c_str(), flow.c_str(), fixed(t.wall_us, 2).c_str(),
                s.origin.c_str());
  }
}

struct RunTotals {
  double gpu_us = 0.0, host_us = 0.0;
  size_t dispatches = 0;
};

RunTotals totals(const std::vector<StepTiming>& timings) {
  RunTotals r;
  for (const StepTiming& t : timings) {
    r.gpu_us += total_gpu_us(t.profile);
    r.dispatches += t.profile.size();
    if (!t.step->on_gpu) r.host_us += t.wall_us;
  }
  return r;
}

void print_run(const std::vector<StepTiming>& timings, double wall_us) {
  for (const StepTiming& t : timings) print_step(t);
  const RunTotals r = totals(timings);
  std::printf("run: %zu step(s) in %.3f ms host wall: GPU %s \xC2\xB5s over %zu dispatch nodes, "
              "host steps %s \xC2\xB5s\n",
              timings.size(), wall_us / 1000.0, fixed(r.gpu_us, 2).c_str(), r.dispatches,
              fixed(r.host_us, 2).c_str());
}

// One run of every step, timed on the host (µs).
double run_timed(PartitionedModel& m, const TensorMap& inputs, std::vector<StepTiming>* timings,
                 TensorMap* values) {
  const auto t0 = std::chrono::steady_clock::now();
  *values = m.run(inputs, timings);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// --bench: warm-up runs, then `bench` timed ones (summarized); `timings` gets the last one's.
void run_benchmark(PartitionedModel& m, const TensorMap& inputs, int bench,
                   std::vector<StepTiming>* timings) {
  TensorMap values;
  for (int i = 0; i < kWarmupRuns; ++i) run_timed(m, inputs, timings, &values);
  std::vector<double> wall_ms, gpu_us;
  for (int i = 0; i < bench; ++i) {
    wall_ms.push_back(run_timed(m, inputs, timings, &values) / 1000.0);
    gpu_us.push_back(totals(*timings).gpu_us);
  }
  std::printf("bench: %d warm-up + %d timed runs of every step: host wall median %.3f ms, min "
              "%.3f ms; GPU total median %.2f \xC2\xB5s, min %.2f \xC2\xB5s\n",
              kWarmupRuns, bench, median(wall_ms),
              *std::min_element(wall_ms.begin(), wall_ms.end()), median(gpu_us),
              *std::min_element(gpu_us.begin(), gpu_us.end()));
}

// The model's outputs into their slots (host dtype: float16 widened to float32).
void fill_outputs(const TensorMap& values, std::vector<OutputSlot>& outputs) {
  for (OutputSlot& o : outputs) {
    const HostTensor& t = values.at(o.info.name);
    o.data = t.dtype == DType::Float16 ? float16_bytes_to_float32(t.bytes) : t.bytes;
  }
}

void print_step_profiles(const std::vector<StepTiming>& timings) {
  for (const StepTiming& t : timings) {
    if (!t.step->on_gpu) continue;
    std::printf("%s ", t.step->label().c_str());
    print_profile(t.profile);
  }
}

int validation_result(const DelegateOptions& options, const PartitionedModel& m) {
  if (!options.validation) return 0;
  const uint64_t messages = m.validation_message_count();
  if (messages > 0) {
    std::fprintf(stderr, "vkd run: %llu Vulkan validation message(s) (VKD_VALIDATION=1)\n",
                 static_cast<unsigned long long>(messages));
    return 1;
  }
  std::printf("validation: no messages\n");
  return 0;
}

}  // namespace

int run_partitioned(RunOptions opt) {
  // Everything that can be checked without the device, in the order the user would fix it.
  PlanFiles files = read_plan_files(opt.model_path, opt.weights);
  read_input_files(opt.inputs);
  const bool create_out_dir = output_dir_to_create(opt.out_dir);

  const DelegateOptions options = delegate_options(opt.device);
  std::unique_ptr<PartitionedModel> model = PartitionedModel::create(std::move(files), options);
  const std::vector<const InputArg*> matched = match_plan_inputs(*model, opt.inputs);
  std::vector<OutputSlot> outputs = output_slots(model->output_infos(), opt.out_dir);
  check_run_files(opt, plan_files(model->plan(), opt), create_out_dir, outputs);
  print_plan_header(opt, *model, matched);

  const TensorMap inputs = plan_inputs(model->plan(), matched);
  std::vector<StepTiming> timings;
  TensorMap values;
  const double wall_us = run_timed(*model, inputs, &timings, &values);
  print_run(timings, wall_us);
  fill_outputs(values, outputs);
  if (opt.bench > 0) run_benchmark(*model, inputs, opt.bench, &timings);

  if (create_out_dir) create_output_dir(opt.out_dir);
  write_outputs(outputs, opt.force);
  if (opt.profile) print_step_profiles(timings);
  return validation_result(options, *model);
}

}  // namespace vkd::cli
