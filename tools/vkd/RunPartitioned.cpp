#include "tools/vkd/RunPartitioned.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "vkdelegate/Model.hpp"

namespace vkd::cli {
namespace {

// Model::load with the command's options, or CliError naming the plan, the step and the file
// or tensor (exit 2 for a fault in the files, 1 for the device or the library).
std::unique_ptr<Model> load_model(const RunOptions& opt, const DelegateOptions& options) {
  ModelOptions model_options;
  model_options.delegate = options;
  model_options.weights_path = opt.weights.value_or("");
  std::unique_ptr<Model> model;
  std::string error;
  const Status s = Model::load(opt.model_path, model_options, &model, &error);
  if (s != Status::Ok) throw CliError(exit_code_for(s), error);
  return model;
}

std::vector<StepInfo> model_steps(const Model& m) {
  std::vector<StepInfo> steps;
  for (size_t i = 0; i < m.step_count(); ++i) steps.push_back(m.step(i));
  return steps;
}

// Whether a host step reads a constant: a tensor that is no model input and that no earlier
// step writes (the plan's data flow, checked at load, leaves nothing else).
bool reads_constants(const Model& m, const std::vector<StepInfo>& steps) {
  std::set<std::string> provided;
  for (size_t i = 0; i < m.input_count(); ++i) provided.insert(m.input(i).name);
  for (const StepInfo& s : steps) {
    for (const std::string& name : s.inputs) {
      if (s.place == StepPlace::Host && !name.empty() && !provided.count(name)) return true;
    }
    provided.insert(s.outputs.begin(), s.outputs.end());
  }
  return false;
}

// The input files in model input order; every mismatch with the plan in one CliError(2).
std::vector<const InputArg*> match_plan_inputs(const Model& m,
                                               const std::vector<InputArg>& inputs) {
  std::vector<std::string> errors;
  const std::vector<const InputArg*> matched = match_inputs(input_infos(m), inputs, errors);
  if (!errors.empty()) throw CliError(2, join_lines(errors));
  return matched;
}

// The files the run reads besides the model and the inputs: every blob, the weights.
std::vector<std::pair<std::string, std::string>> plan_files(const std::vector<StepInfo>& steps,
                                                            const RunOptions& opt) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const StepInfo& s : steps) {
    if (s.place == StepPlace::Gpu) files.emplace_back("the partition " + s.blob, s.blob_path);
  }
  if (opt.weights) files.emplace_back("the weights file", *opt.weights);
  return files;
}

void print_plan_header(const RunOptions& opt, const Model& m, const std::vector<StepInfo>& steps,
                       const std::vector<const InputArg*>& matched) {
  const size_t gpu = static_cast<size_t>(std::count_if(
      steps.begin(), steps.end(), [](const StepInfo& s) { return s.place == StepPlace::Gpu; }));
  std::printf(
      "model: %s (%zu step(s): %zu partition(s) on the GPU, %zu on the host), %zu "
      "input(s), %zu output(s)\n",
      opt.model_path.c_str(), steps.size(), gpu, steps.size() - gpu, m.input_count(),
      m.output_count());
  std::printf("device: %s\n", m.device_name().c_str());
  for (const StepInfo& s : steps) {
    if (s.place != StepPlace::Gpu) continue;
    std::printf("%s:\n%s", s.label.c_str(), memory_report_text(s.memory, "  ").c_str());
  }
  const std::vector<TensorInfo> infos = input_infos(m);
  for (size_t i = 0; i < matched.size(); ++i) {
    std::printf("input  %s: %s <- %s\n", infos[i].name.c_str(), tensor_summary(infos[i]).c_str(),
                matched[i]->path.c_str());
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
void print_step(const StepInfo& s, const StepTiming& t) {
  const std::string flow = name_list(s.inputs) + " -> " + name_list(s.outputs);
  if (s.place == StepPlace::Gpu) {
    std::printf(
        "step %zu  GPU   %-20s %-24s %s over %zu dispatch node(s), execute %.3f ms "
        "host wall\n",
        t.step, s.blob.c_str(), flow.c_str(), gpu_time(t.profile).c_str(), t.profile.size(),
        t.wall_us / 1000.0);
  } else {
    std::printf("step %zu  host  %-20s %-24s CPU %s \xC2\xB5s (%s, reference interpreter)\n",
                t.step, s.op.c_str(), flow.c_str(), fixed(t.wall_us, 2).c_str(), s.origin.c_str());
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
    if (t.place == StepPlace::Host) r.host_us += t.wall_us;
  }
  return r;
}

void print_run(const std::vector<StepInfo>& steps, const std::vector<StepTiming>& timings,
               double wall_us) {
  for (const StepTiming& t : timings) print_step(steps[t.step], t);
  const RunTotals r = totals(timings);
  std::printf(
      "run: %zu step(s) in %.3f ms host wall: GPU %s \xC2\xB5s over %zu dispatch nodes, "
      "host steps %s \xC2\xB5s\n",
      timings.size(), wall_us / 1000.0, fixed(r.gpu_us, 2).c_str(), r.dispatches,
      fixed(r.host_us, 2).c_str());
}

// One execute of every step, timed on the host (µs); CliError naming the step on failure.
double run_timed(Model& m, const InputViews& in, const std::vector<TensorView>& out) {
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = m.execute(in.views, out);
  if (s != Status::Ok) throw CliError(exit_code_for(s), m.last_error());
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

// --bench: warm-up runs and `bench` runs without timestamps (the host wall an app sees), then
// `bench` profiled ones for the GPU totals (a timestamp pair around every dispatch serializes
// the dispatches, so they do not time the host wall); the last one's timings stay (--profile).
void run_benchmark(Model& m, const InputViews& in, const std::vector<TensorView>& out, int bench) {
  set_profiling_or_fail(m, Delegate::Profiling::Off);
  for (int i = 0; i < kWarmupRuns; ++i) run_timed(m, in, out);
  std::vector<double> wall_ms, gpu_us;
  for (int i = 0; i < bench; ++i) wall_ms.push_back(run_timed(m, in, out) / 1000.0);
  set_profiling_or_fail(m, Delegate::Profiling::PerDispatch);
  for (int i = 0; i < bench; ++i) {
    run_timed(m, in, out);
    gpu_us.push_back(totals(m.last_timings()).gpu_us);
  }
  if (totals(m.last_timings()).dispatches == 0) gpu_us.clear();  // no GPU step timed
  print_bench_summary(" of every step, no GPU timestamps", wall_ms, gpu_us);
}

void print_step_profiles(const std::vector<StepTiming>& timings) {
  for (const StepTiming& t : timings) {
    if (t.place != StepPlace::Gpu) continue;
    std::printf("%s ", t.label.c_str());
    print_profile(t.profile);
  }
}

int validation_result(const DelegateOptions& options, const Model& m) {
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
  // Everything that can be checked without the device, in the order the user would fix it;
  // Model::load reads and checks every file of the model before its first delegate.
  read_input_files(opt.inputs);
  const bool create_out_dir = output_dir_to_create(opt.out_dir);

  const DelegateOptions options = delegate_options(opt.device);
  std::unique_ptr<Model> model = load_model(opt, options);
  const std::vector<StepInfo> steps = model_steps(*model);
  if (opt.weights && !reads_constants(*model, steps)) {
    std::fprintf(stderr,
                 "vkd run: note: --weights %s is unused: no host step of %s reads a "
                 "constant\n",
                 opt.weights->c_str(), opt.model_path.c_str());
  }
  const std::vector<const InputArg*> matched = match_plan_inputs(*model, opt.inputs);
  std::vector<OutputSlot> outputs = output_slots(output_infos(*model), opt.out_dir);
  check_run_files(opt, plan_files(steps, opt), create_out_dir, outputs);
  print_plan_header(opt, *model, steps, matched);

  const InputViews in = input_views(matched);
  const std::vector<TensorView> out = output_views(outputs);
  const double wall_us = run_timed(*model, in, out);
  print_run(steps, model->last_timings(), wall_us);
  if (opt.bench > 0) run_benchmark(*model, in, out, opt.bench);

  if (create_out_dir) create_output_dir(opt.out_dir);
  write_outputs(outputs, opt.force);
  if (opt.profile) print_step_profiles(model->last_timings());
  return validation_result(options, *model);
}

}  // namespace vkd::cli
