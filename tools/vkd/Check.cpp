#include "tools/vkd/Check.h"

#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "compiler/GraphHash.h"
#include "compiler/Interpreter.h"
#include "core/Error.h"
#include "core/TensorSpec.h"
#include "serialization/Blob.h"
#include "serialization/Xxh64.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/CheckCompare.h"
#include "tools/vkd/Common.h"

namespace vkd::cli {
namespace {

using compiler::HostTensor;
using TensorMap = std::map<std::string, HostTensor>;

DType to_dtype(HostDType d) {
  switch (d) {
    case HostDType::Int8: return DType::Int8;
    case HostDType::Int32: return DType::Int32;
    case HostDType::Float32: break;
  }
  return DType::Float32;
}

HostTensor host_tensor(const ConstTensorView& v) {
  const auto* p = static_cast<const uint8_t*>(v.data);
  return HostTensor{to_dtype(v.dtype), v.sizes, std::vector<uint8_t>(p, p + v.bytes)};
}

HostTensor host_tensor(const std::vector<uint8_t>& data, const TensorInfo& info) {
  return HostTensor{to_dtype(info.host_dtype), info.sizes, data};
}

// A device tensor as the graph declares value `v` (float16 ones come as float32 and are
// narrowed back, exactly), or nullopt when it is not that value's dtype and shape.
std::optional<HostTensor> as_graph_value(const HostTensor& device, const compiler::Value& v) {
  if (v.dtype == DType::Float16 && device.dtype == DType::Float32) {
    return HostTensor{DType::Float16, device.shape, float32_bytes_to_float16(device.bytes)};
  }
  if (device.dtype != v.dtype || device.shape != v.shape) return std::nullopt;
  return device;
}

// A call into the interpreter, its errors named after the graph: a graph the interpreter
// cannot run is bad input (2), an internal error a failure (1).
template <typename F>
auto interpret_or_throw(const std::string& graph_path, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw CliError(e.code() == ErrorCode::Internal ? 1 : 2,
                   "--check: " + graph_path + ": " + e.what());
  }
}

// The check inputs as the graph's inputs (a float16 graph input the delegate took as float32
// is rounded as the runtime rounds it on upload).
TensorMap graph_inputs(const compiler::Graph& graph, const std::vector<CheckInput>& inputs) {
  TensorMap m;
  for (const CheckInput& in : inputs) {
    const HostTensor t = host_tensor(in.view);
    m[in.name] = as_graph_value(t, graph.value(in.name)).value_or(t);
  }
  return m;
}

// Every tensor of one run of the model loaded with expose_intermediates: its own outputs, then
// every intermediate in op order.
struct DeviceTensors {
  std::vector<TensorInfo> infos;
  std::vector<std::vector<uint8_t>> data;
};

DeviceTensors run_exposed(const std::vector<uint8_t>& blob, const std::string& model_path,
                          DelegateOptions options, const std::vector<CheckInput>& inputs) {
  options.expose_intermediates = true;
  std::unique_ptr<Delegate> d = create_delegate(blob, options, model_path);
  std::vector<ConstTensorView> in_views;
  for (const auto& in : inputs) in_views.push_back(in.view);
  DeviceTensors t;
  std::vector<TensorView> out_views;
  t.data.resize(d->output_count());
  for (size_t i = 0; i < t.data.size(); ++i) {
    t.infos.push_back(d->output(i));
    t.data[i].assign(t.infos[i].host_bytes(), 0);
    out_views.push_back(
        {t.data[i].data(), t.data[i].size(), t.infos[i].host_dtype, t.infos[i].sizes});
  }
  const Status s = d->execute(in_views, out_views);
  if (s != Status::Ok) {
    throw CliError(exit_code_for(s), std::string("--check: execute failed (") + status_name(s) +
                                         "): " + d->last_error());
  }
  return t;
}

// What the reference may be fed: the graph inputs, and every device tensor that is a value of
// the graph with its dtype and shape.
TensorMap device_sources(const compiler::Graph& graph, const TensorMap& inputs,
                         const DeviceTensors& device) {
  TensorMap sources = inputs;
  for (size_t i = 0; i < device.infos.size(); ++i) {
    const std::string& name = device.infos[i].name;
    if (!graph.has_value(name) || graph.value(name).is_constant()) continue;
    const auto v = as_graph_value(host_tensor(device.data[i], device.infos[i]), graph.value(name));
    if (v) sources[name] = *v;
  }
  return sources;
}

// A graph value recomputed by the interpreter from the device's own values (CheckCompare.h).
struct LocalReference {
  HostTensor value;
  std::vector<double> pre_rounding;  // what its final quantize rounded, where known
  Region region;
};

class LocalReferences {
 public:
  LocalReferences(const CheckGraph& check, TensorMap sources, const TensorMap& full)
      : check_(check), sources_(std::move(sources)), full_(full) {
    for (const auto& [name, t] : sources_) source_names_.insert(name);
  }

  // nullptr when the graph has no node that writes `name`.
  const LocalReference* find(const std::string& name) {
    const compiler::Graph& g = check_.graph;
    if (!g.has_value(name) || g.producer(name) < 0) return nullptr;
    auto it = cache_.find(name);
    if (it == cache_.end()) it = cache_.emplace(name, compute(name)).first;
    return &it->second;
  }

  // References of `name` with a tie inside its region rounded the other way (tie_alternatives,
  // its ties in up to `max_groups` groups): asked for only where the reference differs, as it
  // reruns the region.
  std::vector<HostTensor> tie_alternatives_of(const std::string& name, size_t max_groups) const {
    const compiler::Graph sub =
        region_graph(check_.graph, region_of(check_.graph, name, source_names_), name);
    const TensorMap values = run(sub);
    return interpret_or_throw(check_.path,
                              [&] { return tie_alternatives(sub, name, values, max_groups); });
  }

 private:
  // The interpreter over region graph `sub`, fed the device's values.
  TensorMap run(const compiler::Graph& sub) const {
    TensorMap inputs;
    for (const std::string& in : sub.inputs) {
      // (a value no device tensor holds and no node writes: the full run's)
      inputs[in] = sources_.count(in) ? sources_.at(in) : full_.at(in);
    }
    return interpret_or_throw(check_.path, [&] { return compiler::interpret(sub, inputs); });
  }

  LocalReference compute(const std::string& name) const {
    LocalReference r;
    r.region = region_of(check_.graph, name, source_names_);
    const compiler::Graph sub = region_graph(check_.graph, r.region, name);
    const TensorMap values = run(sub);
    r.value = values.at(name);
    r.pre_rounding = rounding_of(sub, name, values);
    return r;
  }

  const CheckGraph& check_;
  TensorMap sources_;
  const TensorMap& full_;
  std::set<std::string> source_names_;
  std::map<std::string, LocalReference> cache_;
};

std::string origin_of(const compiler::Graph& g, const std::string& name) {
  const int p = g.producer(name);
  if (p >= 0) return g.nodes[p].origin;
  return g.is_graph_input(name) ? "graph input" : "constant";
}

// "  [2 nodes from xd]" when the reference recomputed more than the tensor's own op (the
// compiler fused or folded the ones before it), else "".
std::string region_note(const Region& r) {
  if (r.nodes.size() < 2) return "";
  std::string from;
  for (size_t i = 0; i < r.inputs.size() && i < 3; ++i) from += (i ? ", " : "") + r.inputs[i];
  if (r.inputs.size() > 3) from += ", ...";
  return "  [" + std::to_string(r.nodes.size()) + " nodes" + (from.empty() ? "" : " from " + from) +
         "]";
}

std::string mismatch_text(const Comparison& c) {
  if (!c.comparable) return c.problem;
  std::string s = std::to_string(c.mismatches) + "/" + std::to_string(c.total);
  if (c.ties + c.fused_ties > 0) s += " +" + std::to_string(c.ties + c.fused_ties) + " ties";
  return s;
}

std::string first_difference_text(const std::string& name, const std::string& origin,
                                  const Comparison& c) {
  std::string s = "first difference: tensor '" + name + "' (" + origin + "): ";
  if (!c.comparable) return s + c.problem;
  char detail[200];
  std::snprintf(detail, sizeof detail,
                "%zu of %zu elements differ, max abs error %.6g; first at flat index %zu: "
                "device %.9g, reference %.9g",
                c.mismatches, c.total, c.max_abs, c.first_index, c.first_device, c.first_ref);
  return s + detail;
}

// The table's rows and what they add up to.
struct CheckReport {
  size_t compared = 0, skipped = 0, ties = 0, fused_ties = 0;
  size_t outputs = 0, outputs_compared = 0;  // the model's outputs, and those with a row
  std::string first_difference;
};

void report_row(const compiler::Graph& g, const std::string& label, const std::string& name,
                const HostTensor& device, const TensorInfo& info, const LocalReference& ref,
                const LocalReferences& refs, CheckReport& report) {
  ++report.compared;
  Comparison c = compare_tensors(device, ref.value, ref.pre_rounding);
  // Where it differs: the ties inside the region flipped all at once, then, if that does not
  // explain every difference, also in groups (many more reruns of the region).
  for (const size_t groups : {size_t(1), kMaxTieGroups}) {
    if (c.mismatches == 0) break;
    c = compare_tensors(device, ref.value, ref.pre_rounding,
                        refs.tie_alternatives_of(name, groups));
  }
  report.ties += c.ties;
  report.fused_ties += c.fused_ties;
  char err[32];
  std::snprintf(err, sizeof err, "%.3g", c.max_abs);
  std::printf("  %-24s %-8s %-16s %12s %-18s %s%s%s\n", label.c_str(),
              info.device_dtype == "float16" ? "float16" : host_dtype_name(info.host_dtype),
              sizes_string(info.sizes).c_str(), c.comparable ? err : "-", mismatch_text(c).c_str(),
              origin_of(g, name).c_str(), region_note(ref.region).c_str(),
              c.differs() ? "  <-- differs" : "");
  if (c.differs() && report.first_difference.empty()) {
    report.first_difference = first_difference_text(name, origin_of(g, name), c);
  }
}

// The normal run's outputs against the interpreter run from the graph inputs alone: how far
// the answer drifted in all (rounding ties compound); for information, not the exit code.
// Each output is read with the shape the device gave it (`infos`, in output order), so a
// reference of another shape is "not comparable", never a read past the output's bytes.
void print_end_to_end(const std::vector<CheckOutput>& outputs, const std::vector<TensorInfo>& infos,
                      const TensorMap& full) {
  bool drifted = false;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const CheckOutput& o = outputs[i];
    const auto it = full.find(o.name);
    if (it == full.end()) continue;
    const Comparison c = compare_tensors(host_tensor(*o.data, infos[i]), it->second, {});
    drifted = drifted || c.differs();
    char err[32];
    std::snprintf(err, sizeof err, "%.3g", c.max_abs);
    std::printf(
        "end to end: %s max abs err %s, %s differ from the reference run on the graph "
        "inputs alone\n",
        o.name.c_str(), c.comparable ? err : "-", mismatch_text(c).c_str());
  }
  if (drifted) {
    std::printf(
        "end to end: for information, not part of the verdict: that run feeds each op "
        "the reference's own values, so a tie the device rounded the other way spreads to "
        "the ops after it\n");
  }
}

// The lines after the table; the exit code: 1 when a compared tensor really differs.
int print_summary(const CheckReport& r) {
  if (r.ties > 0) {
    std::printf(
        "rounding ties: %zu int8 element(s) 1 off where the reference rounded a value "
        "within %g of halfway; float arithmetic in another order may round it the other "
        "way, so these count as matching\n",
        r.ties, kTieTolerance);
  }
  if (r.fused_ties > 0) {
    std::printf(
        "rounding ties inside fused ops: %zu element(s) as the reference computes them "
        "with a tie of a value the device keeps to itself (a fused op's intermediate) "
        "rounded the other way; these count as matching\n",
        r.fused_ties);
  }
  std::printf("compared %zu tensor(s); %zu made by the compiler have no counterpart in the graph\n",
              r.compared, r.skipped);
  // Matching tensors prove nothing about the answer when no output was among them.
  if (r.outputs_compared == 0) {
    std::printf(
        "check: FAILED: none of the model's %zu output(s) was compared (no node of the "
        "graph writes a value of its name)\n",
        r.outputs);
    return 1;
  }
  if (!r.first_difference.empty()) {
    std::printf("%s\n", r.first_difference.c_str());
    return 1;
  }
  std::printf("check: every compared tensor matches the reference\n");
  return 0;
}

}  // namespace

CheckGraph read_check_graph(const std::string& graph_path, const std::string& weights_path) {
  try {
    return {graph_path, weights_path, read_graph(graph_path, weights_path)};
  } catch (const CliError& e) {
    throw CliError(e.exit_code(), std::string("--check: ") + e.what());
  }
}

void check_graph_is_the_models(const CheckGraph& check, const std::vector<uint8_t>& blob,
                               const std::string& model_path, const Delegate& model) {
  // (the delegate has read this header already: it cannot throw)
  const uint64_t recorded = serialization::parse_header(blob.data(), blob.size()).source_graph_hash;
  if (recorded != 0) {
    const uint64_t hash = compiler::graph_ir_hash(check.graph);
    if (hash == recorded) return;
    const std::string files =
        check.path + (check.weights_path.empty() ? "" : " with " + check.weights_path);
    throw CliError(2, "--check: " + model_path +
                          " was compiled from a different graph: it records graph IR hash " +
                          serialization::hash_string(recorded) + ", " + files + " hashes to " +
                          serialization::hash_string(hash));
  }
  // No hash recorded: every model input and output must at least be a value of the graph with
  // the same shape, or nothing of it can be compared.
  const compiler::Graph& g = check.graph;
  for (const bool is_input : {true, false}) {
    const size_t count = is_input ? model.input_count() : model.output_count();
    for (size_t i = 0; i < count; ++i) {
      const TensorInfo info = is_input ? model.input(i) : model.output(i);
      const std::string label = std::string("model ") + (is_input ? "input" : "output") + " '" +
                                io_name(info, i, is_input) + "'";
      std::string problem;
      if (!g.has_value(info.name)) {
        // (an input the graph lacks is one of check_graph_inputs' errors)
        if (is_input) continue;
        problem = label + " is not a value of " + check.path;
      } else {
        std::vector<int64_t> shape = g.value(info.name).shape;
        if (shape.empty()) shape = {1};  // a scalar is a one-element tensor on the device
        if (shape != info.sizes) {
          problem = label + " is " + sizes_string(info.sizes) + " but " + sizes_string(shape) +
                    " in " + check.path;
        }
      }
      if (!problem.empty()) {
        throw CliError(
            2, "--check: " + problem + ": " + model_path + " was not compiled from this graph");
      }
    }
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
                        const std::vector<CheckOutput>& outputs, const CheckGraph& check) {
  const compiler::Graph& graph = check.graph;
  const TensorMap in = graph_inputs(graph, inputs);
  const TensorMap full =
      interpret_or_throw(check.path, [&] { return compiler::interpret(graph, in); });
  const DeviceTensors device = run_exposed(blob, model_path, options, inputs);
  LocalReferences refs(check, device_sources(graph, in, device), full);

  std::printf(
      "check against %s (CPU reference interpreter, each op fed the device's own "
      "inputs; int8 equal or 1 off at a rounding tie, float within %.0e relative):\n",
      check.path.c_str(), kRelTol);
  std::printf("  %-24s %-8s %-16s %12s %-18s %s\n", "tensor", "dtype", "shape", "max abs err",
              "mismatches", "reference node");
  CheckReport report;
  // Whether the tensor had a row.
  const auto row = [&](const std::string& label, const std::string& name,
                       const std::vector<uint8_t>& data, const TensorInfo& info) {
    const LocalReference* ref = refs.find(name);
    if (ref == nullptr) {
      ++report.skipped;
      return false;
    }
    report_row(graph, label, name, host_tensor(data, info), info, *ref, refs, report);
    return true;
  };
  // Intermediates in op order (they follow the model's own outputs), then the outputs of the
  // normal run (a difference only there points at memory sharing).
  for (size_t i = outputs.size(); i < device.infos.size(); ++i) {
    row(device.infos[i].name, device.infos[i].name, device.data[i], device.infos[i]);
  }
  report.outputs = outputs.size();
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (row(outputs[i].name + " (output)", outputs[i].name, *outputs[i].data, device.infos[i])) {
      ++report.outputs_compared;
    }
  }
  print_end_to_end(outputs, device.infos, full);
  return print_summary(report);
}

}  // namespace vkd::cli
