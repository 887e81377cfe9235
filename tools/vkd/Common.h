// Helpers the commands share: the delegate side (run, inspect) through the public API only
// (vkdelegate/Delegate.hpp), and the graph IR files (compile, run --check) through the compiler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "core/HostPacking.h"  // float16_bytes_to_float32 and back, used with the API
#include "vkdelegate/Delegate.hpp"

namespace vkd::cli {

// The commands; each returns the process exit code or throws CliError (Args.h).
int cmd_devices(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_inspect(const std::vector<std::string>& args);
int cmd_compile(const std::vector<std::string>& args);

// Exit code for a failed delegate call: 2 for InvalidArgument (the model or the inputs are at
// fault), 1 for everything else (device, driver, library).
int exit_code_for(Status status);

// The whole model file (a regular file, at most kMaxModelFileBytes, starting with the blob
// magic: another file is refused without being quoted), or CliError(2) naming the path and the
// reason.
std::vector<uint8_t> read_model_file(const std::string& path);

// GRAPH.json and, when `weights_path` is not empty, its safetensors file, read as input files
// (Files.h: regular files, capped) and parsed (shapes inferred). CliError(2) naming the file
// (and the node or value) when a file cannot be read or the graph is invalid.
compiler::Graph read_graph(const std::string& graph_path, const std::string& weights_path);

// DelegateOptions with `device` (when given) and validation from $VKD_VALIDATION.
DelegateOptions delegate_options(const std::optional<std::string>& device);

// Delegate::create, or CliError naming the model and the status.
std::unique_ptr<Delegate> create_delegate(const std::vector<uint8_t>& blob,
                                          const DelegateOptions& options,
                                          const std::string& model_path);

// The name a graph input/output goes by: its TensorInfo name, or "input<i>" / "output<i>" when
// that is empty. (The delegate names unnamed blob inputs/outputs after their values, "v0", so
// `vkd run` also accepts "input<i>" for input i whatever its name.)
std::string io_name(const TensorInfo& info, size_t index, bool is_input);

// Element `i` of host data of `dtype` (little-endian, unaligned reads allowed).
double element_as_double(const uint8_t* data, HostDType dtype, size_t i);
std::string human_bytes(uint64_t bytes);  // "1216 B", "12.4 KiB", ...
// "float32 [1,5,7,9]  (device: float32 buffer width_packed)"; float16 for float16 tensors (the
// delegate exchanges them as float32, `vkd run` reads and writes them as float16 files).
std::string tensor_summary(const TensorInfo& info);

// Two lines: constants / intermediates (planned vs naive) / io / staging / device total, then
// the load peak against the constant bytes. Each line starts with `indent`.
std::string memory_report_text(const MemoryReport& m, const std::string& indent = "");

// The lines of `text`, each prefixed with `indent`.
std::string indent_lines(const std::string& text, const std::string& indent);

}  // namespace vkd::cli
