// vkd: the vkdelegate command-line tool. Each command lives in its own file (Common.h lists
// them); here: the help texts, dispatch, and every error caught and printed. Exit codes: 0
// success, 1 failure (a --check mismatch, validation messages, device/driver/runtime errors, a
// failed write), 2 usage, path or input errors (options, files, model/graph/.npy contents).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "core/Error.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"

#ifndef VKD_VERSION
#error "VKD_VERSION (the project version) must be defined by tools/vkd/CMakeLists.txt"
#endif

namespace {

struct Command {
  const char* name;
  const char* summary;  // one line in `vkd help`
  const char* usage;    // `vkd <command> --help`
  int (*run)(const std::vector<std::string>&);
};

constexpr const char* kCompileUsage =
    "usage: vkd compile GRAPH.json [--weights W.safetensors] -o MODEL.vkd [--report] [--force]\n"
    "                   [--max-texture-extent N] [--target CLASS] [--partition]\n"
    "                   [--no-fuse-epilogue]\n"
    "compile a graph IR file (its format: compiler/README.md) into a delegate blob\n"
    "  --weights FILE          the safetensors file the graph's constants name\n"
    "  -o, --output FILE       the blob to write\n"
    "  --report                print each pass's decisions and every tensor's final layout\n"
    "  --force                 replace an existing output (never the graph or the weights)\n"
    "  --max-texture-extent N  largest texture extent the layouts may assume (default 16384)\n"
    "  --target CLASS          for a device class (android-baseline-2022, mali-g7x,\n"
    "                          adreno-6xx, apple-m1): its texture extent (512 or 2048), and\n"
    "                          the blob loaded as the class on this machine's Vulkan device\n"
    "                          before it is written: refused if the class cannot run it;\n"
    "                          with --report, the ways down its kernels take there\n"
    "  --partition             leave unsupported nodes to the host: MODEL.p<i>.vkd per\n"
    "                          partition plus MODEL.partition.json (steps, host nodes, boundary\n"
    "                          tensors)\n"
    "  --no-fuse-epilogue      keep a pixel shuffle, residual add or the last dequantize after\n"
    "                          a convolution, the first quantize before one, the 1x1\n"
    "                          convolutions around a depthwise one and a pixel-shuffled 1x1\n"
    "                          with the 1x1 head after it their own ops instead of one\n"
    "                          convolution's store / load (q8ta_conv2d_ps, _add, _q_dq, _fq,\n"
    "                          _dw_pw[_add], _pw_dw_pw[_add], _ps_pw_q_dq; same bytes)\n";

constexpr const char* kDevicesUsage =
    "usage: vkd devices [--device SEL] [--quirks]\n"
    "list the Vulkan devices and the profile vkdelegate reads of the selected one\n"
    "  --device SEL  device index or name substring (default: $VKD_DEVICE, else discrete >\n"
    "                integrated > virtual > CPU)\n"
    "  --quirks      list the driver-bug table instead: which devices, what goes wrong, the\n"
    "                workaround applied, the public report it comes from\n";

constexpr const char* kInspectUsage =
    "usage: vkd inspect MODEL.vkd [--device SEL] [--dot FILE.dot [--force]]\n"
    "       vkd inspect MODEL.partition.json [--weights W.safetensors] [--device SEL]\n"
    "load the model and print its inputs, outputs, graph (values, ops, dispatch nodes, kernels)\n"
    "and memory report; a partitioned model (vkd compile --partition): its inputs, outputs,\n"
    "steps (each partition's blob on the GPU with its memory, each host op) and the tensors\n"
    "between them (dtype, shape, quantization, which step writes and reads each)\n"
    "  --device SEL    device index or name substring (overrides $VKD_DEVICE)\n"
    "  --dot FILE      first write a Graphviz picture of the blob's graph (tensors colored by\n"
    "                  layout, inserted conversions in red); needs no device\n"
    "  --force         replace an existing --dot file (never the model)\n"
    "  --weights FILE  a partitioned model's original weights, where host steps find their\n"
    "                  constants\n";

constexpr const char* kRunUsage =
    "usage: vkd run MODEL.vkd --input NAME=FILE.npy ... [--output-dir DIR] [--force] [--bench N]\n"
    "               [--profile] [--trace FILE.json] [--device SEL] [--intermediates]\n"
    "               [--check GRAPH.json [--weights W.safetensors]]\n"
    "       vkd run MODEL.partition.json --input NAME=FILE.npy ... [--weights W.safetensors]\n"
    "               [--output-dir DIR] [--force] [--bench N] [--profile] [--device SEL]\n"
    "run the model once on .npy inputs and write each output as DIR/NAME.npy; a partitioned\n"
    "model (vkd compile --partition) runs every step in order: its partitions on the GPU, the\n"
    "rest on the CPU (reference interpreter), each step's place and time printed\n"
    "  --input NAME=FILE   an input by name or position (input0, input1, ...); float32 '<f4',\n"
    "                      float16 '<f2', int8 '|i1', int32 '<i4' (or int64 '<i8' ids,\n"
    "                      narrowed), C order\n"
    "  --output-dir DIR    where the outputs go (default: .); created when missing and its\n"
    "                      parent exists\n"
    "  --force             replace existing output files (never a file this command reads)\n"
    "  --bench N           then 3 warm-up and N timed runs: median/min host and GPU time\n"
    "  --profile           per-node GPU time table of the last run\n"
    "  --trace FILE        Chrome/Perfetto trace (JSON) of the last run\n"
    "  --intermediates     also write every tensor the blob keeps (the int8 activations\n"
    "                      between fused ops, named as in the graph) to --output-dir; the\n"
    "                      model then shares no memory between them (slower, larger)\n"
    "  --device SEL        device index or name substring (overrides $VKD_DEVICE)\n"
    "  --check GRAPH       also compare every tensor, in op order, with the CPU reference\n"
    "                      interpreter on GRAPH.json fed the device's inputs of that op; report\n"
    "                      the first that differs (exit 1), 1-off rounding ties apart\n"
    "  --weights FILE      the safetensors file of the --check graph; for a partitioned model,\n"
    "                      the original weights, where host steps find their constants (unused,\n"
    "                      with a note, when no host step reads one)\n"
    "Every file is checked before the first run: a failing call writes nothing.\n";

const Command kCommands[] = {
    {"compile", "graph IR (GRAPH.json + weights) -> delegate blob (MODEL.vkd)", kCompileUsage,
     vkd::cli::cmd_compile},
    {"devices", "list the Vulkan devices and the device profile", kDevicesUsage,
     vkd::cli::cmd_devices},
    {"inspect", "load a model; print its inputs, outputs, graph, kernels and memory", kInspectUsage,
     vkd::cli::cmd_inspect},
    {"run", "run a model on .npy inputs, write .npy outputs (bench, profile, trace, check)",
     kRunUsage, vkd::cli::cmd_run},
};

// One line per variable: every one the runtime reads (runtime/vk, runtime/ops).
constexpr const char* kEnvironmentAndExitCodes =
    "environment (read by the runtime: run, inspect, devices):\n"
    "  VKD_DEVICE=SEL                device index or name substring (default: the best GPU)\n"
    "  VKD_VALIDATION=1              Khronos validation layer; run/inspect exit 1 on a message\n"
    "  VKD_PIPELINE_CACHE=FILE       Vulkan pipeline cache file (default: one per device under\n"
    "                                $XDG_CACHE_HOME/vkdelegate; off: none)\n"
    "  VKD_WORKGROUP_SIZE=N          override the local size of every linear dispatch (1..65536)\n"
    "  VKD_TILE_ORDER=0..3           force the tile walk: 0 CWHN, 1 WCHN, 2 WHCN, 3 patch\n"
    "  VKD_DISABLE_INT8_DOT=1        no int8 dot product: the fallback shaders\n"
    "  VKD_DISABLE_SUBGROUP_ARITH=1  no subgroup arithmetic\n"
    "  VKD_DISABLE_FLOAT16=1         no float16 arithmetic or 16-bit storage\n"
    "  VKD_DISABLE_COOPMAT=1         no cooperative matrices (no cooperative-matrix linear route)\n"
    "  VKD_DISABLE_CPU_KERNELS=1     a CPU device runs the GPU-shaped kernels, not its own\n"
    "  VKD_DEVICE_CLASS=NAME         the device behaves as a class of GPU (its API version,\n"
    "                                limits and features): android-baseline-2022, mali-g7x,\n"
    "                                adreno-6xx, apple-m1 (docs/DEVICES.md)\n"
    "exit codes:\n"
    "  0  success\n"
    "  1  failure: a --check mismatch, validation messages, a device/driver/runtime error,\n"
    "     a failed write (disk full, I/O)\n"
    "  2  usage, path or input error: a bad option; an input file that is missing, unreadable or\n"
    "     not a regular file; an output that exists (without --force), is a file the command\n"
    "     reads or cannot be created; a malformed model, graph or .npy file; inputs that do not\n"
    "     fit the model\n";

std::string top_usage() {
  std::string s =
      "usage: vkd <command> [options]\n"
      "       vkd help [COMMAND] | vkd <command> --help | vkd --version\n"
      "commands:\n";
  for (const Command& c : kCommands) {
    s += "  " + std::string(c.name) + std::string(9 - std::strlen(c.name), ' ') + c.summary + "\n";
  }
  s += "  help     this text; 'vkd help COMMAND' (or 'vkd COMMAND --help'): its options\n";
  return s;
}

std::string full_help() { return top_usage() + kEnvironmentAndExitCodes; }

const Command* find_command(const std::string& name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// "-h" or "--help" among the options (before a "--").
bool asks_for_help(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

// Prints each line of `message` as "vkd <command>: <line>".
void print_error(const std::string& command, const std::string& message) {
  size_t start = 0;
  do {
    size_t end = message.find('\n', start);
    if (end == std::string::npos) end = message.size();
    std::fprintf(stderr, "vkd %s: %s\n", command.c_str(),
                 message.substr(start, end - start).c_str());
    start = end + 1;
  } while (start < message.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(top_usage().c_str(), stderr);
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "--version") {
    std::printf("vkd %s\n", VKD_VERSION);
    return 0;
  }
  if (command == "help" || command == "--help" || command == "-h") {
    if (args.empty()) {
      std::fputs(full_help().c_str(), stdout);
      return 0;
    }
    const Command* c = find_command(args[0]);
    if (args.size() > 1 || c == nullptr) {
      std::fprintf(stderr, "vkd help: unknown command '%s'\n%s", args[0].c_str(),
                   top_usage().c_str());
      return 2;
    }
    std::fputs(c->usage, stdout);
    return 0;
  }
  const Command* c = find_command(command);
  if (c == nullptr) {
    std::fprintf(stderr, "vkd: unknown command '%s'\n%s", command.c_str(), top_usage().c_str());
    return 2;
  }
  if (asks_for_help(args)) {
    std::fputs(c->usage, stdout);
    return 0;
  }
  try {
    return c->run(args);
  } catch (const vkd::cli::UsageError& e) {
    print_error(command, e.what());
    std::fputs(c->usage, stderr);
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
