#include "tools/vkd/Check.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "compiler/Interpreter.h"
#include "runtime/core/Error.h"
#include "runtime/core/TensorSpec.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"

namespace vkd::cli {
namespace {

using compiler::HostTensor;

// Float tensors agree within 1e-5 relative (plus 1e-6 absolute for values near zero); integer
// tensors must be equal.
constexpr double kRelTol = 1e-5, kAbsTol = 1e-6;

struct Comparison {
  bool comparable = true;
  std::string problem;  // when not comparable: why
  double max_abs = 0;
  size_t mismatches = 0, total = 0, first_index = 0;
  double first_gpu = 0, first_ref = 0;
  bool differs() const { return !comparable || mismatches > 0; }
};

DType to_dtype(HostDType d) {
  switch (d) {
    case HostDType::Int8: return DType::Int8;
    case HostDType::Int32: return DType::Int32;
    case HostDType::Float32: break;
  }
  return DType::Float32;
}

// A float16 reference tensor as float32 (exact): the delegate hands float16 tensors out as
// float32, so that is what the device side of a comparison holds.
HostTensor widened(const HostTensor& t) {
  if (t.dtype != DType::Float16) return t;
  return HostTensor{DType::Float32, t.shape, float16_bytes_to_float32(t.bytes)};
}

// A float32 host tensor (a graph input the delegate took as float32) as float16, rounded as the
// runtime rounds it on upload.
HostTensor narrowed(const HostTensor& t) {
  return HostTensor{DType::Float16, t.shape, float32_bytes_to_float16(t.bytes)};
}

Comparison compare(const std::vector<uint8_t>& gpu, HostDType gpu_dtype,
                   const std::vector<int64_t>& gpu_shape, const HostTensor& ref_in) {
  const HostTensor ref = widened(ref_in);
  Comparison c;
  const DType dtype = to_dtype(gpu_dtype);
  if (dtype != ref.dtype) {
    c.comparable = false;
    c.problem = "dtype differs: device " + std::string(to_string(dtype)) + ", reference " +
                std::string(to_string(ref.dtype));
    return c;
  }
  if (gpu_shape != ref.shape) {
    c.comparable = false;
    c.problem = "shape differs: device " + sizes_string(gpu_shape) + ", reference " +
                sizes_string(ref.shape);
    return c;
  }
  c.total = static_cast<size_t>(ref.numel());
  const bool is_float = dtype == DType::Float32;
  for (size_t i = 0; i < c.total; ++i) {
    const double g = element_as_double(gpu.data(), gpu_dtype, i);
    const double r = element_as_double(ref.bytes.data(), gpu_dtype, i);
    const double d = std::fabs(g - r);
    // (g == r first: equal infinities have a NaN difference)
    const bool same = g == r || (is_float && ((std::isnan(g) && std::isnan(r)) ||
                                              d <= kAbsTol + kRelTol * std::fabs(r)));
    if (!std::isnan(d)) c.max_abs = std::max(c.max_abs, d);
    if (!same && c.mismatches++ == 0) {
      c.first_index = i;
      c.first_gpu = g;
      c.first_ref = r;
    }
  }
  return c;
}

HostTensor host_tensor(const ConstTensorView& v) {
  HostTensor t;
  t.dtype = to_dtype(v.dtype);
  t.shape = v.sizes;
  const auto* p = static_cast<const uint8_t*>(v.data);
  t.bytes.assign(p, p + v.bytes);
  return t;
}

std::string origin_of(const compiler::Graph& g, const std::string& name) {
  const int p = g.producer(name);
  if (p >= 0) return g.nodes[p].origin;
  return g.is_graph_input(name) ? "graph input" : "constant";
}

}  // namespace

CheckGraph read_check_graph(const std::string& graph_path, const std::string& weights_path) {
  try {
    return {graph_path, read_graph(graph_path, weights_path)};
  } catch (const CliError& e) {
    throw CliError(e.exit_code(), std::string("--check: ") + e.what());
  }
}

void check_graph_inputs(const CheckGraph& graph, const std::vector<std::string>& model_inputs,
                        std::vector<std::string>& errors) {
  for (const std::string& name : model_inputs) {
    if (!graph.graph.is_graph_input(name)) {
      errors.push_back("--check: model input '" + name + "' is not an input of " + graph.path);
    }
  }
}

int check_against_graph(const std::vector<uint8_t>& blob, const std::string& model_path,
                        DelegateOptions options, const std::vector<CheckInput>& inputs,
                        const std::vector<CheckOutput>& outputs, const CheckGraph& check_graph) {
  // The reference: the original graph on the CPU.
  const compiler::Graph& graph = check_graph.graph;
  const std::string& graph_path = check_graph.path;
  std::map<std::string, HostTensor> reference;
  try {
    std::map<std::string, HostTensor> ref_inputs;
    for (const auto& in : inputs) {
      HostTensor t = host_tensor(in.view);
      if (graph.value(in.name).dtype == DType::Float16 && t.dtype == DType::Float32) t = narrowed(t);
      ref_inputs[in.name] = std::move(t);
    }
    reference = compiler::interpret(graph, ref_inputs);
  } catch (const Error& e) {
    throw CliError(e.code() == ErrorCode::Internal ? 1 : 2,
                   "--check: " + graph_path + ": " + e.what());
  }

  // The device, every intermediate kept.
  options.expose_intermediates = true;
  std::unique_ptr<Delegate> d = create_delegate(blob, options, model_path);
  std::vector<ConstTensorView> in_views;
  for (const auto& in : inputs) in_views.push_back(in.view);
  std::vector<std::vector<uint8_t>> data(d->output_count());
  std::vector<TensorView> out_views;
  for (size_t i = 0; i < data.size(); ++i) {
    const TensorInfo info = d->output(i);
    data[i].assign(info.host_bytes(), 0);
    out_views.push_back({data[i].data(), data[i].size(), info.host_dtype, info.sizes});
  }
  const Status s = d->execute(in_views, out_views);
  if (s != Status::Ok) {
    throw CliError(exit_code_for(s), std::string("--check: execute failed (") + status_name(s) +
                                         "): " + d->last_error());
  }

  std::printf("check against %s (CPU reference interpreter; float tolerance %.0e relative):\n",
              graph_path.c_str(), kRelTol);
  std::printf("  %-24s %-8s %-16s %12s %-12s %s\n", "tensor", "dtype", "shape", "max abs err",
              "mismatches", "reference node");
  std::string first_difference;
  size_t compared = 0, skipped = 0;
  const auto report = [&](const std::string& label, const std::string& name,
                          const std::vector<uint8_t>& gpu, const TensorInfo& info) {
    auto it = reference.find(name);
    if (it == reference.end()) {
      ++skipped;
      return;
    }
    ++compared;
    const Comparison c = compare(gpu, info.host_dtype, info.sizes, it->second);
    const std::string mism = c.comparable ? std::to_string(c.mismatches) + "/" +
                                                std::to_string(c.total)
                                          : c.problem;
    char err[32];
    std::snprintf(err, sizeof err, "%.3g", c.max_abs);
    std::printf("  %-24s %-8s %-16s %12s %-12s %s%s\n", label.c_str(),
                info.device_dtype == "float16" ? "float16" : host_dtype_name(info.host_dtype),
                sizes_string(info.sizes).c_str(),
                c.comparable ? err : "-", mism.c_str(), origin_of(graph, name).c_str(),
                c.differs() ? "  <-- differs" : "");
    if (c.differs() && first_difference.empty()) {
      first_difference = "first difference: tensor '" + name + "' (" + origin_of(graph, name) +
                         "): ";
      if (!c.comparable) {
        first_difference += c.problem;
      } else {
        char detail[160];
        std::snprintf(detail, sizeof detail,
                      "%zu of %zu elements differ, max abs error %.6g; first at flat index %zu: "
                      "device %.9g, reference %.9g",
                      c.mismatches, c.total, c.max_abs, c.first_index, c.first_gpu, c.first_ref);
        first_difference += detail;
      }
    }
  };
  // Intermediates in op order (they follow the model's own outputs), then the outputs of the
  // normal run.
  for (size_t i = outputs.size(); i < data.size(); ++i) {
    const TensorInfo info = d->output(i);
    report(info.name, info.name, data[i], info);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    report(outputs[i].name + " (output)", outputs[i].name, *outputs[i].data, d->output(i));
  }
  std::printf("compared %zu tensor(s); %zu made by the compiler have no counterpart in the graph\n",
              compared, skipped);
  if (!first_difference.empty()) {
    std::printf("%s\n", first_difference.c_str());
    return 1;
  }
  std::printf("check: every compared tensor matches the reference\n");
  return 0;
}

}  // namespace vkd::cli
