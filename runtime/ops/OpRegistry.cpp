#include "runtime/ops/OpRegistry.h"

#include <algorithm>
#include <cstring>

#include "partitioner_schema/KernelSignatures.h"
#include "partitioner_schema/OpSchema.h"
#include "runtime/core/Error.h"

namespace vkd::ops {


void OpRegistry::add(std::string_view name, OpBuildFn build) {
  const schema::OpSchema* schema = schema::find_op_schema(name);
  VKD_CHECK(schema != nullptr && schema->has_kernel, ErrorCode::Internal, "op '", name,
            "' is not an op with a kernel in partitioner_schema/OpSchema.cpp");
  VKD_CHECK(find(name) == nullptr, ErrorCode::Internal, "op '", name, "' registered twice");
  VKD_CHECK(build != nullptr, ErrorCode::Internal, "op '", name, "' has no builder");
  OpEntry entry{schema->name, {}, schema->supports_resize, build};
  for (const auto& a : schema->args) {
    entry.args.push_back({a.name, schema::to_value_kind(a.kind), a.output});
  }
  entries_.push_back(std::move(entry));
}

const OpEntry* OpRegistry::find(std::string_view name) const {
  for (const auto& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

serialization::OpSignatureTable OpRegistry::signatures() const {
  serialization::OpSignatureTable table;
  for (const auto& e : entries_) {
    table.emplace(e.name, schema::signature_of(*schema::find_op_schema(e.name)));
  }
  return table;
}

const OpRegistry& op_registry() {
  // Built on first use (thread-safe static init), never modified afterwards.
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_quantize_ops(r);
    register_affine_quant_ops(r);
    register_layout_convert_ops(r);
    register_linear_ops(r);
    register_conv2d_ops(r);
    register_pixel_shuffle_ops(r);
    register_elementwise_ops(r);
    register_pool_ops(r);
    return r;
  }();
  return registry;
}

OpCall::OpCall(graph::ComputeGraph& graph, const OpEntry& entry, size_t index,
               const serialization::DeserializedGraph& blob, const TensorResolver& tensor_for,
               const std::vector<serialization::ValueId>& args)
    : graph_(graph),
      entry_(entry),
      label_("op " + std::to_string(index) + " '" + entry.name + "'"),
      blob_(blob),
      tensor_for_(tensor_for),
      args_(args) {
  VKD_CHECK(args.size() == entry.args.size(), ErrorCode::InvalidArgument, label_, ": takes ",
            entry.args.size(), " arguments, the blob gives ", args.size());
}

const serialization::Value& OpCall::value(size_t arg, ValueKind kind) const {
  VKD_CHECK(arg < args_.size() && entry_.args[arg].kind == kind, ErrorCode::Internal, label_,
            ": argument ", arg, " read as ", serialization::to_string(kind));
  const serialization::Value& v = blob_.values.at(args_[arg]);
  VKD_CHECK(serialization::kind_of(v) == kind, ErrorCode::InvalidArgument, label_,
            ": argument '", entry_.args[arg].name, "' (value ", args_[arg], ") is a ",
            serialization::to_string(serialization::kind_of(v)), ", expected ",
            serialization::to_string(kind));
  return v;
}

graph::ValueRef OpCall::tensor(size_t arg) const {
  value(arg, ValueKind::Tensor);
  return tensor_for_(args_[arg]);
}

const serialization::TensorValue& OpCall::constant(size_t arg) const {
  const auto& t = std::get<serialization::TensorValue>(value(arg, ValueKind::Tensor));
  VKD_CHECK(t.constant.has_value(), ErrorCode::InvalidArgument, label_, ": argument '",
            entry_.args[arg].name, "' (value ", args_[arg], ") must be a constant");
  return t;
}

std::shared_ptr<const OpCall::ChannelFloats> OpCall::channel_floats(size_t scales_arg,
                                                                    size_t bias_arg) const {
  const auto copy_floats = [this](size_t arg) {
    // The loader checked the dtype against the schema, deserialize() the byte count.
    const serialization::TensorValue& t = constant(arg);
    VKD_CHECK(t.spec.dtype == DType::Float32, ErrorCode::Internal, label_, ": argument '",
              entry_.args[arg].name, "' read as float32 but is ", t.spec.describe());
    std::vector<float> values(static_cast<size_t>(t.spec.numel()));
    if (!values.empty()) std::memcpy(values.data(), t.constant->data, t.constant->size);
    return values;
  };
  return std::make_shared<const ChannelFloats>(
      ChannelFloats{copy_floats(scales_arg), copy_floats(bias_arg)});
}

double OpCall::float_arg(size_t arg) const {
  return std::get<serialization::FloatValue>(value(arg, ValueKind::Float)).value;
}

int64_t OpCall::int_arg(size_t arg) const {
  return std::get<serialization::IntValue>(value(arg, ValueKind::Int)).value;
}

QuantParams OpCall::quant_params(size_t scale_arg) const {
  return {static_cast<float>(float_arg(scale_arg)), int32_arg(scale_arg + 1, -128, 127), -128, 127};
}

int32_t OpCall::int32_arg(size_t arg, int64_t lo, int64_t hi) const {
  const int64_t v = int_arg(arg);
  VKD_CHECK(v >= lo && v <= hi, ErrorCode::InvalidArgument, label_, ": argument '",
            entry_.args[arg].name, "' is ", v, ", outside [", lo, ", ", hi, "]");
  return static_cast<int32_t>(v);
}

std::vector<int32_t> OpCall::int32_list(size_t arg, std::initializer_list<size_t> lengths,
                                        int64_t lo, int64_t hi) const {
  const std::vector<int64_t> v = int_list(arg);
  std::string allowed;
  for (size_t n : lengths) allowed += (allowed.empty() ? "" : " or ") + std::to_string(n);
  VKD_CHECK(std::find(lengths.begin(), lengths.end(), v.size()) != lengths.end(),
            ErrorCode::InvalidArgument, label_, ": argument '", entry_.args[arg].name, "' has ",
            v.size(), " values, expected ", allowed);
  std::vector<int32_t> out;
  for (int64_t x : v) {
    VKD_CHECK(x >= lo && x <= hi, ErrorCode::InvalidArgument, label_, ": argument '",
              entry_.args[arg].name, "' value ", x, " is outside [", lo, ", ", hi, "]");
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

bool OpCall::bool_arg(size_t arg) const {
  return std::get<serialization::BoolValue>(value(arg, ValueKind::Bool)).value;
}

std::vector<int64_t> OpCall::int_list(size_t arg) const {
  return std::get<serialization::IntListValue>(value(arg, ValueKind::IntList)).items;
}

void OpCall::set_zero_point(size_t tensor_arg, int32_t zero_point) const {
  graph_.set_zero_point(tensor(tensor_arg), zero_point);
}

}  // namespace vkd::ops
