#include "runtime/delegate/GraphLoader.h"

#include <algorithm>
#include <sstream>

#include "core/Error.h"
#include "partitioner_schema/KernelSignatures.h"
#include "partitioner_schema/OpSchema.h"
#include "runtime/ops/OpRegistry.h"

namespace vkd::delegate {
namespace {

using serialization::DeserializedGraph;
using serialization::TensorValue;
using serialization::ValueId;
using serialization::ValueKind;

const TensorValue* as_tensor(const DeserializedGraph& g, ValueId id) {
  return std::get_if<TensorValue>(&g.values.at(id));
}

std::string value_name(const DeserializedGraph& g, ValueId id) {
  const TensorValue* t = as_tensor(g, id);
  if (t && !t->name.empty()) return t->name;
  return "v" + std::to_string(id);
}

// The tensor values an argument of `kind` names: itself, or a tensor list's items.
std::vector<ValueId> tensor_ids(const DeserializedGraph& g, ValueKind kind, ValueId id) {
  if (kind == ValueKind::Tensor) return {id};
  if (kind != ValueKind::ValueList) return {};
  return std::get<serialization::ValueListValue>(g.values.at(id)).items;
}

// "scale=0.02", "input=x", "inputs=[a,b]" for `vkd inspect`.
std::string describe_arg(const DeserializedGraph& g, const ops::ArgSpec& spec, ValueId id) {
  std::ostringstream os;
  os << spec.name << "=";
  const auto& v = g.values.at(id);
  if (std::holds_alternative<TensorValue>(v)) {
    os << value_name(g, id);
  } else if (const auto* i = std::get_if<serialization::IntValue>(&v)) {
    os << i->value;
  } else if (const auto* f = std::get_if<serialization::FloatValue>(&v)) {
    os << f->value;
  } else if (const auto* b = std::get_if<serialization::BoolValue>(&v)) {
    os << (b->value ? "true" : "false");
  } else if (const auto* l = std::get_if<serialization::IntListValue>(&v)) {
    os << "[";
    for (size_t k = 0; k < l->items.size(); ++k) os << (k ? "," : "") << l->items[k];
    os << "]";
  } else if (const auto* t = std::get_if<serialization::ValueListValue>(&v)) {
    os << "[";
    for (size_t k = 0; k < t->items.size(); ++k) os << (k ? "," : "") << value_name(g, t->items[k]);
    os << "]";
  } else {
    os << "<" << serialization::to_string(serialization::kind_of(v)) << ">";
  }
  return os.str();
}

// Who writes each tensor value; checked before any GPU object exists.
void check_data_flow(const DeserializedGraph& g, const ops::OpRegistry& registry) {
  enum class Source { None, Constant, Input, Op };
  std::vector<Source> source(g.values.size(), Source::None);
  for (size_t id = 0; id < g.values.size(); ++id) {
    const TensorValue* t = as_tensor(g, static_cast<ValueId>(id));
    if (t && t->constant) source[id] = Source::Constant;
  }
  for (const auto& in : g.inputs) source[in.value] = Source::Input;
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const auto& call = g.ops[k];
    const ops::OpEntry* entry = registry.find(call.name);
    VKD_CHECK(entry != nullptr, ErrorCode::Unsupported, "op ", k, " '", call.name,
              "' is not supported by this runtime");
    VKD_CHECK(call.args.size() == entry->args.size(), ErrorCode::InvalidArgument, "op ", k, " '",
              call.name, "': takes ", entry->args.size(), " arguments, the blob gives ",
              call.args.size());
    // Reads first: an op may not read what it writes.
    for (size_t a = 0; a < call.args.size(); ++a) {
      if (entry->args[a].output) continue;
      for (const ValueId id : tensor_ids(g, entry->args[a].kind, call.args[a])) {
        VKD_CHECK(as_tensor(g, id) != nullptr, ErrorCode::InvalidArgument, "op ", k, " '",
                  call.name, "': argument '", entry->args[a].name, "' lists value ", id,
                  ", which is not a tensor");
        VKD_CHECK(source[id] != Source::None, ErrorCode::InvalidArgument, "op ", k, " '", call.name,
                  "': argument '", entry->args[a].name, "' reads tensor '", value_name(g, id),
                  "' (value ", id,
                  ") before any op writes it (not a constant or graph input either)");
      }
    }
    for (size_t a = 0; a < call.args.size(); ++a) {
      if (!entry->args[a].output) continue;
      const ValueId id = call.args[a];
      const char* why = source[id] == Source::Constant ? "a constant"
                        : source[id] == Source::Input  ? "a graph input"
                        : source[id] == Source::Op     ? "already written by an earlier op"
                                                       : nullptr;
      VKD_CHECK(why == nullptr, ErrorCode::InvalidArgument, "op ", k, " '", call.name,
                "': output '", entry->args[a].name, "' is tensor '", value_name(g, id), "' (value ",
                id, "), which is ", why);
      source[id] = Source::Op;
    }
  }
  for (const auto& out : g.outputs) {
    VKD_CHECK(source[out.value] == Source::Op || source[out.value] == Source::Input,
              ErrorCode::InvalidArgument, "graph output '", value_name(g, out.value), "' (value ",
              out.value, ") is never written by an op");
  }
}

// Tensor `id`, given for argument `arg` of op call `k`, against the argument's schema.
void check_tensor_argument(const DeserializedGraph& g, size_t k, const serialization::OpCall& call,
                           const schema::OpSchema& schema, const schema::ArgSchema& arg,
                           ValueId id) {
  const TensorValue& t = *as_tensor(g, id);
  const std::string what = "op " + std::to_string(k) + " '" + call.name + "': argument '" +
                           arg.name + "' (tensor '" + value_name(g, id) + "')";
  std::string accepted;
  for (DType d : arg.dtypes)
    accepted += (accepted.empty() ? "" : " or ") + std::string(to_string(d));
  VKD_CHECK(std::find(arg.dtypes.begin(), arg.dtypes.end(), t.spec.dtype) != arg.dtypes.end(),
            ErrorCode::InvalidArgument, what, " is ", to_string(t.spec.dtype), ", expected ",
            accepted);
  if (!arg.constant) return;
  VKD_CHECK(t.constant.has_value(), ErrorCode::InvalidArgument, what,
            " must be a constant in the blob");
  VKD_CHECK(arg.constant_rank == 0 || t.spec.sizes.size() == static_cast<size_t>(arg.constant_rank),
            ErrorCode::InvalidArgument, what, " is ", t.spec.describe(), ", expected rank ",
            arg.constant_rank);
  if (arg.count_is_dim0_of.empty()) return;
  const int of = schema.arg_index(arg.count_is_dim0_of);
  VKD_CHECK(of >= 0, ErrorCode::Internal, "schema of '", call.name, "' names no argument '",
            arg.count_is_dim0_of, "'");
  const TensorValue& other = *as_tensor(g, call.args[static_cast<size_t>(of)]);
  VKD_CHECK(!other.spec.sizes.empty() && t.spec.numel() == other.spec.sizes[0],
            ErrorCode::InvalidArgument, what, " holds ", t.spec.numel(),
            " values, expected one per output channel (dim 0 of '", arg.count_is_dim0_of, "' ",
            other.spec.describe(), ")");
}

// Every tensor argument against the op's schema: dtype, constant-ness and, for constants the
// builders read on the host (weights, scales, bias), rank and element count. Checked before any
// builder runs, so no builder reads a constant's bytes as a type or count the blob did not
// promise (their byte sizes were checked against dtype x shape by deserialize()).
void check_tensor_arguments(const DeserializedGraph& g) {
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const auto& call = g.ops[k];
    const schema::OpSchema* schema = schema::find_op_schema(call.name);
    VKD_CHECK(schema != nullptr && schema->args.size() == call.args.size(), ErrorCode::Internal,
              "op '", call.name, "' is registered without a matching schema");
    for (size_t a = 0; a < call.args.size(); ++a) {
      const schema::ArgSchema& arg = schema->args[a];
      for (const ValueId id : tensor_ids(g, schema::to_value_kind(arg.kind), call.args[a])) {
        check_tensor_argument(g, k, call, *schema, arg, id);
      }
    }
  }
}

}  // namespace

DeserializedGraph read_blob(const uint8_t* blob, size_t size) {
  const auto signatures = ops::op_registry().signatures();
  return serialization::deserialize(blob, size, &signatures);
}

LoadedGraph load_graph(vk::Context& context, const uint8_t* blob, size_t size,
                       uint64_t constant_batch_bytes, bool expose_intermediates, bool timestamps) {
  return load_graph(context, read_blob(blob, size), constant_batch_bytes, expose_intermediates,
                    timestamps);
}

LoadedGraph load_graph(vk::Context& context, const DeserializedGraph& g,
                       uint64_t constant_batch_bytes, bool expose_intermediates, bool timestamps,
                       std::shared_ptr<graph::SharedGraphMemory> shared) {
  const ops::OpRegistry& registry = ops::op_registry();
  check_data_flow(g, registry);
  check_tensor_arguments(g);

  LoadedGraph out;
  out.graph = std::make_unique<graph::ComputeGraph>(context);
  graph::ComputeGraph& graph = *out.graph;
  graph.set_constant_batch_bytes(constant_batch_bytes);

  // GPU tensors are created when an op (or the graph's inputs/outputs) first asks for them, so
  // a constant an op prepacks into its own form never gets a default copy on the device.
  std::vector<graph::ValueRef> tensor_of_value(g.values.size(), -1);
  const ops::OpCall::TensorResolver tensor_for = [&](ValueId id) -> graph::ValueRef {
    if (tensor_of_value.at(id) >= 0) return tensor_of_value[id];
    const TensorValue* t = as_tensor(g, id);
    VKD_CHECK(t != nullptr, ErrorCode::Internal, "value ", id, " is not a tensor");
    const std::string name = value_name(g, id);
    if (!t->constant) return tensor_of_value[id] = graph.add_tensor(t->spec, name);
    // The int8x4 padding value is the zero point the consuming op declares, known only after
    // the ops are built, so the packer asks the graph when it runs (during prepare()).
    const auto ref = static_cast<graph::ValueRef>(graph.tensor_count());
    const uint8_t* bytes = t->constant->data;
    const size_t count = t->constant->size;
    const TensorSpec spec = t->spec;
    graph::ComputeGraph* gp = &graph;
    return tensor_of_value[id] = graph.add_constant(
               spec, name,
               [gp, ref, spec, bytes, count]() {
                 const auto pad = static_cast<int8_t>(gp->zero_point(ref).value_or(0));
                 return graph::nchw_constant_packer(spec, bytes, count, pad)();
               },
               count);
  };

  for (size_t k = 0; k < g.ops.size(); ++k) {
    const auto& call = g.ops[k];
    const ops::OpEntry& entry = *registry.find(call.name);
    LoadedOp op{call.name, {}, graph.nodes().size(), 0};
    for (size_t a = 0; a < call.args.size(); ++a) {
      op.args.push_back(describe_arg(g, entry.args[a], call.args[a]));
    }
    try {
      entry.build(ops::OpCall(graph, entry, k, g, tensor_for, call.args));
    } catch (const Error& e) {
      // Name the op call in the blob, whatever layer the message came from.
      const std::string label = "op " + std::to_string(k) + " '" + call.name + "'";
      const std::string message = e.what();
      if (message.rfind(label, 0) == 0) throw;
      throw Error(e.code(), label + ": " + message);
    }
    op.node_count = graph.nodes().size() - op.first_node;
    out.ops.push_back(std::move(op));
    if (!entry.supports_resize) out.ops_without_resize.push_back(call.name);
  }

  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const auto& io = g.inputs[i];
    const graph::ValueRef ref = tensor_for(io.value);
    graph.add_input(ref);
    out.inputs.push_back({io.name.empty() ? graph.tensor(ref).name() : io.name, !io.name.empty(),
                          ref, graph.spec(ref)});
  }
  std::vector<bool> is_output(g.values.size(), false);
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const auto& io = g.outputs[i];
    const graph::ValueRef ref = tensor_for(io.value);
    graph.add_output(ref);
    is_output[io.value] = true;
    out.outputs.push_back({io.name.empty() ? graph.tensor(ref).name() : io.name, !io.name.empty(),
                           ref, graph.spec(ref)});
  }
  for (size_t k = 0; expose_intermediates && k < g.ops.size(); ++k) {
    const auto& call = g.ops[k];
    const ops::OpEntry& entry = *registry.find(call.name);
    for (size_t a = 0; a < call.args.size(); ++a) {
      if (!entry.args[a].output || is_output[call.args[a]]) continue;
      const graph::ValueRef ref = tensor_for(call.args[a]);
      graph.add_output(ref);
      is_output[call.args[a]] = true;
      out.outputs.push_back({graph.tensor(ref).name(), true, ref, graph.spec(ref)});
    }
  }
  graph.set_timestamps(timestamps);
  if (shared) graph.set_shared_memory(std::move(shared));
  graph.prepare();
  return out;
}

}  // namespace vkd::delegate
