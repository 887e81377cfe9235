// The steps `vkd run` is made of, shared by the two kinds of model it runs: a delegate blob
// (RunCommand.cpp) and a partitioned model, MODEL.partition.json (RunPartitioned.cpp). Each
// works on TensorInfo lists, so a model of several delegates and host steps describes its
// inputs and outputs the way one delegate does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/Npy.h"
#include "vkdelegate/Delegate.hpp"

namespace vkd::cli {

inline constexpr int kWarmupRuns = 3;  // --bench: untimed runs first

struct InputArg {
  std::string name;  // as given on the command line
  std::string path;
  NpyArray array;
};

struct OutputSlot {
  std::string name;  // io_name()
  std::string path;  // where NAME.npy goes
  TensorInfo info;
  std::vector<uint8_t> data;  // host_dtype bytes (float16 tensors as float32)
};

// The command line of `vkd run`, checked (UsageError) but no file read yet.
struct RunOptions {
  std::string model_path;
  bool partitioned = false;  // MODEL.partition.json (is_partition_plan_path)
  bool force = false;
  bool profile = false;
  bool intermediates = false;  // --intermediates: every tensor the blob keeps is an output too
  int bench = 0;               // timed runs after the first one; 0: no benchmark
  std::string out_dir;
  std::optional<std::string> trace_path;
  std::optional<std::string> check_graph;  // --check GRAPH.json
  // --weights: the --check graph's; for a partitioned model, the constants of its host steps
  std::optional<std::string> weights;
  std::optional<std::string> device;
  std::vector<InputArg> inputs;  // name and path; read_input_files() reads the arrays
};

// The usage errors come in this order, whatever the order on the command line.
RunOptions parse_run_options(const std::vector<std::string>& args);

// Reads every input file; all the unreadable ones in one CliError(2).
void read_input_files(std::vector<InputArg>& inputs);

// Whether --output-dir `dir` is to be created: it is when it does not exist and its parent is a
// writable directory (created after every check, before the outputs are written); an existing
// one must be a writable directory. Else CliError(2).
bool output_dir_to_create(const std::string& dir);
void create_output_dir(const std::string& out_dir);

// The inputs (outputs) of a vkd::Delegate or a vkd::Model, in order.
template <typename Runnable>
std::vector<TensorInfo> input_infos(const Runnable& r) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < r.input_count(); ++i) infos.push_back(r.input(i));
  return infos;
}
template <typename Runnable>
std::vector<TensorInfo> output_infos(const Runnable& r) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < r.output_count(); ++i) infos.push_back(r.output(i));
  return infos;
}

// Matches the --input arguments to the model's inputs, by name or by position ("input<i>"; a
// real input name wins). Every problem goes into `errors`; the result is in model input order
// (nullptr where no fitting file was given).
std::vector<const InputArg*> match_inputs(const std::vector<TensorInfo>& model_inputs,
                                          const std::vector<InputArg>& given,
                                          std::vector<std::string>& errors);

// One slot per model output: its file in `out_dir` (NAME.npy; a name whose file another output
// already took gets "_<i>" appended) and room for its data.
std::vector<OutputSlot> output_slots(const std::vector<TensorInfo>& outputs,
                                     const std::string& out_dir);

// Every file this run reads (the model, the inputs and `more_inputs`: (role, path)) and writes,
// checked before the first run (CliError).
void check_run_files(const RunOptions& opt,
                     const std::vector<std::pair<std::string, std::string>>& more_inputs,
                     bool create_out_dir, const std::vector<OutputSlot>& outputs);

// What execute() reads: the input files' data, float16 files widened to float32 first.
struct InputViews {
  std::vector<std::vector<uint8_t>> widened;  // per input; empty unless the file is float16
  std::vector<ConstTensorView> views;
};
InputViews input_views(const std::vector<const InputArg*>& matched);
std::vector<TensorView> output_views(std::vector<OutputSlot>& outputs);

// Each output as .npy (float16 model tensors as float16 files), with a summary of its values.
void write_outputs(const std::vector<OutputSlot>& outputs, bool force);

// float16 model tensors are exchanged with the delegate as float32; their files are float16.
bool is_float16(const TensorInfo& info);
std::string join_lines(const std::vector<std::string>& lines);
double median(std::vector<double> v);
double total_gpu_us(const std::vector<NodeProfile>& profile);
std::string fixed(double v, int decimals);  // "%.*f"
std::string pad(const std::string& s, size_t width, bool right = false);
// The per-dispatch table of --profile.
void print_profile(const std::vector<NodeProfile>& profile);

// Delegate::set_profiling or Model::set_profiling on `runner`; CliError with the status's exit
// code and the runner's message when it fails.
template <typename Runner>
void set_profiling_or_fail(Runner& runner, Delegate::Profiling mode) {
  const Status s = runner.set_profiling(mode);
  if (s != Status::Ok) throw CliError(exit_code_for(s), runner.last_error());
}

// --bench's summary line: kWarmupRuns warm-up runs and `wall_ms.size()` timed runs without
// timestamps (the host wall an app sees), then the GPU totals of as many profiled runs (`gpu_us`;
// empty: GPU time n/a). `runs` says what one run is ("" for one blob).
void print_bench_summary(const std::string& runs, const std::vector<double>& wall_ms,
                         const std::vector<double>& gpu_us);

}  // namespace vkd::cli
