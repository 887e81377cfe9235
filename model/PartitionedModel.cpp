#include "model/PartitionedModel.h"

#include <chrono>
#include <set>

#include "core/Error.h"
#include "core/HostPacking.h"
#include "core/TensorSpec.h"
#include "runtime/delegate/ApiBoundary.h"

namespace vkd::model {
namespace {

using compiler::HostTensor;

HostDType host_dtype_of(DType d) {
  switch (d) {
    case DType::Int8: return HostDType::Int8;
    case DType::Int32: return HostDType::Int32;
    default: return HostDType::Float32;  // float16 is exchanged as float32
  }
}

// How the host holds a tensor a delegate describes (float16 as float16, int8x4 as int8).
DType plan_dtype_of(const TensorInfo& info) {
  if (info.device_dtype == "float16") return DType::Float16;
  switch (info.host_dtype) {
    case HostDType::Int8: return DType::Int8;
    case HostDType::Int32: return DType::Int32;
    case HostDType::Float32: break;
  }
  return DType::Float32;
}

std::unique_ptr<Delegate> load_delegate(const std::vector<uint8_t>& blob,
                                        const DelegateOptions& options, const std::string& path) {
  std::unique_ptr<Delegate> delegate;
  std::string error;
  const Status s = Delegate::create(blob.data(), blob.size(), options, &delegate, &error);
  if (s == Status::Ok && delegate) return delegate;
  VKD_THROW(s == Status::Ok ? ErrorCode::Internal : api::error_code_of(s), "cannot load model '",
            path, "' (", status_name(s),
            "): ", s == Status::Ok ? "Delegate::create returned Ok without a delegate" : error);
}

// A plain blob's one step: its inputs and outputs are the delegate's, under the delegate's
// names (positional, "input<i>" / "output<i>", when two share one), described as it describes
// them.
void describe_blob_step(PartitionPlan& plan, const Delegate& d) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < d.input_count(); ++i) infos.push_back(d.input(i));
  for (size_t i = 0; i < d.output_count(); ++i) infos.push_back(d.output(i));
  std::set<std::string> names;
  bool unique = true;
  for (const TensorInfo& info : infos) unique = unique && names.insert(info.name).second;
  PlanStep& step = plan.steps.front();
  for (size_t k = 0; k < infos.size(); ++k) {
    const bool is_input = k < d.input_count();
    const size_t i = is_input ? k : k - d.input_count();
    const std::string name =
        unique ? infos[k].name : (is_input ? "input" : "output") + std::to_string(i);
    (is_input ? step.inputs : step.outputs).push_back(name);
    (is_input ? plan.inputs : plan.outputs).push_back(name);
    plan.tensors[name] = PlanTensor{name, plan_dtype_of(infos[k]), infos[k].sizes, {}, false, ""};
  }
}

// Whether a delegate tensor is what the plan describes; the problem goes into `errors`.
void check_io(const TensorInfo& info, const PlanTensor& t, const std::string& where,
              std::vector<std::string>& errors) {
  if (info.named && info.name != t.name) {
    errors.push_back(where + " is '" + info.name + "' in the blob, '" + t.name + "' in the plan");
  }
  const bool half = info.device_dtype == "float16";
  if (info.host_dtype != host_dtype_of(t.dtype) || half != (t.dtype == DType::Float16)) {
    errors.push_back(where + " ('" + t.name + "'): the blob has " +
                     (half ? "float16" : host_dtype_name(info.host_dtype)) + ", the plan " +
                     std::string(to_string(t.dtype)));
  }
  if (info.sizes != t.shape) {
    errors.push_back(where + " ('" + t.name + "'): the blob has shape " + sizes_string(info.sizes) +
                     ", the plan " + sizes_string(t.shape));
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
      check_io(d.input(i), plan.tensor(s.inputs[i]), where + "input " + std::to_string(i), errors);
    }
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      check_io(d.output(i), plan.tensor(s.outputs[i]), where + "output " + std::to_string(i),
               errors);
    }
  }
  throw_if_any(errors);
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

StepTiming timing_of(const PlanStep& s, double wall_us) {
  StepTiming t;
  t.step = s.index;
  t.place = s.on_gpu ? StepPlace::Gpu : StepPlace::Host;
  t.label = s.label();
  t.wall_us = wall_us;
  return t;
}

// Whether the plan is one GPU step reading the model's inputs and writing its outputs, in the
// model's order, none of them float16 (which the API exchanges as float32).
bool takes_the_model_io(const PartitionPlan& plan) {
  if (plan.steps.size() != 1 || !plan.steps[0].on_gpu) return false;
  const PlanStep& s = plan.steps[0];
  if (s.inputs != plan.inputs || s.outputs != plan.outputs) return false;
  for (const auto* names : {&plan.inputs, &plan.outputs}) {
    for (const std::string& name : *names) {
      if (plan.tensor(name).dtype == DType::Float16) return false;
    }
  }
  return true;
}

}  // namespace

std::unique_ptr<PartitionedModel> PartitionedModel::create(PlanFiles files,
                                                           const DelegateOptions& options) {
  std::unique_ptr<PartitionedModel> m(new PartitionedModel(std::move(files)));
  PartitionPlan& plan = m->files_.plan;
  m->delegates_.resize(plan.steps.size());
  for (const PlanStep& s : plan.steps) {
    if (!s.on_gpu) continue;
    std::vector<uint8_t>& blob = m->files_.blobs[s.index];
    m->delegates_[s.index] = load_delegate(blob, options, s.blob_path);
    blob = {};  // the delegate keeps what it needs
    if (plan.from_blob) describe_blob_step(plan, *m->delegates_[s.index]);
    check_delegate_io(plan, s, *m->delegates_[s.index]);
  }
  m->direct_ = takes_the_model_io(plan);
  m->profiling_ = options.profiling;
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

std::vector<StepInfo> PartitionedModel::step_infos() const {
  std::vector<StepInfo> infos;
  for (const PlanStep& s : plan().steps) {
    StepInfo info;
    info.place = s.on_gpu ? StepPlace::Gpu : StepPlace::Host;
    info.label = s.label();
    info.blob = s.blob;
    info.blob_path = s.blob_path;
    info.op = s.op;
    info.origin = s.origin;
    info.inputs = s.inputs;
    info.outputs = s.outputs;
    if (s.on_gpu) info.memory = delegates_[s.index]->memory();
    infos.push_back(std::move(info));
  }
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

void PartitionedModel::set_profiling(Delegate::Profiling mode) {
  VKD_CHECK(mode == Delegate::Profiling::Off || profiling_, ErrorCode::InvalidArgument,
            "set_profiling(", mode == Delegate::Profiling::Span ? "Span" : "PerDispatch",
            "): the model was loaded with options.delegate.profiling off, so its GPU steps "
            "record no timestamps");
  for (const PlanStep& s : plan().steps) {
    if (!s.on_gpu) continue;
    Delegate& d = *delegates_[s.index];
    const Status status = d.set_profiling(mode);
    VKD_CHECK(status == Status::Ok, api::error_code_of(status), plan().path, ": ", s.label(),
              ": set_profiling failed (", status_name(status), "): ", d.last_error());
  }
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
  StepTiming timing = execute_step(s, in.views, out);
  for (size_t i = 0; i < data.size(); ++i) {
    const PlanTensor& t = plan().tensor(s.outputs[i]);
    if (t.dtype == DType::Float16) data[i] = float32_bytes_to_float16(data[i]);
    values[t.name] = HostTensor{t.dtype, t.shape, std::move(data[i])};
  }
  return timing;
}

StepTiming PartitionedModel::execute_step(const PlanStep& s, const std::vector<ConstTensorView>& in,
                                          const std::vector<TensorView>& out) {
  Delegate& d = *delegates_[s.index];
  const auto t0 = std::chrono::steady_clock::now();
  const Status status = d.execute(in, out);
  StepTiming timing = timing_of(s, microseconds_since(t0));
  VKD_CHECK(status == Status::Ok, api::error_code_of(status), plan().path, ": ", s.label(),
            ": execute failed (", status_name(status), "): ", d.last_error());
  timing.profile = d.last_profile();
  return timing;
}

StepTiming PartitionedModel::run_direct(const std::vector<ConstTensorView>& in,
                                        const std::vector<TensorView>& out) {
  VKD_CHECK(direct_, ErrorCode::Internal, plan().path, ": run_direct on a model of ",
            plan().steps.size(), " steps");
  return execute_step(plan().steps.front(), in, out);
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
    throw step_error(plan().path + ": " + s.label(), e);
  }
  StepTiming timing = timing_of(s, microseconds_since(t0));
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

}  // namespace vkd::model
