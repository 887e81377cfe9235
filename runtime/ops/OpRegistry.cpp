#include "runtime/ops/OpRegistry.h"

#include <algorithm>
#include <cstring>

#include "core/Error.h"
#include "partitioner_schema/KernelSignatures.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::ops {

// The op families, each defined at the end of its own runtime/ops/<Family>.cpp as
// register_<family>_ops: the list is made from that folder at configure time
// (cmake/VkdFamilyLists.cmake), in file-name order. Each family registers different ops, so the
// order changes nothing.
#define VKD_FAMILY(family) void register_##family##_ops(OpRegistry& registry);
#include "runtime/ops/OpFamilies.inc"
#undef VKD_FAMILY

void OpRegistry::add(std::string_view name, OpBuildFn build) {
  const schema::OpSchema* schema = schema::find_op_schema(name);
  VKD_CHECK(schema != nullptr && schema->has_kernel, ErrorCode::Internal, "op '", name,
            "' is not an op with a kernel in partitioner_schema/ops/");
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
#define VKD_FAMILY(family) register_##family##_ops(r);
#include "runtime/ops/OpFamilies.inc"
#undef VKD_FAMILY
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

size_t OpCall::position(std::string_view arg) const {
  for (size_t i = 0; i < entry_.args.size(); ++i) {
    if (entry_.args[i].name == arg) return i;
  }
  VKD_THROW(ErrorCode::Internal, label_, ": builder reads argument '", arg,
            "', which the schema of ", entry_.name, " does not have");
}

serialization::ValueId OpCall::value_id(std::string_view arg, ValueKind kind) const {
  const size_t i = position(arg);
  VKD_CHECK(entry_.args[i].kind == kind, ErrorCode::Internal, label_, ": argument '", arg,
            "' read as ", serialization::to_string(kind));
  const serialization::ValueKind actual = serialization::kind_of(blob_.values.at(args_[i]));
  VKD_CHECK(actual == kind, ErrorCode::InvalidArgument, label_, ": argument '", arg, "' (value ",
            args_[i], ") is a ", serialization::to_string(actual), ", expected ",
            serialization::to_string(kind));
  return args_[i];
}

const serialization::Value& OpCall::value(std::string_view arg, ValueKind kind) const {
  return blob_.values.at(value_id(arg, kind));
}

graph::ValueRef OpCall::tensor(std::string_view arg) const {
  return tensor_for_(value_id(arg, ValueKind::Tensor));
}

std::vector<graph::ValueRef> OpCall::tensor_list(std::string_view arg) const {
  const serialization::ValueId id = value_id(arg, ValueKind::ValueList);
  const auto& items = std::get<serialization::ValueListValue>(blob_.values.at(id)).items;
  VKD_CHECK(!items.empty(), ErrorCode::InvalidArgument, label_, ": argument '", arg, "' (value ",
            id, ") lists no tensor");
  std::vector<graph::ValueRef> refs;
  for (serialization::ValueId item : items) {
    const serialization::ValueKind kind = serialization::kind_of(blob_.values.at(item));
    VKD_CHECK(kind == ValueKind::Tensor, ErrorCode::InvalidArgument, label_, ": argument '", arg,
              "' lists value ", item, ", a ", serialization::to_string(kind), ", not a tensor");
    refs.push_back(tensor_for_(item));
  }
  return refs;
}

const serialization::TensorValue& OpCall::constant(std::string_view arg) const {
  const serialization::ValueId id = value_id(arg, ValueKind::Tensor);
  const auto& t = std::get<serialization::TensorValue>(blob_.values.at(id));
  VKD_CHECK(t.constant.has_value(), ErrorCode::InvalidArgument, label_, ": argument '", arg,
            "' (value ", id, ") must be a constant");
  return t;
}

std::shared_ptr<const OpCall::ChannelFloats> OpCall::channel_floats(
    std::string_view scales_arg, std::string_view bias_arg) const {
  const auto copy_floats = [this](std::string_view arg) {
    // The loader checked the dtype against the schema, deserialize() the byte count.
    const serialization::TensorValue& t = constant(arg);
    VKD_CHECK(t.spec.dtype == DType::Float32, ErrorCode::Internal, label_, ": argument '", arg,
              "' read as float32 but is ", t.spec.describe());
    std::vector<float> values(static_cast<size_t>(t.spec.numel()));
    if (!values.empty()) std::memcpy(values.data(), t.constant->data, t.constant->size);
    return values;
  };
  return std::make_shared<const ChannelFloats>(
      ChannelFloats{copy_floats(scales_arg), copy_floats(bias_arg)});
}

double OpCall::float_arg(std::string_view arg) const {
  return std::get<serialization::FloatValue>(value(arg, ValueKind::Float)).value;
}

int64_t OpCall::int_arg(std::string_view arg) const {
  return std::get<serialization::IntValue>(value(arg, ValueKind::Int)).value;
}

QuantParams OpCall::quant(std::string_view tensor) const {
  const std::string prefix = std::string(tensor) + "_";
  return {static_cast<float>(float_arg(prefix + "scale")),
          int32_arg(prefix + "zero_point", -128, 127), -128, 127};
}

int32_t OpCall::int32_arg(std::string_view arg, int64_t lo, int64_t hi) const {
  const int64_t v = int_arg(arg);
  VKD_CHECK(v >= lo && v <= hi, ErrorCode::InvalidArgument, label_, ": argument '", arg, "' is ", v,
            ", outside [", lo, ", ", hi, "]");
  return static_cast<int32_t>(v);
}

std::vector<int32_t> OpCall::int32_list(std::string_view arg, std::initializer_list<size_t> lengths,
                                        int64_t lo, int64_t hi) const {
  const std::vector<int64_t> v = int_list(arg);
  std::string allowed;
  for (size_t n : lengths) allowed += (allowed.empty() ? "" : " or ") + std::to_string(n);
  VKD_CHECK(std::find(lengths.begin(), lengths.end(), v.size()) != lengths.end(),
            ErrorCode::InvalidArgument, label_, ": argument '", arg, "' has ", v.size(),
            " values, expected ", allowed);
  std::vector<int32_t> out;
  for (int64_t x : v) {
    VKD_CHECK(x >= lo && x <= hi, ErrorCode::InvalidArgument, label_, ": argument '", arg,
              "' value ", x, " is outside [", lo, ", ", hi, "]");
    out.push_back(static_cast<int32_t>(x));
  }
  return out;
}

bool OpCall::bool_arg(std::string_view arg) const {
  return std::get<serialization::BoolValue>(value(arg, ValueKind::Bool)).value;
}

std::vector<int64_t> OpCall::int_list(std::string_view arg) const {
  return std::get<serialization::IntListValue>(value(arg, ValueKind::IntList)).items;
}

std::vector<double> OpCall::float_list(std::string_view arg) const {
  return std::get<serialization::FloatListValue>(value(arg, ValueKind::FloatList)).items;
}

void OpCall::set_zero_point(std::string_view tensor_arg, int32_t zero_point) const {
  graph_.set_zero_point(tensor(tensor_arg), zero_point);
}

}  // namespace vkd::ops
