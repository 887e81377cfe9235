// vkd compile GRAPH.json [--weights W.safetensors] -o MODEL.vkd [--report] [--force]
//   [--max-texture-extent N] [--target CLASS] [--partition] [--no-fuse-epilogue]: runs the
// ahead-of-time compiler (compiler/Compiler.h) and writes the blob atomically; an existing
// output is replaced only with --force. --target keeps the class's texture extent and loads
// the blob as the class before writing it (check_on_target). With --partition, unsupported nodes
// are left to the host: it writes MODEL.p0.vkd, MODEL.p1.vkd, ... (one per partition) and
// MODEL.partition.json (the host's plan), every target checked before any is written.
#include <cstdio>
#include <filesystem>

#include "compiler/Compiler.h"
#include "core/DeviceClass.h"
#include "core/Error.h"
#include "runtime/vk/Context.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/Files.h"

namespace vkd::cli {

namespace {

namespace fs = std::filesystem;

// The files the compile reads, and `outputs` ("-o m.vkd" style label, path) it writes: all
// checked before anything is written (Files.h).
void check_files(const std::string& graph, const std::string& weights,
                 const std::vector<std::pair<std::string, std::string>>& outputs, bool force) {
  FilePlan plan;
  plan.add_input("the graph", graph);
  if (!weights.empty()) plan.add_input("the weights file", weights);
  for (const auto& [label, path] : outputs) plan.add_output("output", label, path);
  plan.check(force);
}

// Compiler errors on the graph are bad input (exit 2), named after the graph file; anything
// else is a failure.
template <typename F>
auto run_compiler(const std::string& graph, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    const bool input_problem =
        e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::Unsupported;
    throw CliError(input_problem ? 2 : 1, graph + ": " + e.what());
  }
}

void print_pass_report(const compiler::PassReport& r) {
  std::printf("[%s]\n", r.pass.c_str());
  for (const auto& line : r.lines) std::printf("  %s\n", line.c_str());
}

bool vulkan_device_present() {
  try {
    return !vk::Instance(false).devices().empty();
  } catch (const Error&) {
    return false;
  }
}

// --target: each blob loaded as the class on this machine's Vulkan device (its limits and
// features lowered to the class's: the runtime's own decisions, nothing predicted twice), so
// a blob the class cannot run is never written and the report lists the ways down its
// kernels take there. Without a Vulkan device this is said, and only the texture extent holds.
void check_on_target(const std::vector<std::pair<std::string, const std::vector<uint8_t>*>>& blobs,
                     const DeviceClass& target, const std::string& graph, bool report) {
  if (!vulkan_device_present()) {
    std::printf(
        "target %s: not loaded (no Vulkan device here): its texture extent is kept, its "
        "kernels' limits are checked when the blob is loaded\n",
        target.name.c_str());
    return;
  }
  DelegateOptions options = delegate_options(std::nullopt);
  options.device_class = target.name;
  for (const auto& [name, blob] : blobs) {
    std::unique_ptr<Delegate> d;
    std::string error;
    const Status s = Delegate::create(blob->data(), blob->size(), options, &d, &error);
    if (s != Status::Ok || !d) {
      throw CliError(s == Status::Unsupported || s == Status::InvalidArgument ? 2 : 1,
                     graph + ": " + name + " cannot run on device class " + target.name + " (" +
                         status_name(s) + ", loaded as the class here): " + error +
                         "; nothing written");
    }
    const std::vector<std::string> ways = d->ways_down();
    std::printf("target %s: %s loads as the class on %s; %zu way(s) down\n", target.name.c_str(),
                name.c_str(), d->device_name().c_str(), ways.size());
    if (report) {
      for (const std::string& line : ways) std::printf("  way down: %s\n", line.c_str());
    }
  }
}

int compile_partitioned(const std::string& graph, const std::string& weights,
                        const compiler::CompileOptions& options, const fs::path& out, bool force,
                        bool report, const DeviceClass* target) {
  // model.vkd -> model.p0.vkd ... and model.partition.json
  const std::string stem =
      out.extension() == ".vkd" ? (out.parent_path() / out.stem()).string() : out.string();
  compiler::Graph parsed = read_graph(graph, weights);
  const compiler::PartitionedResult result = run_compiler(
      graph, [&] { return compiler::compile_partitioned(std::move(parsed), options); });
  std::vector<std::string> blob_paths, blob_names;
  std::vector<std::pair<std::string, std::string>> targets;
  for (size_t i = 0; i < result.parts.size(); ++i) {
    blob_paths.push_back(stem + ".p" + std::to_string(i) + ".vkd");
    blob_names.push_back(fs::path(blob_paths.back()).filename().string());
    targets.emplace_back("output " + blob_paths.back(), blob_paths.back());
  }
  const std::string plan_path = stem + ".partition.json";
  targets.emplace_back("output " + plan_path, plan_path);
  check_files(graph, weights, targets, force);

  if (report) {
    for (const auto& r : result.before_fusion) print_pass_report(r);
    print_pass_report(result.fusion);
    for (size_t i = 0; i < result.parts.size(); ++i) {
      std::printf("=== partition %zu (%s)\n%s", i, blob_names[i].c_str(),
                  compiler::format_report(result.parts[i]).c_str());
    }
  }
  const std::string plan =
      run_compiler(graph, [&] { return partition_plan_json(result, blob_names); });
  if (target) {
    std::vector<std::pair<std::string, const std::vector<uint8_t>*>> blobs;
    for (size_t i = 0; i < result.parts.size(); ++i) {
      blobs.emplace_back("partition " + blob_names[i], &result.parts[i].blob);
    }
    check_on_target(blobs, *target, graph, report);
  }
  for (size_t i = 0; i < result.parts.size(); ++i) {
    const auto& blob = result.parts[i].blob;
    write_file(blob_paths[i], blob.data(), blob.size(), force);
    std::printf("wrote %s (%zu bytes, %zu nodes)\n", blob_paths[i].c_str(), blob.size(),
                result.parts[i].graph.nodes.size());
  }
  write_file(plan_path, plan.data(), plan.size(), force);
  const size_t host_steps = result.plan.steps.size() - result.parts.size();
  std::printf("wrote %s (%zu partition(s), %zu host node(s))\n", plan_path.c_str(),
              result.parts.size(), host_steps);
  return 0;
}

}  // namespace

int cmd_compile(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {{"--weights", true},
                                         {"-o", true},
                                         {"--output", true},
                                         {"--report", false},
                                         {"--force", false},
                                         {"--partition", false},
                                         {"--max-texture-extent", true},
                                         {"--target", true},
                                         {"--no-fuse-epilogue", false}});
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty() ? "missing GRAPH.json" : "one graph expected");
  }
  const std::string option = a.last("-o") ? "-o" : "--output";
  const auto out = a.last(option);
  if (!out) throw UsageError("missing -o MODEL.vkd");
  if (out->empty()) throw UsageError(option + " needs a file name");
  const fs::path out_path(*out);
  const bool force = a.has("--force");
  compiler::CompileOptions options;
  options.fuse_epilogues = !a.has("--no-fuse-epilogue");
  // A device class's texture extent (its maxImageDimension3D): a blob for phones keeps every
  // texture within it (a tensor wider goes to a buffer); the runtime checks it again at load.
  const DeviceClass* target = nullptr;
  if (const auto v = a.last("--target")) {
    target = find_device_class(*v);
    if (!target) {
      throw UsageError("--target: unknown device class '" + *v +
                       "'; the classes are: " + device_class_names());
    }
    options.layout.max_texture_extent = target->limits.max_image_dimension_3d;
  }
  if (const auto v = a.last("--max-texture-extent")) {
    options.layout.max_texture_extent = parse_int_option("--max-texture-extent", *v, 1, 1 << 20);
  }
  const std::string graph = a.positional[0];
  const std::string weights = a.last("--weights").value_or("");
  if (a.has("--weights") && weights.empty()) throw UsageError("--weights needs a file name");
  if (a.has("--partition")) {
    return compile_partitioned(graph, weights, options, out_path, force, a.has("--report"), target);
  }

  check_files(graph, weights, {{option + " " + *out, *out}}, force);
  compiler::Graph parsed = read_graph(graph, weights);
  const compiler::CompileResult result =
      run_compiler(graph, [&] { return compiler::compile_graph(std::move(parsed), options); });
  if (a.has("--report")) std::fputs(compiler::format_report(result).c_str(), stdout);
  run_compiler(graph, [&] {
    result.throw_if_unsupported();
    return 0;
  });
  if (target) check_on_target({{"the blob", &result.blob}}, *target, graph, a.has("--report"));

  write_file(out_path.string(), result.blob, force);
  std::printf("wrote %s (%zu bytes, %zu nodes)\n", out->c_str(), result.blob.size(),
              result.graph.nodes.size());
  return 0;
}

}  // namespace vkd::cli
