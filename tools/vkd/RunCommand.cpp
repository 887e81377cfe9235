// vkd run MODEL.vkd --input NAME=FILE.npy ... : one inference (plus optional benchmark runs)
// through the public delegate API, outputs written as .npy; the steps it shares with a
// partitioned model (MODEL.partition.json, run by RunPartitioned.cpp) are in RunSteps.h. Every
// check on the command line, the input files (the --check graph included) and the output
// locations happens before the first execute(), so a failing call writes nothing (a missing
// --output-dir is created only after them); no output may be a file the run reads, --force or
// not. Outputs are written to a temporary file and linked into place, so a file is either
// absent or complete (tools/vkd/Files.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "tools/vkd/Args.h"
#include "tools/vkd/Check.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/Files.h"
#include "tools/vkd/RunPartitioned.h"
#include "tools/vkd/RunSteps.h"
#include "tools/vkd/Trace.h"

namespace vkd::cli {
namespace {

// The input files in model input order; every mismatch with the model (and with the --check
// graph's inputs) in one CliError(2).
std::vector<const InputArg*> match_and_check_inputs(const Delegate& d,
                                                    const std::vector<TensorInfo>& infos,
                                                    const std::vector<InputArg>& inputs,
                                                    const std::optional<CheckGraph>& check) {
  std::vector<std::string> errors;
  const std::vector<const InputArg*> matched = match_inputs(infos, inputs, errors);
  if (check) {
    std::vector<std::string> names;
    for (size_t i = 0; i < d.input_count(); ++i) names.push_back(io_name(d.input(i), i, true));
    check_graph_inputs(*check, names, errors);
  }
  if (!errors.empty()) throw CliError(2, join_lines(errors));
  return matched;
}

// The --check graph and its weights, read by a run that checks.
std::vector<std::pair<std::string, std::string>> check_files(const RunOptions& opt,
                                                             const std::optional<CheckGraph>& c) {
  if (!c) return {};
  std::vector<std::pair<std::string, std::string>> files{{"the --check graph", c->path}};
  if (opt.weights) files.emplace_back("the --check weights file", *opt.weights);
  return files;
}

// A blob compiled for a maximum sequence length runs at the length the input files give: the
// inputs and outputs at that length (unchanged when an input is missing: match_inputs says so).
// Returns whether that is shorter than the maximum.
bool infos_at_files_length(Delegate& d, const std::vector<InputArg>& given,
                           std::vector<TensorInfo>& inputs, std::vector<TensorInfo>& outputs) {
  const Delegate::LengthRange range = d.length_range();
  if (range.max == 0) return false;
  std::vector<std::vector<int64_t>> sizes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = io_name(inputs[i], i, true);
    const auto it = std::find_if(given.begin(), given.end(), [&](const InputArg& in) {
      return in.name == name || in.name == "input" + std::to_string(i);
    });
    if (it == given.end()) return false;
    sizes.push_back(it->array.shape);
  }
  int64_t length = 0;
  if (d.length_of_inputs(sizes, &length) != Status::Ok) throw CliError(2, d.last_error());
  if (d.infos_at_length(length, &inputs, &outputs) != Status::Ok) {
    throw CliError(
        1, "the model at " + range.name + " = " + std::to_string(length) + ": " + d.last_error());
  }
  std::printf("length: %s = %lld (the model takes %lld to %lld)\n", range.name.c_str(),
              static_cast<long long>(length), static_cast<long long>(range.min),
              static_cast<long long>(range.max));
  return length != range.max;
}

void print_run_header(const std::string& model_path, size_t blob_bytes, const Delegate& d,
                      const std::vector<TensorInfo>& infos,
                      const std::vector<const InputArg*>& matched) {
  std::printf("model: %s (%s), %zu input(s), %zu output(s)\n", model_path.c_str(),
              human_bytes(blob_bytes).c_str(), d.input_count(), d.output_count());
  std::printf("device: %s\n", d.device_name().c_str());
  std::fputs(memory_report_text(d.memory()).c_str(), stdout);
  for (size_t i = 0; i < matched.size(); ++i) {
    std::printf("input  %s: %s <- %s\n", io_name(infos[i], i, true).c_str(),
                tensor_summary(infos[i]).c_str(), matched[i]->path.c_str());
  }
}

// One execute(): its host wall time, the GPU profile the delegate recorded for it and where
// the delegate says the time went.
struct TimedRun {
  double wall_us = 0.0;
  std::vector<NodeProfile> profile;
  ExecuteProfile phases;
};

// The inputs and outputs every execute() of the run uses.
struct RunViews {
  const std::vector<ConstTensorView>& in;
  const std::vector<TensorView>& out;
};

// One execute(), timed on the host (µs); a failure is a CliError with the status's exit code.
double execute_timed(Delegate& d, const RunViews& views) {
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = d.execute(views.in, views.out);
  const auto t1 = std::chrono::steady_clock::now();
  if (s != Status::Ok) {
    throw CliError(exit_code_for(s),
                   std::string("execute failed (") + status_name(s) + "): " + d.last_error());
  }
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

// One execute() through execute_timed(), with the delegate's records of it.
TimedRun run_once(Delegate& d, const RunViews& views) {
  const double wall_us = execute_timed(d, views);
  return {wall_us, d.last_profile(), d.last_execute_profile()};
}

void print_first_run(const TimedRun& run, bool profiling) {
  if (!profiling) {
    std::printf(
        "run: %.3f ms host wall (execute), GPU not timed (--bench, --profile and "
        "--trace time it)\n",
        run.wall_us / 1000.0);
    return;
  }
  std::printf("run: %.3f ms host wall (execute), GPU %s over %zu dispatch nodes\n",
              run.wall_us / 1000.0,
              run.profile.empty() ? "time n/a"
                                  : (fixed(total_gpu_us(run.profile), 2) + " \xC2\xB5s").c_str(),
              run.profile.size());
}

double median_of(const std::vector<ExecuteProfile>& runs, double ExecuteProfile::* field) {
  std::vector<double> v;
  for (const ExecuteProfile& p : runs) v.push_back(p.*field);
  return median(v);
}

// Medians of where execute()'s time went (ExecuteProfile): the host phases of the runs without
// timestamps, the GPU side of the timed ones (span-only and per-dispatch).
void print_phases(const std::vector<ExecuteProfile>& plain, const std::vector<ExecuteProfile>& span,
                  const std::vector<ExecuteProfile>& profiled) {
  std::printf(
      "bench: host phases median: input copy %.1f \xC2\xB5s, submit -> fence %.1f "
      "\xC2\xB5s, output copy %.1f \xC2\xB5s\n",
      median_of(plain, &ExecuteProfile::input_copy_us),
      median_of(plain, &ExecuteProfile::submit_wait_us),
      median_of(plain, &ExecuteProfile::output_copy_us));
  if (profiled.empty()) return;
  std::printf(
      "bench: GPU median: span %.2f \xC2\xB5s (first dispatch start to last dispatch "
      "end, only those timestamps), staging copies in %.2f / out %.2f \xC2\xB5s; host "
      "wall %.3f ms\n",
      median_of(span, &ExecuteProfile::gpu_span_us),
      median_of(span, &ExecuteProfile::gpu_input_copy_us),
      median_of(span, &ExecuteProfile::gpu_output_copy_us),
      median_of(span, &ExecuteProfile::host_wall_us) / 1000.0);
  std::printf(
      "bench: GPU median with a timestamp pair around every dispatch: span %.2f "
      "\xC2\xB5s (the pairs serialize the dispatches), host wall %.3f ms\n",
      median_of(profiled, &ExecuteProfile::gpu_span_us),
      median_of(profiled, &ExecuteProfile::host_wall_us) / 1000.0);
}

// A warning for each output of the last run that differs from the first run's.
void warn_if_outputs_changed(const std::vector<OutputSlot>& outputs,
                             const std::vector<std::vector<uint8_t>>& first) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].data != first[i]) {
      std::fprintf(stderr,
                   "vkd run: warning: output '%s' of the last run differs from the first run's "
                   "(non-deterministic result)\n",
                   outputs[i].name.c_str());
    }
  }
}

// --bench: warm-up runs, then `bench` runs without timestamps (the host wall an app sees),
// `bench` with the GPU span timed alone and `bench` profiled ones (per-dispatch GPU times;
// their timestamps serialize the dispatches); returns the last profiled run.
TimedRun run_benchmark(Delegate& d, const RunViews& views, int bench,
                       const std::vector<OutputSlot>& outputs) {
  std::vector<std::vector<uint8_t>> first;
  for (const OutputSlot& o : outputs) first.push_back(o.data);
  set_profiling_or_fail(d, Delegate::Profiling::Off);
  for (int i = 0; i < kWarmupRuns; ++i) execute_timed(d, views);
  std::vector<double> wall_ms, gpu_us;
  std::vector<ExecuteProfile> plain, profiled;
  for (int i = 0; i < bench; ++i) {
    wall_ms.push_back(execute_timed(d, views) / 1000.0);
    plain.push_back(d.last_execute_profile());
  }
  std::vector<ExecuteProfile> span;
  set_profiling_or_fail(d, Delegate::Profiling::Span);
  for (int i = 0; i < bench; ++i) span.push_back(run_once(d, views).phases);
  set_profiling_or_fail(d, Delegate::Profiling::PerDispatch);
  TimedRun last;
  for (int i = 0; i < bench; ++i) {
    last = run_once(d, views);
    gpu_us.push_back(total_gpu_us(last.profile));
    profiled.push_back(last.phases);
  }
  if (last.profile.empty()) {  // no dispatch timed
    gpu_us.clear();
    profiled.clear();
  }
  print_bench_summary("", wall_ms, gpu_us);
  print_phases(plain, span, profiled);
  warn_if_outputs_changed(outputs, first);
  return last;
}

// --bench, last part: the same runs through the delegate's staging views where a tensor has
// one (no host copy), as an app that asks for them would run; the outputs must not change.
void run_zero_copy_benchmark(Delegate& d, const RunViews& views, int bench,
                             const std::vector<OutputSlot>& outputs) {
  // The staging views are the shapes the blob was compiled for: a shorter length of a blob
  // with a dynamic length has none of its own.
  for (size_t i = 0; i < views.in.size(); ++i) {
    if (views.in[i].sizes != d.input(i).sizes) {
      std::printf("bench: zero-copy n/a (the staging views have the maximum length's shapes)\n");
      return;
    }
  }
  std::vector<ConstTensorView> in = views.in;
  std::vector<TensorView> out = views.out;
  size_t staged_in = 0, staged_out = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    TensorView staging;
    if (d.staging_input(i, &staging) != Status::Ok) continue;
    std::memcpy(staging.data, in[i].data, staging.bytes);
    in[i] = {staging.data, staging.bytes, staging.dtype, staging.sizes};
    ++staged_in;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    TensorView staging;
    if (d.staging_output(i, &staging) != Status::Ok) continue;
    out[i] = staging;
    ++staged_out;
  }
  if (staged_in + staged_out == 0) {
    std::printf("bench: zero-copy n/a (no input or output is contiguous NCHW on the device)\n");
    return;
  }
  const RunViews zero_copy{in, out};
  std::vector<double> wall_ms;
  std::vector<ExecuteProfile> phases;
  for (int i = 0; i < kWarmupRuns; ++i) execute_timed(d, zero_copy);
  for (int i = 0; i < bench; ++i) {
    wall_ms.push_back(execute_timed(d, zero_copy) / 1000.0);
    phases.push_back(d.last_execute_profile());
  }
  std::printf(
      "bench: zero-copy (staging views for %zu of %zu inputs, %zu of %zu outputs): host "
      "wall median %.3f ms, min %.3f ms; submit -> fence median %.1f \xC2\xB5s\n",
      staged_in, in.size(), staged_out, out.size(), median(wall_ms),
      *std::min_element(wall_ms.begin(), wall_ms.end()),
      median_of(phases, &ExecuteProfile::submit_wait_us));
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].data != views.out[i].data &&
        std::memcmp(out[i].data, outputs[i].data.data(), out[i].bytes) != 0) {
      std::fprintf(stderr,
                   "vkd run: warning: output %zu ('%s') read through its staging view "
                   "differs from the copied one\n",
                   i, outputs[i].name.c_str());
    }
  }
}

void write_trace(const RunOptions& opt, const Delegate& d, const TimedRun& last) {
  std::vector<TraceNode> nodes;
  for (const NodeProfile& n : last.profile) nodes.push_back({n.op, n.kernel, n.tensors, n.gpu_us});
  const std::string json =
      trace_json(make_run_trace("vkd run " + opt.model_path, d.device_name(), last.wall_us, nodes));
  write_file(*opt.trace_path, std::vector<uint8_t>(json.begin(), json.end()), opt.force);
  std::printf("trace: %s (%zu GPU events; open in ui.perfetto.dev)\n", opt.trace_path->c_str(),
              nodes.size());
}

// --check: the run's inputs and outputs against the reference interpreter; its exit code.
int check_outputs(const std::vector<uint8_t>& blob, const std::string& model_path,
                  const DelegateOptions& options, const Delegate& d, const RunViews& views,
                  const std::vector<OutputSlot>& outputs, const CheckGraph& check) {
  std::vector<CheckInput> check_inputs;
  for (size_t i = 0; i < views.in.size(); ++i) {
    check_inputs.push_back({io_name(d.input(i), i, true), views.in[i]});
  }
  std::vector<CheckOutput> check_outputs;
  for (const OutputSlot& o : outputs) check_outputs.push_back({o.name, o.info.host_dtype, &o.data});
  return check_against_graph(blob, model_path, options, check_inputs, check_outputs, check);
}

// With the validation layer on, any message it reported fails the run (exit 1); else the
// run's exit code stays `result`.
int validation_result(const DelegateOptions& options, const Delegate& d, int result) {
  if (!options.validation) return result;
  const uint64_t messages = d.validation_message_count();
  if (messages > 0) {
    std::fprintf(stderr, "vkd run: %llu Vulkan validation message(s) (VKD_VALIDATION=1)\n",
                 static_cast<unsigned long long>(messages));
    return 1;
  }
  std::printf("validation: no messages\n");
  return result;
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
  RunOptions opt = parse_run_options(args);
  if (opt.partitioned) return run_partitioned(opt);
  // Everything that can be checked without the device, in the order the user would fix it.
  const std::vector<uint8_t> blob = read_model_file(opt.model_path);
  read_input_files(opt.inputs);
  std::optional<CheckGraph> check;
  if (opt.check_graph) check = read_check_graph(*opt.check_graph, opt.weights.value_or(""));
  const bool create_out_dir = output_dir_to_create(opt.out_dir);

  DelegateOptions options = delegate_options(opt.device);
  // The delegate then lists every intermediate after the model's outputs (as --check's own
  // run does), so they are written like outputs: per-layer comparisons with another framework.
  options.expose_intermediates = opt.intermediates;
  // Timestamp queries only where the run reports GPU time: a plain run executes as an app's.
  options.profiling = opt.bench > 0 || opt.profile || opt.trace_path.has_value();
  std::unique_ptr<Delegate> delegate = create_delegate(blob, options, opt.model_path);
  if (check) check_graph_is_the_models(*check, blob, opt.model_path, *delegate);
  std::vector<TensorInfo> input_list = input_infos(*delegate);
  std::vector<TensorInfo> output_list = output_infos(*delegate);
  const bool shorter = infos_at_files_length(*delegate, opt.inputs, input_list, output_list);
  if (shorter && check) {
    throw CliError(2,
                   "--check runs the graph IR at its own shapes, the maximum length: give "
                   "inputs of that length to check this model");
  }
  const std::vector<const InputArg*> matched =
      match_and_check_inputs(*delegate, input_list, opt.inputs, check);
  std::vector<OutputSlot> outputs = output_slots(output_list, opt.out_dir);
  check_run_files(opt, check_files(opt, check), create_out_dir, outputs);
  print_run_header(opt.model_path, blob.size(), *delegate, input_list, matched);

  const InputViews inputs = input_views(matched);
  const std::vector<TensorView> out_views = output_views(outputs);
  const RunViews views{inputs.views, out_views};
  TimedRun last = run_once(*delegate, views);
  print_first_run(last, options.profiling);
  if (opt.bench > 0) {
    last = run_benchmark(*delegate, views, opt.bench, outputs);
    (void)delegate->set_profiling(false);  // created with profiling: cannot fail
    run_zero_copy_benchmark(*delegate, views, opt.bench, outputs);
  }

  if (create_out_dir) create_output_dir(opt.out_dir);
  write_outputs(outputs, opt.force);
  if (opt.profile) print_profile(last.profile);
  if (opt.trace_path) write_trace(opt, *delegate, last);
  const int check_result =
      check ? check_outputs(blob, opt.model_path, options, *delegate, views, outputs, *check) : 0;
  return validation_result(options, *delegate, check_result);
}

}  // namespace vkd::cli
