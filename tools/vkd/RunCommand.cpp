// vkd run MODEL.vkd --input NAME=FILE.npy ... : one inference (plus optional benchmark runs)
// through the public delegate API, outputs written as .npy. Every check on the command line,
// the input files (the --check graph included) and the output locations happens before the
// first execute(), so a failing call writes nothing (a missing --output-dir is created only
// after them); no output may be a file the run reads, --force or not. Outputs are written to a
// temporary file and linked into place, so a file is either absent or complete
// (tools/vkd/Files.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include "runtime/core/TensorSpec.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Check.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/Files.h"
#include "tools/vkd/Npy.h"
#include "tools/vkd/Trace.h"

namespace vkd::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kWarmupRuns = 3;
constexpr size_t kFirstValues = 8;

struct InputArg {
  std::string name;  // as given on the command line
  std::string path;
  NpyArray array;
};

struct OutputSlot {
  std::string name;  // io_name()
  std::string path;  // where NAME.npy goes
  TensorInfo info;
  std::vector<uint8_t> data;
};

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (size_t i = 0; i < lines.size(); ++i) s += (i ? "\n" : "") + lines[i];
  return s;
}

HostDType to_host_dtype(NpyDType d) {
  switch (d) {
    case NpyDType::Float32:
    case NpyDType::Float16: return HostDType::Float32;  // widened before execute()
    case NpyDType::Int8: return HostDType::Int8;
    case NpyDType::Int32: return HostDType::Int32;
  }
  return HostDType::Float32;
}

// float16 model tensors are exchanged with the delegate as float32; their files are float16
// ('<f2'; a float32 file is accepted too and rounded by the runtime).
bool is_float16(const TensorInfo& info) { return info.device_dtype == "float16"; }

NpyDType to_npy_dtype(HostDType d) {
  switch (d) {
    case HostDType::Float32: return NpyDType::Float32;
    case HostDType::Int8: return NpyDType::Int8;
    case HostDType::Int32: return NpyDType::Int32;
  }
  return NpyDType::Float32;
}

// A file stem from an output name: [A-Za-z0-9._-] kept, anything else (path separators
// included) becomes '_'.
std::string file_stem(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}


std::string format_value(double v, HostDType dtype) {
  char buf[32];
  if (dtype == HostDType::Float32) {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  }
  return buf;
}

// "min -4 max 3.96875 mean 0.0123 | first: -1.5 0.25 ..." (non-finite values counted apart).
std::string value_summary(const std::vector<uint8_t>& data, HostDType dtype, size_t numel) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0.0;
  size_t finite = 0, nan = 0, inf = 0;
  for (size_t i = 0; i < numel; ++i) {
    const double v = element_as_double(data.data(), dtype, i);
    if (std::isnan(v)) {
      ++nan;
    } else if (std::isinf(v)) {
      ++inf;
    } else {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      ++finite;
    }
  }
  std::string s;
  if (finite > 0) {
    char mean[32];
    std::snprintf(mean, sizeof mean, "%.6g", sum / static_cast<double>(finite));
    s = "min " + format_value(lo, dtype) + "  max " + format_value(hi, dtype) + "  mean " + mean;
  } else {
    s = "no finite values";
  }
  if (nan) s += "  nan " + std::to_string(nan);
  if (inf) s += "  inf " + std::to_string(inf);
  s += "  | first:";
  for (size_t i = 0; i < std::min(numel, kFirstValues); ++i) {
    s += " " + format_value(element_as_double(data.data(), dtype, i), dtype);
  }
  if (numel > kFirstValues) s += " ...";
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double total_gpu_us(const std::vector<NodeProfile>& profile) {
  double t = 0.0;
  for (const auto& n : profile) t += n.gpu_us;
  return t;
}

std::string fixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pad(const std::string& s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

void print_profile(const std::vector<NodeProfile>& profile) {
  if (profile.empty()) {
    std::printf("profile: no GPU timestamps for the last run (the device reports none)\n");
    return;
  }
  const double total = total_gpu_us(profile);
  size_t w_idx = 1, w_op = 2, w_kernel = 6, w_us = 6;
  for (size_t i = 0; i < profile.size(); ++i) {
    w_idx = std::max(w_idx, std::to_string(i).size());
    w_op = std::max(w_op, profile[i].op.size());
    w_kernel = std::max(w_kernel, profile[i].kernel.size());
    w_us = std::max(w_us, fixed(profile[i].gpu_us, 2).size());
  }
  w_op = std::max(w_op, std::string("total").size());
  w_us = std::max(w_us, fixed(total, 2).size());
  std::printf("profile (last run, %zu dispatch nodes):\n", profile.size());
  // "GPU µs" is 6 columns wide but 7 bytes long: pad it by hand.
  std::printf("  %s  %s  %s  %s%s   share  tensors\n", pad("#", w_idx, true).c_str(),
              pad("op", w_op).c_str(), pad("kernel", w_kernel).c_str(),
              std::string(w_us - 6, ' ').c_str(), "GPU \xC2\xB5s");
  for (size_t i = 0; i < profile.size(); ++i) {
    const NodeProfile& n = profile[i];
    const double share = total > 0.0 ? 100.0 * n.gpu_us / total : 0.0;
    std::printf("  %s  %s  %s  %s  %s%%  %s\n", pad(std::to_string(i), w_idx, true).c_str(),
                pad(n.op, w_op).c_str(), pad(n.kernel, w_kernel).c_str(),
                pad(fixed(n.gpu_us, 2), w_us, true).c_str(), pad(fixed(share, 1), 5, true).c_str(),
                n.tensors.c_str());
  }
  std::printf("  %s  %s  %s  %s  %s%%\n", std::string(w_idx, ' ').c_str(),
              pad("total", w_op).c_str(), std::string(w_kernel, ' ').c_str(),
              pad(fixed(total, 2), w_us, true).c_str(), pad("100.0", 5, true).c_str());
}

// Whether --output-dir `dir` is to be created: it is when it does not exist and its parent is a
// writable directory (created after every check, before the outputs are written); an existing
// one must be a writable directory. Else CliError(2).
bool output_dir_to_create(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dir, ec))) {
    check_writable_dir(dir, "output directory");
    return false;
  }
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "new/"
  const std::string parent = p.has_parent_path() ? p.parent_path().string() : ".";
  if (const auto problem = dir_write_problem(parent)) {
    throw CliError(2, "output directory '" + dir + "' does not exist and cannot be created: "
                      "directory '" + parent + "' " + *problem);
  }
  return true;
}

// The model's inputs as the messages name them.
struct ModelInputs {
  std::vector<TensorInfo> infos;
  std::vector<std::string> names;   // io_name()
  std::vector<std::string> labels;  // "'x'", or "'x' (input0)" where the name is not the alias
  std::string list;                 // every label with its dtype and shape, or "none"

  // The input called `name`, or its position "input<i>" (a real name wins); size() for none.
  size_t resolve(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return i;
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (name == "input" + std::to_string(i)) return i;
    }
    return names.size();
  }
};

ModelInputs model_inputs(const Delegate& d) {
  ModelInputs m;
  for (size_t i = 0; i < d.input_count(); ++i) {
    m.infos.push_back(d.input(i));
    m.names.push_back(io_name(m.infos[i], i, true));
    const std::string alias = "input" + std::to_string(i);
    m.labels.push_back("'" + m.names[i] + "'" +
                       (m.names[i] == alias ? "" : " (" + alias + ")"));
    m.list += (i ? ", " : "") + m.labels[i] + " " + host_dtype_name(m.infos[i].host_dtype) +
              " " + sizes_string(m.infos[i].sizes);
  }
  if (d.input_count() == 0) m.list = "none";
  return m;
}

// Each --input given to the model input it names (nullptr where none is); unknown names and
// inputs given twice go into `errors`.
std::vector<const InputArg*> assign_inputs(const ModelInputs& m,
                                           const std::vector<InputArg>& given,
                                           std::vector<std::string>& errors) {
  const size_t count = m.names.size();
  std::vector<const InputArg*> ordered(count, nullptr);
  for (const InputArg& in : given) {
    const size_t i = m.resolve(in.name);
    if (i == count) {
      errors.push_back("unknown input '" + in.name + "' from " + in.path +
                       ": the model has no input of that name; its inputs: " + m.list);
    } else if (ordered[i] != nullptr) {
      errors.push_back("input " + m.labels[i] + " given more than once: " + ordered[i]->path +
                       ", " + in.path);
    } else {
      ordered[i] = &in;
    }
  }
  return ordered;
}

std::string missing_input_error(const ModelInputs& m, size_t i) {
  const TensorInfo& info = m.infos[i];
  return "missing input " + m.labels[i] + ": " +
         (is_float16(info) ? std::string("float16")
                           : std::string(host_dtype_name(info.host_dtype))) +
         " " + sizes_string(info.sizes) + "; pass --input " + m.names[i] + "=FILE.npy";
}

// Whether the file given for input `i` has the model's dtype and shape; each mismatch goes
// into `errors`.
bool input_file_fits(const ModelInputs& m, size_t i, const InputArg& in,
                     std::vector<std::string>& errors) {
  const TensorInfo& info = m.infos[i];
  const std::string prefix = "input " + m.labels[i] + " from " + in.path;
  bool ok = true;
  const bool half_file = in.array.dtype == NpyDType::Float16;
  if (to_host_dtype(in.array.dtype) != info.host_dtype || (half_file && !is_float16(info))) {
    errors.push_back(prefix + ": wrong dtype: the model expects " +
                     (is_float16(info) ? "float16 (or float32)"
                                       : std::string(host_dtype_name(info.host_dtype))) +
                     ", the file has " + npy_dtype_name(in.array.dtype));
    ok = false;
  }
  if (in.array.shape != info.sizes) {
    errors.push_back(prefix + ": wrong shape: the model expects " + sizes_string(info.sizes) +
                     ", the file has " + sizes_string(in.array.shape));
    ok = false;
  }
  return ok;
}

// Matches the --input arguments to the model's inputs, by name or by position ("input<i>": the
// delegate names unnamed blob inputs after their values, so positions are always accepted; a
// real input name wins over a position). Every problem goes into `errors`.
std::vector<const InputArg*> match_inputs(const Delegate& d, const std::vector<InputArg>& given,
                                          std::vector<std::string>& errors) {
  const ModelInputs m = model_inputs(d);
  std::vector<const InputArg*> ordered = assign_inputs(m, given, errors);
  for (size_t i = 0; i < ordered.size(); ++i) {
    if (ordered[i] == nullptr) {
      errors.push_back(missing_input_error(m, i));
    } else if (!input_file_fits(m, i, *ordered[i], errors)) {
      ordered[i] = nullptr;
    }
  }
  return ordered;
}

// The command line of `vkd run`, checked (UsageError) but no file read yet.
struct RunOptions {
  std::string model_path;
  bool force = false;
  bool profile = false;
  int bench = 0;  // timed runs after the first one; 0: no benchmark
  std::string out_dir;
  std::optional<std::string> trace_path;
  std::optional<std::string> check_graph;  // --check GRAPH.json
  std::optional<std::string> weights;      // --weights, for the --check graph
  std::optional<std::string> device;
  std::vector<InputArg> inputs;  // name and path; read_input_files() reads the arrays
};

std::vector<InputArg> parse_input_specs(const std::vector<std::string>& specs) {
  std::vector<InputArg> inputs;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      throw UsageError("--input needs NAME=FILE.npy, got '" + spec + "'");
    }
    inputs.push_back({spec.substr(0, eq), spec.substr(eq + 1), {}});
  }
  return inputs;
}

// The usage errors come in this order, whatever the order on the command line.
RunOptions parse_run_options(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {{"--input", true},
                                         {"--output-dir", true},
                                         {"--bench", true},
                                         {"--profile", false},
                                         {"--trace", true},
                                         {"--device", true},
                                         {"--check", true},
                                         {"--weights", true},
                                         {"--force", false}});
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty() ? "missing MODEL.vkd"
                                          : "one model expected, got '" + a.positional[0] +
                                                "', '" + a.positional[1] + "'" +
                                                (a.positional.size() > 2 ? ", ..." : ""));
  }
  RunOptions o;
  o.model_path = a.positional[0];
  o.force = a.has("--force");
  o.profile = a.has("--profile");
  if (a.has("--bench")) {
    o.bench = static_cast<int>(parse_int_option("--bench", *a.last("--bench"), 1, 1000000));
  }
  o.out_dir = a.last("--output-dir").value_or(".");
  o.trace_path = a.last("--trace");
  if (o.out_dir.empty()) throw UsageError("--output-dir needs a directory");
  if (o.trace_path && o.trace_path->empty()) throw UsageError("--trace needs a file name");
  o.check_graph = a.last("--check");
  o.weights = a.last("--weights");
  if (o.weights && !o.check_graph) throw UsageError("--weights is only used with --check");
  o.device = a.last("--device");
  o.inputs = parse_input_specs(a.all("--input"));
  return o;
}

// Reads every input file; all the unreadable ones in one CliError(2).
void read_input_files(std::vector<InputArg>& inputs) {
  std::vector<std::string> errors;
  for (InputArg& in : inputs) {
    try {
      in.array = read_npy(in.path);
    } catch (const NpyError& e) {
      errors.push_back("input '" + in.name + "': " + e.what());
    }
  }
  if (!errors.empty()) throw CliError(2, join_lines(errors));
}

// The input files in model input order; every mismatch with the model (and with the --check
// graph's inputs) in one CliError(2).
std::vector<const InputArg*> match_and_check_inputs(const Delegate& d,
                                                    const std::vector<InputArg>& inputs,
                                                    const std::optional<CheckGraph>& check) {
  std::vector<std::string> errors;
  const std::vector<const InputArg*> matched = match_inputs(d, inputs, errors);
  if (check) {
    std::vector<std::string> names;
    for (size_t i = 0; i < d.input_count(); ++i) names.push_back(io_name(d.input(i), i, true));
    check_graph_inputs(*check, names, errors);
  }
  if (!errors.empty()) throw CliError(2, join_lines(errors));
  return matched;
}

// One slot per model output: its file in `out_dir` (NAME.npy; a name whose file another output
// already took gets "_<i>" appended) and room for its data.
std::vector<OutputSlot> output_slots(const Delegate& d, const std::string& out_dir) {
  std::vector<OutputSlot> outputs(d.output_count());
  std::set<std::string> stems;
  for (size_t i = 0; i < outputs.size(); ++i) {
    OutputSlot& o = outputs[i];
    o.info = d.output(i);
    o.name = io_name(o.info, i, false);
    std::string stem = file_stem(o.name);
    while (!stems.insert(stem).second) stem += "_" + std::to_string(i);  // two names, one file
    o.path = out_dir == "." ? stem + ".npy" : (fs::path(out_dir) / (stem + ".npy")).string();
    o.data.assign(o.info.host_bytes(), 0);
  }
  return outputs;
}

// Every file this run reads and writes, checked before the first run (CliError).
void check_run_files(const RunOptions& opt, const std::optional<CheckGraph>& check,
                     bool create_out_dir, const std::vector<OutputSlot>& outputs) {
  FilePlan files;
  files.add_input("the model", opt.model_path);
  for (const InputArg& in : opt.inputs) files.add_input("the input '" + in.name + "'", in.path);
  if (check) {
    files.add_input("the --check graph", check->path);
    if (opt.weights) files.add_input("the --check weights file", *opt.weights);
  }
  if (create_out_dir) files.add_new_directory(opt.out_dir);
  for (const OutputSlot& o : outputs) {
    files.add_output("output '" + o.name + "'", "output '" + o.name + "' (" + o.path + ")",
                     o.path);
  }
  if (opt.trace_path) files.add_output("trace", "--trace " + *opt.trace_path, *opt.trace_path);
  files.check(opt.force);
}

void print_run_header(const std::string& model_path, size_t blob_bytes, const Delegate& d,
                      const std::vector<const InputArg*>& matched) {
  std::printf("model: %s (%s), %zu input(s), %zu output(s)\n", model_path.c_str(),
              human_bytes(blob_bytes).c_str(), d.input_count(), d.output_count());
  std::printf("device: %s\n", d.device_name().c_str());
  std::fputs(memory_report_text(d.memory()).c_str(), stdout);
  for (size_t i = 0; i < matched.size(); ++i) {
    std::printf("input  %s: %s <- %s\n", io_name(d.input(i), i, true).c_str(),
                tensor_summary(d.input(i)).c_str(), matched[i]->path.c_str());
  }
}

// What execute() reads: the input files' data, float16 files widened to float32 first.
struct InputViews {
  std::vector<std::vector<uint8_t>> widened;  // per input; empty unless the file is float16
  std::vector<ConstTensorView> views;
};

InputViews input_views(const std::vector<const InputArg*>& matched) {
  InputViews in;
  in.widened.resize(matched.size());
  for (size_t i = 0; i < matched.size(); ++i) {
    const NpyArray& arr = matched[i]->array;
    if (arr.dtype == NpyDType::Float16) in.widened[i] = float16_bytes_to_float32(arr.data);
    const std::vector<uint8_t>& data = arr.dtype == NpyDType::Float16 ? in.widened[i] : arr.data;
    in.views.push_back({data.data(), data.size(), to_host_dtype(arr.dtype), arr.shape});
  }
  return in;
}

std::vector<TensorView> output_views(std::vector<OutputSlot>& outputs) {
  std::vector<TensorView> views;
  for (OutputSlot& o : outputs) {
    views.push_back({o.data.data(), o.data.size(), o.info.host_dtype, o.info.sizes});
  }
  return views;
}

// One execute(): its host wall time and the GPU profile the delegate recorded for it.
struct TimedRun {
  double wall_us = 0.0;
  std::vector<NodeProfile> profile;
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
    throw CliError(exit_code_for(s), std::string("execute failed (") + status_name(s) +
                                         "): " + d.last_error());
  }
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

void print_first_run(const TimedRun& run) {
  std::printf("run: %.3f ms host wall (execute), GPU %s over %zu dispatch nodes\n",
              run.wall_us / 1000.0,
              run.profile.empty() ? "time n/a"
                                  : (fixed(total_gpu_us(run.profile), 2) + " \xC2\xB5s").c_str(),
              run.profile.size());
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

// --bench: warm-up runs, then `bench` timed ones (summarized); returns the last timed run.
TimedRun run_benchmark(Delegate& d, const RunViews& views, int bench,
                       const std::vector<OutputSlot>& outputs) {
  std::vector<std::vector<uint8_t>> first;
  for (const OutputSlot& o : outputs) first.push_back(o.data);
  for (int i = 0; i < kWarmupRuns; ++i) execute_timed(d, views);
  TimedRun last;
  std::vector<double> wall_ms, gpu_us;
  for (int i = 0; i < bench; ++i) {
    last = {execute_timed(d, views), d.last_profile()};
    wall_ms.push_back(last.wall_us / 1000.0);
    gpu_us.push_back(total_gpu_us(last.profile));
  }
  std::printf("bench: %d warm-up + %d timed runs: host wall median %.3f ms, min %.3f ms",
              kWarmupRuns, bench, median(wall_ms),
              *std::min_element(wall_ms.begin(), wall_ms.end()));
  if (last.profile.empty()) {
    std::printf("; GPU time n/a\n");
  } else {
    std::printf("; GPU total median %.2f \xC2\xB5s, min %.2f \xC2\xB5s\n", median(gpu_us),
                *std::min_element(gpu_us.begin(), gpu_us.end()));
  }
  warn_if_outputs_changed(outputs, first);
  return last;
}

void create_output_dir(const std::string& out_dir) {
  std::error_code ec;
  fs::create_directory(out_dir, ec);
  if (ec) throw CliError(2, "cannot create output directory '" + out_dir + "': " + ec.message());
  std::printf("created output directory %s\n", out_dir.c_str());
}

// Each output as .npy (float16 model tensors as float16 files), with a summary of its values.
void write_outputs(const std::vector<OutputSlot>& outputs, bool force) {
  for (const OutputSlot& o : outputs) {
    NpyArray arr;
    arr.dtype = is_float16(o.info) ? NpyDType::Float16 : to_npy_dtype(o.info.host_dtype);
    arr.shape = o.info.sizes;
    arr.data = is_float16(o.info) ? float32_bytes_to_float16(o.data) : o.data;
    write_file(o.path, encode_npy(arr), force);
    std::printf("output %s: %s -> %s\n", o.name.c_str(), tensor_summary(o.info).c_str(),
                o.path.c_str());
    std::printf("  %s\n", value_summary(o.data, o.info.host_dtype, o.info.numel()).c_str());
  }
}

void write_trace(const RunOptions& opt, const Delegate& d, const TimedRun& last) {
  std::vector<TraceNode> nodes;
  for (const NodeProfile& n : last.profile) nodes.push_back({n.op, n.kernel, n.tensors, n.gpu_us});
  const std::string json = trace_json(
      make_run_trace("vkd run " + opt.model_path, d.device_name(), last.wall_us, nodes));
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
  // Everything that can be checked without the device, in the order the user would fix it.
  const std::vector<uint8_t> blob = read_model_file(opt.model_path);
  read_input_files(opt.inputs);
  std::optional<CheckGraph> check;
  if (opt.check_graph) check = read_check_graph(*opt.check_graph, opt.weights.value_or(""));
  const bool create_out_dir = output_dir_to_create(opt.out_dir);

  const DelegateOptions options = delegate_options(opt.device);
  std::unique_ptr<Delegate> delegate = create_delegate(blob, options, opt.model_path);
  const std::vector<const InputArg*> matched = match_and_check_inputs(*delegate, opt.inputs, check);
  std::vector<OutputSlot> outputs = output_slots(*delegate, opt.out_dir);
  check_run_files(opt, check, create_out_dir, outputs);
  print_run_header(opt.model_path, blob.size(), *delegate, matched);

  const InputViews inputs = input_views(matched);
  const std::vector<TensorView> out_views = output_views(outputs);
  const RunViews views{inputs.views, out_views};
  TimedRun last{execute_timed(*delegate, views), delegate->last_profile()};
  print_first_run(last);
  if (opt.bench > 0) last = run_benchmark(*delegate, views, opt.bench, outputs);

  if (create_out_dir) create_output_dir(opt.out_dir);
  write_outputs(outputs, opt.force);
  if (opt.profile) print_profile(last.profile);
  if (opt.trace_path) write_trace(opt, *delegate, last);
  const int check_result =
      check ? check_outputs(blob, opt.model_path, options, *delegate, views, outputs, *check) : 0;
  return validation_result(options, *delegate, check_result);
}

}  // namespace vkd::cli
