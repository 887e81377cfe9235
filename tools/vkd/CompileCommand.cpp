// vkd compile GRAPH.json [--weights W.safetensors] -o MODEL.vkd [--report] [--force]
//   [--max-texture-extent N] [--partition]: runs the ahead-of-time compiler
// (partitioner_schema/Compiler.h) and writes the blob atomically; an existing output is
// replaced only with --force. With --partition, unsupported nodes are left to the host: it
// writes MODEL.p0.vkd, MODEL.p1.vkd, ... (one per partition) and MODEL.partition.json (the
// host's plan), every target checked before any is written.
#include <cstdio>
#include <filesystem>

#include "partitioner_schema/Compiler.h"
#include "partitioner_schema/Parse.h"
#include "runtime/common/Error.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/Files.h"

namespace vkd::cli {

namespace {

namespace fs = std::filesystem;

// Every target checked before anything is written (CliError(2) listing the problems).
void check_targets(const std::vector<std::string>& paths, bool force) {
  std::vector<std::string> errors;
  for (const auto& p : paths) check_target_file(p, force, "output", errors);
  if (errors.empty()) return;
  std::string message;
  for (const auto& e : errors) message += (message.empty() ? "" : "\n") + e;
  throw CliError(2, message);
}

// Compiler errors on the graph are bad input (exit 2); anything else is a failure.
template <typename F>
auto run_compiler(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    const bool input_problem =
        e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::Unsupported;
    throw CliError(input_problem ? 2 : 1, e.what());
  }
}

int compile_partitioned(const std::string& graph, const std::string& weights,
                        const compiler::CompileOptions& options, const fs::path& out, bool force,
                        bool report) {
  // model.vkd -> model.p0.vkd ... and model.partition.json
  const std::string stem =
      out.extension() == ".vkd" ? (out.parent_path() / out.stem()).string() : out.string();
  const compiler::PartitionedResult result = run_compiler([&] {
    return compiler::compile_partitioned(compiler::parse_graph_file(graph, weights), options);
  });
  std::vector<std::string> blob_paths, blob_names;
  for (size_t i = 0; i < result.parts.size(); ++i) {
    blob_paths.push_back(stem + ".p" + std::to_string(i) + ".vkd");
    blob_names.push_back(fs::path(blob_paths.back()).filename().string());
  }
  const std::string plan_path = stem + ".partition.json";
  std::vector<std::string> targets = blob_paths;
  targets.push_back(plan_path);
  check_targets(targets, force);

  if (report) {
    std::printf("[%s]\n", result.fusion.pass.c_str());
    for (const auto& line : result.fusion.lines) std::printf("  %s\n", line.c_str());
    for (size_t i = 0; i < result.parts.size(); ++i) {
      std::printf("=== partition %zu (%s)\n%s", i, blob_names[i].c_str(),
                  compiler::format_report(result.parts[i]).c_str());
    }
  }
  const std::string plan = run_compiler([&] { return partition_plan_json(result, blob_names); });
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
                                         {"--max-texture-extent", true}});
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty() ? "missing GRAPH.json" : "one graph expected");
  }
  const auto out = a.last("-o") ? a.last("-o") : a.last("--output");
  if (!out) throw UsageError("missing -o MODEL.vkd");
  const fs::path out_path(*out);
  const bool force = a.has("--force");
  compiler::CompileOptions options;
  if (const auto v = a.last("--max-texture-extent")) {
    options.layout.max_texture_extent = parse_int_option("--max-texture-extent", *v, 1, 1 << 20);
  }
  const std::string weights = a.last("--weights").value_or("");
  if (a.has("--partition")) {
    return compile_partitioned(a.positional[0], weights, options, out_path, force,
                               a.has("--report"));
  }

  check_targets({out_path.string()}, force);
  const compiler::CompileResult result =
      run_compiler([&] { return compiler::compile_file(a.positional[0], weights, options); });
  if (a.has("--report")) std::fputs(compiler::format_report(result).c_str(), stdout);
  run_compiler([&] { result.throw_if_unsupported(); return 0; });

  write_file(out_path.string(), result.blob, force);
  std::printf("wrote %s (%zu bytes, %zu nodes)\n", out->c_str(), result.blob.size(),
              result.graph.nodes.size());
  return 0;
}

}  // namespace vkd::cli
