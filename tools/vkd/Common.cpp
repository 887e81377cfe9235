#include "tools/vkd/Common.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "compiler/Parse.h"
#include "compiler/Safetensors.h"
#include "core/Env.h"
#include "core/Error.h"
#include "core/HostPacking.h"
#include "core/TensorSpec.h"
#include "model/PlanFiles.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Files.h"

namespace vkd::cli {

namespace {

template <typename T>
T load_element(const uint8_t* data, size_t i) {
  T v;
  std::memcpy(&v, data + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

double element_as_double(const uint8_t* data, HostDType dtype, size_t i) {
  switch (dtype) {
    case HostDType::Float32: return load_element<float>(data, i);
    case HostDType::Int32: return load_element<int32_t>(data, i);
    case HostDType::Int8: return load_element<int8_t>(data, i);
  }
  return 0.0;
}

int exit_code_for(Status status) { return status == Status::InvalidArgument ? 2 : 1; }

std::vector<uint8_t> read_model_file(const std::string& path) {
  try {
    return model::read_blob_file(path, Symlinks::Follow);
  } catch (const Error& e) {
    throw CliError(2, e.what());  // "cannot read model file '<path>': <why>"
  }
}

compiler::Graph read_graph(const std::string& graph_path, const std::string& weights_path) {
  const std::vector<uint8_t> text = read_input_file(graph_path, "graph file", kMaxGraphFileBytes);
  std::optional<compiler::SafetensorsFile> weights;
  try {
    if (!weights_path.empty()) {
      weights = compiler::SafetensorsFile::from_bytes(
          read_input_file(weights_path, "weights file", kMaxWeightsFileBytes), weights_path);
    }
    // parse_graph() names the graph file (and the node or value) in its messages.
    return compiler::parse_graph(std::string(text.begin(), text.end()), graph_path,
                                 weights ? &*weights : nullptr);
  } catch (const Error& e) {
    throw CliError(e.code() == ErrorCode::Internal ? 1 : 2, e.what());
  }
}

DelegateOptions delegate_options(const std::optional<std::string>& device) {
  DelegateOptions o;
  if (device) o.device = *device;
  o.validation = env_flag("VKD_VALIDATION");
  return o;
}

std::unique_ptr<Delegate> create_delegate(const std::vector<uint8_t>& blob,
                                          const DelegateOptions& options,
                                          const std::string& model_path) {
  std::unique_ptr<Delegate> delegate;
  std::string error;
  const Status s = Delegate::create(blob.data(), blob.size(), options, &delegate, &error);
  if (s != Status::Ok || !delegate) {
    if (s == Status::Ok) error = "Delegate::create returned Ok without a delegate";
    throw CliError(s == Status::Ok ? 1 : exit_code_for(s),
                   "cannot load model '" + model_path + "' (" + status_name(s) + "): " + error);
  }
  return delegate;
}

std::string io_name(const TensorInfo& info, size_t index, bool is_input) {
  if (!info.name.empty()) return info.name;
  return (is_input ? "input" : "output") + std::to_string(index);
}

std::string human_bytes(uint64_t bytes) {
  if (bytes < 10 * 1024) return std::to_string(bytes) + " B";  // small sizes exactly
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string tensor_summary(const TensorInfo& info) {
  // float16 tensors: exchanged as float32, but their files are float16.
  const std::string dtype =
      info.device_dtype == "float16" ? "float16" : host_dtype_name(info.host_dtype);
  return dtype + " " + sizes_string(info.sizes) + "  (device: " + info.device_dtype + " " +
         info.storage + " " + info.layout + ")";
}

std::string memory_report_text(const MemoryReport& m, const std::string& indent) {
  std::string s = indent + "memory: constants " + human_bytes(m.constant_bytes) + " (" +
                  human_bytes(m.constant_device_bytes) + " on the GPU), intermediates " +
                  human_bytes(m.intermediate_planned_bytes) + " planned vs " +
                  human_bytes(m.intermediate_naive_bytes) + " naive";
  if (m.intermediate_naive_bytes > 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " (%.0f%%)",
                  100.0 * static_cast<double>(m.intermediate_planned_bytes) /
                      static_cast<double>(m.intermediate_naive_bytes));
    s += buf;
  }
  s += ", inputs/outputs " + human_bytes(m.io_device_bytes) + ", device total " +
       human_bytes(m.device_bytes) + ", staging " + human_bytes(m.staging_bytes) + "\n";
  s += indent + "load peak: " + human_bytes(m.load_peak_bytes);
  if (m.constant_bytes > 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " (%.2fx the %s of constants)",
                  static_cast<double>(m.load_peak_bytes) / static_cast<double>(m.constant_bytes),
                  human_bytes(m.constant_bytes).c_str());
    s += buf;
  } else {
    s += " (the model has no constants)";
  }
  return s + "\n";
}

std::string indent_lines(const std::string& text, const std::string& indent) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += indent + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace vkd::cli
