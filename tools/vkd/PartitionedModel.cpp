#include "tools/vkd/PartitionedModel.h"

#include <chrono>
#include <cstring>
#include <limits>

#include "compiler/Safetensors.h"
#include "runtime/core/Error.h"
#include "runtime/core/TensorSpec.h"
#include "tools/vkd/Args.h"
#include "tools/vkd/Common.h"
#include "tools/vkd/Files.h"
#include "tools/vkd/RunSteps.h"

namespace vkd::cli {
namespace {

using compiler::HostTensor;

// Every blob the plan names, all unreadable ones in one CliError(2).
std::vector<std::vector<uint8_t>> read_blobs(const PartitionPlan& plan) {
  std::vector<std::vector<uint8_t>> blobs(plan.steps.size());
  std::vector<std::string> errors;
  for (const PlanStep& s : plan.steps) {
    if (!s.on_gpu) continue;
    try {
      blobs[s.index] = read_model_file(s.blob_path);
    } catch (const CliError& e) {
      errors.push_back(plan.path + ": " + s.label() + ": " + e.what());
    }
  }
  if (!errors.empty()) throw CliError(2, join_lines(errors));
  return blobs;
}

// The first host step that reads constant `name` (for messages).
const PlanStep& reader_of(const PartitionPlan& plan, const std::string& name) {
  for (const PlanStep& s : plan.steps) {
    for (const std::string& in : s.inputs) {
      if (in == name) return s;
    }
  }
  return plan.steps.front();
}

// The safetensors dtype a constant of `dtype` is stored as (int32 constants may come as int64,
// which the compiler narrows too).
bool stored_as(DType dtype, const std::string& st) {
  switch (dtype) {
    case DType::Float32: return st == "F32";
    case DType::Float16: return st == "F16";
    case DType::Int8: return st == "I8";
    case DType::Int32: return st == "I32" || st == "I64";
    default: return false;
  }
}

// `view` as the host tensor the plan describes; int64 narrowed to int32 where every value fits.
HostTensor constant_tensor(const PlanTensor& t, const compiler::SafetensorsTensorView& view,
                           const std::string& where) {
  HostTensor out{t.dtype, t.shape, view.bytes()};
  if (view.dtype != "I64") return out;
  out.bytes.assign(view.nbytes / 2, 0);
  for (size_t i = 0; i < view.nbytes / 8; ++i) {
    int64_t v;
    std::memcpy(&v, view.data + 8 * i, 8);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      throw CliError(2, where + ": int64 value " + std::to_string(v) + " does not fit int32");
    }
    const int32_t narrow = static_cast<int32_t>(v);
    std::memcpy(out.bytes.data() + 4 * i, &narrow, 4);
  }
  return out;
}

// The constants the host steps read, from the original weights file.
TensorMap read_constants(const PartitionPlan& plan, const std::string& weights_path) {
  std::optional<compiler::SafetensorsFile> file;
  try {
    file = compiler::SafetensorsFile::from_bytes(
        read_input_file(weights_path, "weights file", kMaxWeightsFileBytes), weights_path);
  } catch (const Error& e) {
    throw CliError(2, e.what());
  }
  TensorMap constants;
  std::vector<std::string> errors;
  for (const auto& [name, t] : plan.tensors) {
    if (!t.constant) continue;
    const std::string where = plan.path + ": " + reader_of(plan, name).label() +
                              ": constant '" + name + "'";
    const compiler::SafetensorsTensorView* view = file->find(t.weights_name);
    if (view == nullptr) {
      errors.push_back(where + ": no tensor '" + t.weights_name + "' in " + weights_path +
                       " (constants are looked up by value name)");
    } else if (!stored_as(t.dtype, view->dtype) || view->shape != t.shape) {
      errors.push_back(where + ": " + weights_path + " holds " + view->dtype + " " +
                       sizes_string(view->shape) + ", the plan expects " +
                       std::string(to_string(t.dtype)) + " " + sizes_string(t.shape));
    } else {
      constants[name] = constant_tensor(t, *view, where);
    }
  }
  if (!errors.empty()) throw CliError(2, join_lines(errors));
  return constants;
}

std::string first_constant_reader(const PartitionPlan& plan) {
  for (const auto& [name, t] : plan.tensors) {
    if (t.constant) return reader_of(plan, name).label() + " reads constant '" + name + "'";
  }
  return "";
}

}  // namespace

PlanFiles read_plan_files(const std::string& plan_path,
                          const std::optional<std::string>& weights_path) {
  PlanFiles f;
  f.plan = read_partition_plan(plan_path);
  f.blobs = read_blobs(f.plan);
  if (f.plan.needs_weights() && !weights_path) {
    throw CliError(2, plan_path + ": " + first_constant_reader(f.plan) +
                          ": pass --weights W.safetensors (the original graph's weights)");
  }
  if (!f.plan.needs_weights() && weights_path) {
    throw CliError(2, "--weights " + *weights_path + ": " + plan_path +
                          " has no host step that reads a constant");
  }
  if (weights_path) f.constants = read_constants(f.plan, *weights_path);
  f.host_graphs.resize(f.plan.steps.size());
  for (const PlanStep& s : f.plan.steps) {
    if (!s.on_gpu) f.host_graphs[s.index] = host_step_graph(f.plan, s, f.constants);
  }
  return f;
}

namespace {

HostDType host_dtype_of(DType d) {
  switch (d) {
    case DType::Int8: return HostDType::Int8;
    case DType::Int32: return HostDType::Int32;
    default: return HostDType::Float32;  // float16 is exchanged as float32
  }
}

// Whether a delegate tensor is what the plan describes; the problem goes into `errors`.
void check_io(const TensorInfo& info, const PlanTensor& t, const std::string& where,
              std::vector<std::string>& errors) {
  if (info.named && info.name != t.name) {
    errors.push_back(where + " is '" + info.name + "' in the blob, '" + t.name +
                     "' in the plan");
  }
  const bool half = info.device_dtype == "float16";
  if (info.host_dtype != host_dtype_of(t.dtype) || half != (t.dtype == DType::Float16)) {
    errors.push_back(where + " ('" + t.name + "'): the blob has " +
                     (half ? "float16" : host_dtype_name(info.host_dtype)) + ", the plan " +
                     std::string(to_string(t.dtype)));
  }
  if (info.sizes != t.shape) {
    errors.push_back(where + " ('" + t.name + "'): the blob has shape " +
                     sizes_string(info.sizes) + ", the plan " + sizes_string(t.shape));
  }
}

// A delegate step's blob against the plan: the same inputs and outputs, in the same order.
void check_delegate_io(const PartitionPlan& plan, const PlanStep& s, const Delegate& d) {
  const std::string where = plan.path + ": " + s.label() + ": ";
  std::vector<std::string> errors;
  if (d.input_count() != s.inputs.size() || d.output_count() != s.outputs.size()) {
    errors.push_back(where + "the blob has " + std::to_string(d.input_count()) + " input(s) and " +
                     std::to_string(d.output_count()) + " output(s), the plan " +
                     std::to_string(s.inputs.size()) + " and " + std::to_string(s.outputs.size()));
  } else {
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      check_io(d.input(i), plan.tensor(s.inputs[i]), where + "input " + std::to_string(i),
               errors);
    }
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      check_io(d.output(i), plan.tensor(s.outputs[i]), where + "output " + std::to_string(i),
               errors);
    }
  }
  if (!errors.empty()) throw CliError(2, join_lines(errors));
}

// What a delegate reads: float16 tensors widened to float32.
struct DelegateInputs {
  std::vector<std::vector<uint8_t>> widened;
  std::vector<ConstTensorView> views;
};

DelegateInputs delegate_inputs(const PlanStep& s, const Delegate& d, const TensorMap& values) {
  DelegateInputs in;
  in.widened.resize(s.inputs.size());
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const HostTensor& t = values.at(s.inputs[i]);
    if (t.dtype == DType::Float16) in.widened[i] = float16_bytes_to_float32(t.bytes);
    const std::vector<uint8_t>& bytes = t.dtype == DType::Float16 ? in.widened[i] : t.bytes;
    const TensorInfo info = d.input(i);
    in.views.push_back({bytes.data(), bytes.size(), info.host_dtype, info.sizes});
  }
  return in;
}

double microseconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::unique_ptr<PartitionedModel> PartitionedModel::create(PlanFiles files,
                                                           const DelegateOptions& options) {
  std::unique_ptr<PartitionedModel> m(new PartitionedModel(std::move(files)));
  const PartitionPlan& plan = m->files_.plan;
  m->delegates_.resize(plan.steps.size());
  for (const PlanStep& s : plan.steps) {
    if (!s.on_gpu) continue;
    std::vector<uint8_t>& blob = m->files_.blobs[s.index];
    m->delegates_[s.index] = create_delegate(blob, options, s.blob_path);
    blob = {};  // the delegate keeps what it needs
    check_delegate_io(plan, s, *m->delegates_[s.index]);
  }
  return m;
}

TensorInfo PartitionedModel::boundary_info(const std::string& name, bool is_input) const {
  const PlanTensor& t = plan().tensor(name);
  TensorInfo info;
  for (const PlanStep& s : plan().steps) {
    const std::vector<std::string>& names = is_input ? s.inputs : s.outputs;
    for (size_t i = 0; s.on_gpu && i < names.size(); ++i) {
      if (names[i] != name) continue;
      info = is_input ? delegates_[s.index]->input(i) : delegates_[s.index]->output(i);
      info.name = name;
      return info;
    }
  }
  info.name = name;
  info.sizes = t.shape;
  info.host_dtype = host_dtype_of(t.dtype);
  info.device_dtype = std::string(to_string(t.dtype));
  info.storage = "host";  // read or written by a host step only
  info.layout = "nchw";
  info.named = true;
  return info;
}

std::vector<TensorInfo> PartitionedModel::input_infos() const {
  std::vector<TensorInfo> infos;
  for (const std::string& name : plan().inputs) infos.push_back(boundary_info(name, true));
  return infos;
}

std::vector<TensorInfo> PartitionedModel::output_infos() const {
  std::vector<TensorInfo> infos;
  for (const std::string& name : plan().outputs) infos.push_back(boundary_info(name, false));
  return infos;
}

std::string PartitionedModel::device_name() const {
  for (const auto& d : delegates_) {
    if (d) return d->device_name();
  }
  return "none (every step runs on the host)";
}

uint64_t PartitionedModel::validation_message_count() const {
  uint64_t n = 0;
  for (const auto& d : delegates_) n += d ? d->validation_message_count() : 0;
  return n;
}

StepTiming PartitionedModel::run_gpu_step(const PlanStep& s, TensorMap& values) {
  Delegate& d = *delegates_[s.index];
  const DelegateInputs in = delegate_inputs(s, d, values);
  std::vector<std::vector<uint8_t>> data(s.outputs.size());
  std::vector<TensorView> out;
  for (size_t i = 0; i < data.size(); ++i) {
    const TensorInfo info = d.output(i);
    data[i].assign(info.host_bytes(), 0);
    out.push_back({data[i].data(), data[i].size(), info.host_dtype, info.sizes});
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Status status = d.execute(in.views, out);
  StepTiming timing{&s, microseconds_since(t0), {}};
  if (status != Status::Ok) {
    throw CliError(exit_code_for(status), plan().path + ": " + s.label() + ": execute failed (" +
                                              status_name(status) + "): " + d.last_error());
  }
  timing.profile = d.last_profile();
  for (size_t i = 0; i < data.size(); ++i) {
    const PlanTensor& t = plan().tensor(s.outputs[i]);
    if (t.dtype == DType::Float16) data[i] = float32_bytes_to_float16(data[i]);
    values[t.name] = HostTensor{t.dtype, t.shape, std::move(data[i])};
  }
  return timing;
}

StepTiming PartitionedModel::run_host_step(const PlanStep& s, TensorMap& values) const {
  const compiler::Graph& g = files_.host_graphs[s.index];
  TensorMap inputs;
  for (const std::string& name : g.inputs) inputs[name] = values.at(name);
  const auto t0 = std::chrono::steady_clock::now();
  TensorMap result;
  try {
    result = compiler::interpret(g, inputs);
  } catch (const Error& e) {
    throw CliError(e.code() == ErrorCode::Internal ? 1 : 2,
                   plan().path + ": " + s.label() + ": " + e.what());
  }
  StepTiming timing{&s, microseconds_since(t0), {}};
  for (const std::string& name : s.outputs) values[name] = std::move(result.at(name));
  return timing;
}

TensorMap PartitionedModel::run(const TensorMap& inputs, std::vector<StepTiming>* timings) {
  TensorMap values = files_.constants;
  for (const std::string& name : plan().inputs) {
    const auto it = inputs.find(name);
    const PlanTensor& t = plan().tensor(name);
    VKD_CHECK(it != inputs.end() && it->second.dtype == t.dtype && it->second.shape == t.shape,
              ErrorCode::Internal, plan().path, ": model input '", name,
              "' missing or not as the plan describes it");
    values[name] = it->second;
  }
  timings->clear();
  for (const PlanStep& s : plan().steps) {
    timings->push_back(s.on_gpu ? run_gpu_step(s, values) : run_host_step(s, values));
  }
  return values;
}

}  // namespace vkd::cli
