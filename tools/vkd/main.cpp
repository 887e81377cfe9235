// vkd: the vkdelegate command-line tool. Each command lives in its own file (Common.h lists
// them); every error is caught here and printed. Exit codes: 0 success, 1 runtime failure
// (device, driver, validation messages), 2 bad usage or bad input (model, .npy files, paths).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "runtime/common/Error.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"

namespace {

constexpr const char* kUsage =
    "usage: vkd <command> [options]\n"
    "commands:\n"
    "  compile GRAPH.json [--weights W.safetensors] -o MODEL.vkd [--report] [--force]\n"
    "      [--max-texture-extent N] [--partition]\n"
    "      compile a graph IR (partitioner_schema/README.md) into a delegate blob; --report\n"
    "      prints each pass's decisions and every tensor's final layout\n"
    "      --partition      leave unsupported nodes to the host: MODEL.p<i>.vkd per partition\n"
    "                       plus MODEL.partition.json (steps, host nodes, boundary tensors)\n"
    "  devices [--device SEL]\n"
    "      list Vulkan devices and the profile vkdelegate reads\n"
    "  inspect MODEL.vkd [--device SEL] [--dot FILE.dot [--force]]\n"
    "      load the model and print its inputs, outputs, graph (values, ops, dispatch nodes,\n"
    "      kernels) and memory report\n"
    "      --dot FILE       first write a Graphviz picture of the blob's graph (tensors colored\n"
    "                       by layout, inserted conversions in red); needs no device\n"
    "  run MODEL.vkd --input NAME=FILE.npy ... [--output-dir DIR] [--force] [--bench N]\n"
    "      [--profile] [--trace FILE.json] [--device SEL] [--check GRAPH.json [--weights W]]\n"
    "      run the model once on .npy inputs (float32 '<f4', int8 '|i1', int32 '<i4'; C order)\n"
    "      matched by input name or position (input0, input1, ...); write each output as\n"
    "      DIR/NAME.npy (default DIR: .; existing files only with --force)\n"
    "      --bench N        then 3 warm-up and N timed runs: median/min host and GPU time\n"
    "      --profile        per-node GPU time table of the last run\n"
    "      --trace FILE     Chrome/Perfetto trace (JSON) of the last run\n"
    "      --check GRAPH    also run the CPU reference interpreter on GRAPH.json and compare\n"
    "                       every tensor in op order; report the first that differs (exit 1)\n"
    "environment:\n"
    "  VKD_DEVICE=SEL           device index or name substring (default: discrete > integrated >\n"
    "                           virtual > CPU); --device overrides it\n"
    "  VKD_VALIDATION=1         enable the Khronos validation layer; run/inspect exit 1 on any\n"
    "                           validation message\n"
    "  VKD_DISABLE_INT8_DOT=1   pretend the device has no int8 dot product\n"
    "exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad input\n";

// Prints each line of `message` as "vkd <command>: <line>".
void print_error(const std::string& command, const std::string& message) {
  size_t start = 0;
  do {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    std::fprintf(stderr, "vkd %s: %s\n", command.c_str(), message.substr(start, end - start).c_str());
    start = end + 1;
  } while (start < message.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "devices") return vkd::cli::cmd_devices(args);
    if (command == "run") return vkd::cli::cmd_run(args);
    if (command == "inspect") return vkd::cli::cmd_inspect(args);
    if (command == "compile") return vkd::cli::cmd_compile(args);
    std::fprintf(stderr, "vkd: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const vkd::cli::UsageError& e) {
    print_error(command, e.what());
    std::fputs(kUsage, stderr);
    return e.exit_code();
  } catch (const vkd::cli::CliError& e) {
    print_error(command, e.what());
    return e.exit_code();
  } catch (const vkd::Error& e) {
    print_error(command, std::string("error (") + vkd::to_string(e.code()) + "): " + e.what());
    return e.code() == vkd::ErrorCode::InvalidArgument ? 2 : 1;
  } catch (const std::exception& e) {
    print_error(command, std::string("error: ") + e.what());
    return 1;
  }
}
