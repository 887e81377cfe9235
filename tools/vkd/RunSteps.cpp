#include "tools/vkd/RunSteps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <set>

#include "core/TensorSpec.h"
#include "model/PartitionPlan.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/Files.h"

namespace vkd::cli {

namespace fs = std::filesystem;

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (size_t i = 0; i < lines.size(); ++i) s += (i ? "\n" : "") + lines[i];
  return s;
}

namespace {

HostDType to_host_dtype(NpyDType d) {
  switch (d) {
    case NpyDType::Float32:
    case NpyDType::Float16: return HostDType::Float32;  // widened before execute()
    case NpyDType::Int8: return HostDType::Int8;
    case NpyDType::Int32:
    case NpyDType::Int64: return HostDType::Int32;  // token ids, narrowed before execute()
  }
  return HostDType::Float32;
}

}  // namespace

// ('<f2'; a float32 file is accepted too and rounded by the runtime.)
bool is_float16(const TensorInfo& info) { return info.device_dtype == "float16"; }

namespace {

constexpr size_t kFirstValues = 8;  // values the output summary shows

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

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

void print_bench_summary(const std::string& runs, const std::vector<double>& wall_ms,
                         const std::vector<double>& gpu_us) {
  std::printf("bench: %d warm-up + %zu timed runs%s: host wall median %.3f ms, min %.3f ms",
              kWarmupRuns, wall_ms.size(), runs.c_str(), median(wall_ms),
              *std::min_element(wall_ms.begin(), wall_ms.end()));
  if (gpu_us.empty()) {
    std::printf("; GPU time n/a\n");
  } else {
    std::printf("; then %zu profiled: GPU total median %.2f \xC2\xB5s, min %.2f \xC2\xB5s\n",
                gpu_us.size(), median(gpu_us), *std::min_element(gpu_us.begin(), gpu_us.end()));
  }
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

std::string pad(const std::string& s, size_t width, bool right) {
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
    throw CliError(2, "output directory '" + dir +
                          "' does not exist and cannot be created: "
                          "directory '" +
                          parent + "' " + *problem);
  }
  return true;
}

namespace {

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

ModelInputs model_inputs(const std::vector<TensorInfo>& infos) {
  ModelInputs m;
  m.infos = infos;
  for (size_t i = 0; i < infos.size(); ++i) {
    m.names.push_back(io_name(m.infos[i], i, true));
    const std::string alias = "input" + std::to_string(i);
    m.labels.push_back("'" + m.names[i] + "'" + (m.names[i] == alias ? "" : " (" + alias + ")"));
    m.list += (i ? ", " : "") + m.labels[i] + " " + host_dtype_name(m.infos[i].host_dtype) + " " +
              sizes_string(m.infos[i].sizes);
  }
  if (infos.empty()) m.list = "none";
  return m;
}

// Each --input given to the model input it names (nullptr where none is); unknown names and
// inputs given twice go into `errors`.
std::vector<const InputArg*> assign_inputs(const ModelInputs& m, const std::vector<InputArg>& given,
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
    const bool int32 = info.host_dtype == HostDType::Int32;
    errors.push_back(prefix + ": wrong dtype: the model expects " +
                     (is_float16(info) ? "float16 (or float32)"
                      : int32          ? "int32 (or int64 ids)"
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

// The options a partitioned model does not take yet, and --weights without a use.
void check_model_kind_options(const RunOptions& o) {
  if (!o.partitioned) {
    if (o.weights && !o.check_graph) {
      throw UsageError("--weights is only used with --check (or with a partitioned model)");
    }
    return;
  }
  if (o.check_graph) throw UsageError("--check takes a .vkd model; not a partitioned model yet");
  if (o.trace_path) throw UsageError("--trace takes a .vkd model; not a partitioned model yet");
  if (o.intermediates) {
    throw UsageError("--intermediates takes a .vkd model; not a partitioned model yet");
  }
}

}  // namespace

// Positions ("input<i>") are always accepted: the delegate names unnamed blob inputs after
// their values.
std::vector<const InputArg*> match_inputs(const std::vector<TensorInfo>& model_inputs_info,
                                          const std::vector<InputArg>& given,
                                          std::vector<std::string>& errors) {
  const ModelInputs m = model_inputs(model_inputs_info);
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

RunOptions parse_run_options(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {{"--input", true},
                                         {"--output-dir", true},
                                         {"--bench", true},
                                         {"--profile", false},
                                         {"--intermediates", false},
                                         {"--trace", true},
                                         {"--device", true},
                                         {"--check", true},
                                         {"--weights", true},
                                         {"--force", false}});
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty()
                         ? "missing MODEL.vkd"
                         : "one model expected, got '" + a.positional[0] + "', '" +
                               a.positional[1] + "'" + (a.positional.size() > 2 ? ", ..." : ""));
  }
  RunOptions o;
  o.model_path = a.positional[0];
  o.force = a.has("--force");
  o.profile = a.has("--profile");
  o.intermediates = a.has("--intermediates");
  if (a.has("--bench")) {
    o.bench = static_cast<int>(parse_int_option("--bench", *a.last("--bench"), 1, 1000000));
  }
  o.out_dir = a.last("--output-dir").value_or(".");
  o.trace_path = a.last("--trace");
  if (o.out_dir.empty()) throw UsageError("--output-dir needs a directory");
  if (o.trace_path && o.trace_path->empty()) throw UsageError("--trace needs a file name");
  o.check_graph = a.last("--check");
  o.weights = a.last("--weights");
  if (o.weights && o.weights->empty()) throw UsageError("--weights needs a file name");
  o.partitioned = model::is_partition_plan_path(o.model_path);
  check_model_kind_options(o);
  o.device = a.last("--device");
  o.inputs = parse_input_specs(a.all("--input"));
  return o;
}

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

std::vector<OutputSlot> output_slots(const std::vector<TensorInfo>& infos,
                                     const std::string& out_dir) {
  std::vector<OutputSlot> outputs(infos.size());
  std::set<std::string> stems;
  for (size_t i = 0; i < outputs.size(); ++i) {
    OutputSlot& o = outputs[i];
    o.info = infos[i];
    o.name = io_name(o.info, i, false);
    std::string stem = file_stem(o.name);
    while (!stems.insert(stem).second) stem += "_" + std::to_string(i);  // two names, one file
    o.path = out_dir == "." ? stem + ".npy" : (fs::path(out_dir) / (stem + ".npy")).string();
    o.data.assign(o.info.host_bytes(), 0);
  }
  return outputs;
}

void check_run_files(const RunOptions& opt,
                     const std::vector<std::pair<std::string, std::string>>& more_inputs,
                     bool create_out_dir, const std::vector<OutputSlot>& outputs) {
  FilePlan files;
  files.add_input("the model", opt.model_path);
  for (const InputArg& in : opt.inputs) files.add_input("the input '" + in.name + "'", in.path);
  for (const auto& [role, path] : more_inputs) files.add_input(role, path);
  if (create_out_dir) files.add_new_directory(opt.out_dir);
  for (const OutputSlot& o : outputs) {
    files.add_output("output '" + o.name + "'", "output '" + o.name + "' (" + o.path + ")", o.path);
  }
  if (opt.trace_path) files.add_output("trace", "--trace " + *opt.trace_path, *opt.trace_path);
  files.check(opt.force);
}

namespace {

// An int64 file's values as int32 (token ids: the model holds them as int32); a value outside
// int32 is an error naming the input, the element and the value (the ids' own range, [0, V),
// the runtime checks).
std::vector<uint8_t> narrowed_ids(const InputArg& in) {
  const size_t n = in.array.numel();
  std::vector<uint8_t> out(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint64_t u = 0;  // little-endian, whatever the host
    for (int b = 0; b < 8; ++b) u |= uint64_t{in.array.data[8 * i + b]} << (8 * b);
    const auto v = static_cast<int64_t>(u);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      throw CliError(2, "input '" + in.name + "' from " + in.path + ": element " +
                            std::to_string(i) + " is " + std::to_string(v) +
                            ", outside int32 (the model holds these ids as int32)");
    }
    const auto w = static_cast<uint32_t>(static_cast<int32_t>(v));
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<uint8_t>(w >> (8 * b));
  }
  return out;
}

}  // namespace

InputViews input_views(const std::vector<const InputArg*>& matched) {
  InputViews in;
  in.widened.resize(matched.size());
  for (size_t i = 0; i < matched.size(); ++i) {
    const NpyArray& arr = matched[i]->array;
    if (arr.dtype == NpyDType::Float16) in.widened[i] = float16_bytes_to_float32(arr.data);
    if (arr.dtype == NpyDType::Int64) in.widened[i] = narrowed_ids(*matched[i]);
    const bool widened = arr.dtype == NpyDType::Float16 || arr.dtype == NpyDType::Int64;
    const std::vector<uint8_t>& data = widened ? in.widened[i] : arr.data;
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

void create_output_dir(const std::string& out_dir) {
  std::error_code ec;
  fs::create_directory(out_dir, ec);
  if (ec) throw CliError(2, "cannot create output directory '" + out_dir + "': " + ec.message());
  std::printf("created output directory %s\n", out_dir.c_str());
}

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

}  // namespace vkd::cli
