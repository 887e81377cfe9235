#include "model/PlanFiles.h"

#include <cstring>
#include <limits>

#include "compiler/Safetensors.h"
#include "core/Error.h"
#include "core/InputFile.h"
#include "core/TensorSpec.h"
#include "serialization/Blob.h"

namespace vkd::model {
namespace {

using compiler::HostTensor;

// Every blob the plan names, all unreadable ones in one error.
std::vector<std::vector<uint8_t>> read_blobs(const PartitionPlan& plan) {
  std::vector<std::vector<uint8_t>> blobs(plan.steps.size());
  std::vector<std::string> errors;
  for (const PlanStep& s : plan.steps) {
    if (!s.on_gpu) continue;
    try {
      blobs[s.index] = read_blob_file(s.blob_path, Symlinks::Refuse);
    } catch (const Error& e) {
      errors.push_back(plan.path + ": " + s.label() + ": " + e.what());
    }
  }
  throw_if_any(errors);
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
    VKD_CHECK(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(),
              ErrorCode::InvalidArgument, where, ": int64 value ", v, " does not fit int32");
    const int32_t narrow = static_cast<int32_t>(v);
    std::memcpy(out.bytes.data() + 4 * i, &narrow, 4);
  }
  return out;
}

compiler::SafetensorsFile read_weights(const std::string& weights_path) {
  try {
    return compiler::SafetensorsFile::from_bytes(
        read_input_file(weights_path, "weights file", kMaxWeightsFileBytes), weights_path);
  } catch (const Error& e) {
    throw Error(ErrorCode::InvalidArgument, e.what());  // a bad file is the caller's to fix
  }
}

// The constants the host steps read, from the original weights file.
TensorMap read_constants(const PartitionPlan& plan, const std::string& weights_path) {
  const compiler::SafetensorsFile file = read_weights(weights_path);
  TensorMap constants;
  std::vector<std::string> errors;
  for (const auto& [name, t] : plan.tensors) {
    if (!t.constant) continue;
    const std::string where =
        plan.path + ": " + reader_of(plan, name).label() + ": constant '" + name + "'";
    const compiler::SafetensorsTensorView* view = file.find(t.weights_name);
    if (view == nullptr) {
      errors.push_back(where + ": no tensor '" + t.weights_name + "' in " + weights_path +
                       (t.weights_name == name ? " (constants are looked up by value name)"
                                               : " (the name the plan gives under 'data')"));
    } else if (!stored_as(t.dtype, view->dtype) || view->shape != t.shape) {
      errors.push_back(where + ": " + weights_path + " holds " + view->dtype + " " +
                       sizes_string(view->shape) + ", the plan expects " +
                       std::string(to_string(t.dtype)) + " " + sizes_string(t.shape));
    } else {
      constants[name] = constant_tensor(t, *view, where);
    }
  }
  throw_if_any(errors);
  return constants;
}

std::string first_constant_reader(const PartitionPlan& plan) {
  for (const auto& [name, t] : plan.tensors) {
    if (t.constant) return reader_of(plan, name).label() + " reads constant '" + name + "'";
  }
  return "";
}

// The weights file is needed when a host step reads a constant (and unused otherwise: the
// caller says so, vkd run on stderr).
void check_weights_given(const PartitionPlan& plan,
                         const std::optional<std::string>& weights_path) {
  VKD_CHECK(!plan.needs_weights() || weights_path, ErrorCode::InvalidArgument, plan.path, ": ",
            first_constant_reader(plan),
            ": pass --weights W.safetensors (the original graph's weights)");
}

// A blob as a plan of one GPU step (its tensors come from its delegate).
PlanFiles blob_files(const std::string& path) {
  PlanFiles f;
  f.plan.path = path;
  f.plan.from_blob = true;
  PlanStep step;
  step.on_gpu = true;
  step.blob = step.blob_path = path;
  f.plan.steps.push_back(step);
  f.blobs.push_back(read_blob_file(path, Symlinks::Follow));
  f.host_graphs.resize(1);
  return f;
}

PlanFiles plan_files(const std::string& plan_path, const std::optional<std::string>& weights_path) {
  PlanFiles f;
  f.plan = read_partition_plan(plan_path);
  f.blobs = read_blobs(f.plan);
  check_weights_given(f.plan, weights_path);
  if (f.plan.needs_weights()) f.constants = read_constants(f.plan, *weights_path);
  f.host_graphs.resize(f.plan.steps.size());
  for (const PlanStep& s : f.plan.steps) {
    if (!s.on_gpu) f.host_graphs[s.index] = host_step_graph(f.plan, s, f.constants);
  }
  return f;
}

}  // namespace

std::vector<uint8_t> read_blob_file(const std::string& path, Symlinks symlinks) {
  InputFileRules rules;
  rules.symlinks = symlinks;
  rules.magic = std::string_view(serialization::kBlobMagic, sizeof serialization::kBlobMagic);
  rules.kind = "a vkdelegate blob";
  return read_input_file(path, "model file", kMaxModelFileBytes, rules);
}

PlanFiles read_model_files(const std::string& path,
                           const std::optional<std::string>& weights_path) {
  return is_partition_plan_path(path) ? plan_files(path, weights_path) : blob_files(path);
}

}  // namespace vkd::model
