// vkd compile GRAPH.json [--weights W.safetensors] -o MODEL.vkd [--report] [--force]
//   [--max-texture-extent N]: runs the ahead-of-time compiler (partitioner_schema/Compiler.h)
// and writes the blob atomically; an existing output is replaced only with --force.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "partitioner_schema/Compiler.h"
#include "runtime/common/Error.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"

namespace vkd::cli {

int cmd_compile(const std::vector<std::string>& args) {
  const ParsedArgs a = parse_args(args, {{"--weights", true},
                                         {"-o", true},
                                         {"--output", true},
                                         {"--report", false},
                                         {"--force", false},
                                         {"--max-texture-extent", true}});
  if (a.positional.size() != 1) {
    throw UsageError(a.positional.empty() ? "missing GRAPH.json" : "one graph expected");
  }
  const auto out = a.last("-o") ? a.last("-o") : a.last("--output");
  if (!out) throw UsageError("missing -o MODEL.vkd");
  namespace fs = std::filesystem;
  const fs::path out_path(*out);
  if (fs::exists(out_path) && !a.has("--force")) {
    throw CliError(2, "'" + *out + "' exists; pass --force to replace it");
  }
  compiler::CompileOptions options;
  if (const auto v = a.last("--max-texture-extent")) {
    options.layout.max_texture_extent = parse_int_option("--max-texture-extent", *v, 1, 1 << 20);
  }

  compiler::CompileResult result;
  try {
    result = compiler::compile_file(a.positional[0], a.last("--weights").value_or(""), options);
  } catch (const Error& e) {
    // A graph the compiler rejects is bad input (exit 2); anything else is a failure.
    const bool input_problem =
        e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::Unsupported;
    throw CliError(input_problem ? 2 : 1, e.what());
  }

  if (a.has("--report")) std::fputs(compiler::format_report(result).c_str(), stdout);
  try {
    result.throw_if_unsupported();
  } catch (const Error& e) {
    throw CliError(2, e.what());
  }

  // Write next to the target and rename, so a failure never leaves a half-written model.
  const fs::path tmp = out_path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw CliError(2, "cannot write '" + tmp.string() + "'");
    f.write(reinterpret_cast<const char*>(result.blob.data()),
            static_cast<std::streamsize>(result.blob.size()));
    if (!f.good()) throw CliError(1, "writing '" + tmp.string() + "' failed");
  }
  std::error_code ec;
  fs::rename(tmp, out_path, ec);
  if (ec) throw CliError(1, "cannot move '" + tmp.string() + "' to '" + *out + "': " + ec.message());

  std::printf("wrote %s (%zu bytes, %zu nodes)\n", out->c_str(), result.blob.size(),
              result.graph.nodes.size());
  return 0;
}

}  // namespace vkd::cli
