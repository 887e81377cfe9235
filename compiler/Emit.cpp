#include "compiler/Emit.h"

#include <map>

#include "compiler/SchemaView.h"
#include "core/Error.h"
#include "partitioner_schema/KernelSignatures.h"
#include "partitioner_schema/OpSchema.h"
#include "serialization/Deserializer.h"
#include "serialization/Serializer.h"

namespace vkd::compiler {
namespace {

TensorSpec spec_of(const Value& v) {
  VKD_CHECK(v.storage && v.layout, ErrorCode::Internal, "tensor '", v.name, "' has no placement");
  VKD_CHECK(v.shape.size() <= 4, ErrorCode::Unsupported, "tensor '", v.name, "' has rank ",
            v.shape.size(), "; the backend supports rank <= 4");
  TensorSpec spec{v.shape.empty() ? std::vector<int64_t>{1} : v.shape, v.dtype, *v.storage,
                  *v.layout};
  try {
    validate(spec);
  } catch (const Error& e) {
    // validate() knows only the sizes; say which value of the graph it is.
    throw Error(e.code(), "value '" + v.name + "': " + e.what());
  }
  return spec;
}

}  // namespace

std::vector<uint8_t> emit_blob(const Graph& g, uint64_t source_graph_hash,
                               const serialization::DynamicLength* dynamic) {
  serialization::GraphBuilder b;
  b.set_source_graph_hash(source_graph_hash);
  if (dynamic) b.set_dynamic_length(*dynamic);
  std::map<std::string, serialization::ValueId> ids;
  auto tensor_id = [&](const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    const Value& v = g.value(name);
    return ids[name] = b.add_tensor(spec_of(v), name, v.data);
  };
  // Graph inputs first, then values in the order nodes touch them: stable ids.
  for (const auto& name : g.inputs) tensor_id(name);
  for (const auto& node : g.nodes) {
    const schema::OpSchema* schema = schema::find_op_schema(node.op);
    VKD_CHECK(schema && schema->has_kernel, ErrorCode::Internal, node.origin, ": '", node.op,
              "' reached the serializer without a kernel");
    const auto uses = tensor_uses(node, *schema);
    std::vector<serialization::ValueId> args;
    size_t next_tensor = 0;
    for (const auto& a : schema->args) {
      switch (a.kind) {
        case schema::ArgKind::Tensor:
          args.push_back(tensor_id(uses.at(next_tensor++).value));
          break;
        case schema::ArgKind::TensorList: {
          std::vector<serialization::ValueId> items;
          while (next_tensor < uses.size() && uses[next_tensor].arg == &a) {
            items.push_back(tensor_id(uses[next_tensor++].value));
          }
          args.push_back(b.add_value_list(std::move(items)));
          break;
        }
        case schema::ArgKind::Int: args.push_back(b.add_int(arg_int(node, a.name))); break;
        case schema::ArgKind::Float: args.push_back(b.add_float(arg_float(node, a.name))); break;
        case schema::ArgKind::Bool: args.push_back(b.add_bool(arg_bool(node, a.name))); break;
        case schema::ArgKind::IntList:
          args.push_back(b.add_int_list(arg_ints(node, a.name)));
          break;
        case schema::ArgKind::FloatList: {
          const auto it = node.args.find(a.name);
          const auto* list =
              it == node.args.end() ? nullptr : std::get_if<std::vector<double>>(&it->second);
          VKD_CHECK(list != nullptr, ErrorCode::InvalidArgument, node.origin, ": argument '",
                    a.name, "' must be a list of floats");
          args.push_back(b.add_float_list(*list));
          break;
        }
      }
    }
    b.add_op(node.op, std::move(args));
  }
  std::vector<serialization::ValueId> in, out;
  for (const auto& name : g.inputs) in.push_back(tensor_id(name));
  for (const auto& name : g.outputs) out.push_back(tensor_id(name));
  b.set_inputs(in, g.inputs);
  b.set_outputs(out, g.outputs);
  std::vector<uint8_t> blob = b.finish();
  // The compiler's output goes through the same validation as any blob the runtime loads.
  const auto table = schema::kernel_signatures();
  serialization::deserialize(blob, &table);
  return blob;
}

}  // namespace vkd::compiler
