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

// Matches the --input arguments to the model's inputs, by name or by position ("input<i>": the
// delegate names unnamed blob inputs after their values, so positions are always accepted; a
// real input name wins over a position). Every problem goes into `errors`.
std::vector<const InputArg*> match_inputs(const Delegate& d, const std::vector<InputArg>& given,
                                          std::vector<std::string>& errors) {
  const size_t count = d.input_count();
  std::vector<TensorInfo> infos;
  std::vector<std::string> names, labels;
  std::string list;
  for (size_t i = 0; i < count; ++i) {
    infos.push_back(d.input(i));
    names.push_back(io_name(infos[i], i, true));
    const std::string alias = "input" + std::to_string(i);
    labels.push_back("'" + names[i] + "'" + (names[i] == alias ? "" : " (" + alias + ")"));
    list += (i ? ", " : "") + labels[i] + " " + host_dtype_name(infos[i].host_dtype) + " " +
            sizes_string(infos[i].sizes);
  }
  if (count == 0) list = "none";

  auto resolve = [&](const std::string& name) -> size_t {
    for (size_t i = 0; i < count; ++i) {
      if (names[i] == name) return i;
    }
    for (size_t i = 0; i < count; ++i) {
      if (name == "input" + std::to_string(i)) return i;
    }
    return count;
  };

  std::vector<const InputArg*> ordered(count, nullptr);
  for (const InputArg& in : given) {
    const size_t i = resolve(in.name);
    if (i == count) {
      errors.push_back("unknown input '" + in.name + "' from " + in.path +
                       ": the model has no input of that name; its inputs: " + list);
    } else if (ordered[i] != nullptr) {
      errors.push_back("input " + labels[i] + " given more than once: " + ordered[i]->path +
                       ", " + in.path);
    } else {
      ordered[i] = &in;
    }
  }

  for (size_t i = 0; i < count; ++i) {
    const TensorInfo& info = infos[i];
    if (ordered[i] == nullptr) {
      errors.push_back("missing input " + labels[i] + ": " + (is_float16(info) ? std::string("float16")
                                                   : std::string(host_dtype_name(info.host_dtype))) +
                       " " + sizes_string(info.sizes) + "; pass --input " + names[i] +
                       "=FILE.npy");
      continue;
    }
    const InputArg& in = *ordered[i];
    bool ok = true;
    const bool half_file = in.array.dtype == NpyDType::Float16;
    if (to_host_dtype(in.array.dtype) != info.host_dtype || (half_file && !is_float16(info))) {
      errors.push_back("input " + labels[i] + " from " + in.path + ": wrong dtype: the model expects " +
                       (is_float16(info) ? "float16 (or float32)"
                                         : std::string(host_dtype_name(info.host_dtype))) +
                       ", the file has " + npy_dtype_name(in.array.dtype));
      ok = false;
    }
    if (in.array.shape != info.sizes) {
      errors.push_back("input " + labels[i] + " from " + in.path + ": wrong shape: the model expects " +
                       sizes_string(info.sizes) + ", the file has " + sizes_string(in.array.shape));
      ok = false;
    }
    if (!ok) ordered[i] = nullptr;
  }
  return ordered;
}

}  // namespace

int cmd_run(const std::vector<std::string>& args) {
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
  const std::string model_path = a.positional[0];
  const bool force = a.has("--force");
  const bool profile = a.has("--profile");
  const int bench = a.has("--bench")
                        ? static_cast<int>(parse_int_option("--bench", *a.last("--bench"), 1, 1000000))
                        : 0;
  const std::string out_dir = a.last("--output-dir").value_or(".");
  const std::optional<std::string> trace_path = a.last("--trace");
  if (out_dir.empty()) throw UsageError("--output-dir needs a directory");
  if (trace_path && trace_path->empty()) throw UsageError("--trace needs a file name");
  const std::optional<std::string> check_graph = a.last("--check");
  if (a.has("--weights") && !check_graph) throw UsageError("--weights is only used with --check");

  std::vector<InputArg> inputs;
  for (const std::string& spec : a.all("--input")) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      throw UsageError("--input needs NAME=FILE.npy, got '" + spec + "'");
    }
    inputs.push_back({spec.substr(0, eq), spec.substr(eq + 1), {}});
  }

  // Everything that can be checked without the device, in the order the user would fix it.
  const std::vector<uint8_t> blob = read_model_file(model_path);
  std::vector<std::string> errors;
  for (InputArg& in : inputs) {
    try {
      in.array = read_npy(in.path);
    } catch (const NpyError& e) {
      errors.push_back("input '" + in.name + "': " + e.what());
    }
  }
  if (!errors.empty()) throw CliError(2, join_lines(errors));
  std::optional<CheckGraph> check;
  if (check_graph) check = read_check_graph(*check_graph, a.last("--weights").value_or(""));
  const bool create_out_dir = output_dir_to_create(out_dir);

  const DelegateOptions options = delegate_options(a.last("--device"));
  std::unique_ptr<Delegate> delegate = create_delegate(blob, options, model_path);

  const std::vector<const InputArg*> matched = match_inputs(*delegate, inputs, errors);
  if (check) {
    std::vector<std::string> names;
    for (size_t i = 0; i < delegate->input_count(); ++i) {
      names.push_back(io_name(delegate->input(i), i, true));
    }
    check_graph_inputs(*check, names, errors);
  }
  if (!errors.empty()) throw CliError(2, join_lines(errors));

  // Every file this run reads and writes, checked before the first run.
  FilePlan files;
  files.add_input("the model", model_path);
  for (const InputArg& in : inputs) files.add_input("the input '" + in.name + "'", in.path);
  if (check) {
    files.add_input("the --check graph", check->path);
    if (const auto w = a.last("--weights")) files.add_input("the --check weights file", *w);
  }
  if (create_out_dir) files.add_new_directory(out_dir);
  std::vector<OutputSlot> outputs(delegate->output_count());
  std::set<std::string> stems;
  for (size_t i = 0; i < outputs.size(); ++i) {
    OutputSlot& o = outputs[i];
    o.info = delegate->output(i);
    o.name = io_name(o.info, i, false);
    std::string stem = file_stem(o.name);
    while (!stems.insert(stem).second) stem += "_" + std::to_string(i);  // two names, one file
    o.path = out_dir == "." ? stem + ".npy" : (fs::path(out_dir) / (stem + ".npy")).string();
    o.data.assign(o.info.host_bytes(), 0);
    files.add_output("output '" + o.name + "'", "output '" + o.name + "' (" + o.path + ")",
                     o.path);
  }
  if (trace_path) files.add_output("trace", "--trace " + *trace_path, *trace_path);
  files.check(force);

  std::printf("model: %s (%s), %zu input(s), %zu output(s)\n", model_path.c_str(),
              human_bytes(blob.size()).c_str(), delegate->input_count(), delegate->output_count());
  std::printf("device: %s\n", delegate->device_name().c_str());
  std::fputs(memory_report_text(delegate->memory()).c_str(), stdout);
  for (size_t i = 0; i < matched.size(); ++i) {
    std::printf("input  %s: %s <- %s\n", io_name(delegate->input(i), i, true).c_str(),
                tensor_summary(delegate->input(i)).c_str(), matched[i]->path.c_str());
  }

  std::vector<ConstTensorView> in_views;
  std::vector<std::vector<uint8_t>> widened(matched.size());  // float16 files as float32
  for (size_t i = 0; i < matched.size(); ++i) {
    const NpyArray& arr = matched[i]->array;
    if (arr.dtype == NpyDType::Float16) widened[i] = float16_bytes_to_float32(arr.data);
    const std::vector<uint8_t>& data = arr.dtype == NpyDType::Float16 ? widened[i] : arr.data;
    in_views.push_back({data.data(), data.size(), to_host_dtype(arr.dtype), arr.shape});
  }
  std::vector<TensorView> out_views;
  for (OutputSlot& o : outputs) {
    out_views.push_back({o.data.data(), o.data.size(), o.info.host_dtype, o.info.sizes});
  }

  auto run_once = [&]() -> double {
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = delegate->execute(in_views, out_views);
    const auto t1 = std::chrono::steady_clock::now();
    if (s != Status::Ok) {
      throw CliError(exit_code_for(s), std::string("execute failed (") + status_name(s) +
                                           "): " + delegate->last_error());
    }
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
  };

  double last_wall_us = run_once();
  std::vector<NodeProfile> last_profile = delegate->last_profile();
  std::printf("run: %.3f ms host wall (execute), GPU %s over %zu dispatch nodes\n",
              last_wall_us / 1000.0,
              last_profile.empty() ? "time n/a"
                                   : (fixed(total_gpu_us(last_profile), 2) + " \xC2\xB5s").c_str(),
              last_profile.size());

  if (bench > 0) {
    std::vector<std::vector<uint8_t>> first;
    for (const OutputSlot& o : outputs) first.push_back(o.data);
    for (int i = 0; i < kWarmupRuns; ++i) run_once();
    std::vector<double> wall_ms, gpu_us;
    for (int i = 0; i < bench; ++i) {
      last_wall_us = run_once();
      last_profile = delegate->last_profile();
      wall_ms.push_back(last_wall_us / 1000.0);
      gpu_us.push_back(total_gpu_us(last_profile));
    }
    std::printf("bench: %d warm-up + %d timed runs: host wall median %.3f ms, min %.3f ms",
                kWarmupRuns, bench, median(wall_ms), *std::min_element(wall_ms.begin(), wall_ms.end()));
    if (last_profile.empty()) {
      std::printf("; GPU time n/a\n");
    } else {
      std::printf("; GPU total median %.2f \xC2\xB5s, min %.2f \xC2\xB5s\n", median(gpu_us),
                  *std::min_element(gpu_us.begin(), gpu_us.end()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].data != first[i]) {
        std::fprintf(stderr,
                     "vkd run: warning: output '%s' of the last run differs from the first run's "
                     "(non-deterministic result)\n",
                     outputs[i].name.c_str());
      }
    }
  }

  if (create_out_dir) {
    std::error_code ec;
    fs::create_directory(out_dir, ec);
    if (ec) throw CliError(2, "cannot create output directory '" + out_dir + "': " + ec.message());
    std::printf("created output directory %s\n", out_dir.c_str());
  }
  for (OutputSlot& o : outputs) {
    NpyArray arr;
    arr.dtype = is_float16(o.info) ? NpyDType::Float16 : to_npy_dtype(o.info.host_dtype);
    arr.shape = o.info.sizes;
    arr.data = is_float16(o.info) ? float32_bytes_to_float16(o.data) : o.data;
    write_file(o.path, encode_npy(arr), force);
    std::printf("output %s: %s -> %s\n", o.name.c_str(), tensor_summary(o.info).c_str(),
                o.path.c_str());
    std::printf("  %s\n", value_summary(o.data, o.info.host_dtype, o.info.numel()).c_str());
  }

  if (profile) print_profile(last_profile);

  if (trace_path) {
    std::vector<TraceNode> nodes;
    for (const NodeProfile& n : last_profile) nodes.push_back({n.op, n.kernel, n.tensors, n.gpu_us});
    const std::string json = trace_json(
        make_run_trace("vkd run " + model_path, delegate->device_name(), last_wall_us, nodes));
    write_file(*trace_path, std::vector<uint8_t>(json.begin(), json.end()), force);
    std::printf("trace: %s (%zu GPU events; open in ui.perfetto.dev)\n", trace_path->c_str(),
                nodes.size());
  }

  int check_result = 0;
  if (check_graph) {
    std::vector<CheckInput> check_inputs;
    for (size_t i = 0; i < matched.size(); ++i) {
      check_inputs.push_back({io_name(delegate->input(i), i, true), in_views[i]});
    }
    std::vector<CheckOutput> check_outputs;
    for (const OutputSlot& o : outputs) check_outputs.push_back({o.name, o.info.host_dtype, &o.data});
    check_result =
        check_against_graph(blob, model_path, options, check_inputs, check_outputs, *check);
  }

  if (options.validation) {
    const uint64_t messages = delegate->validation_message_count();
    if (messages > 0) {
      std::fprintf(stderr, "vkd run: %llu Vulkan validation message(s) (VKD_VALIDATION=1)\n",
                   static_cast<unsigned long long>(messages));
      return 1;
    }
    std::printf("validation: no messages\n");
  }
  return check_result;
}

}  // namespace vkd::cli
