// The CPU reference interpreter's driver: the op-name -> reference function lookup and
// interpret(), which runs the nodes in order and checks what they produce against the
// graph's declarations. The ops themselves are in compiler/reference/ (one file per family).
#include "compiler/Interpreter.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "compiler/ops/EdgeOp.h"
#include "compiler/reference/Reference.h"
#include "compiler/reference/ReferenceContext.h"
#include "core/Error.h"

namespace vkd::compiler {

using namespace reference;  // the element helpers (compiler/reference/ReferenceContext.h)

namespace {

// The descriptor of edge op `op` ("aten.relu" or "aten.relu.default", compiler/ops/); nullptr
// when the interpreter does not know it.
const EdgeOp* find_descriptor(const std::string& op) {
  const EdgeOp* d = find_edge_op(op);
  const std::string suffix = ".default";
  if (d == nullptr && op.size() > suffix.size() &&
      op.compare(op.size() - suffix.size(), suffix.size(), suffix) == 0) {
    d = find_edge_op(op.substr(0, op.size() - suffix.size()));
  }
  return d;
}

// The reference function of edge op `op`; nullptr when the interpreter does not know it.
ReferenceFn find_reference(const std::string& op) {
  const EdgeOp* d = find_descriptor(op);
  return d == nullptr ? nullptr : d->reference;
}

// Checks that `t` agrees with the declared value `v`; `what` names it in the message.
void check_against(const Value& v, const HostTensor& t, const std::string& what) {
  VKD_CHECK(t.dtype == v.dtype, ErrorCode::InvalidArgument, what, " has dtype ", to_string(t.dtype),
            ", the graph declares ", to_string(v.dtype));
  VKD_CHECK(t.shape == v.shape, ErrorCode::InvalidArgument, what, " has shape ", shape_str(t.shape),
            ", the graph declares ", shape_str(v.shape));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// host_refusal

std::optional<std::string> host_refusal(const Node& node) {
  const EdgeOp* d = find_descriptor(node.op);
  if (d == nullptr || d->reference == nullptr) {
    return "the CPU reference interpreter has no function for '" + node.op + "'";
  }
  return d->refused_on_host == nullptr ? std::nullopt : d->refused_on_host(node);
}

// ---------------------------------------------------------------------------------------------
// interpret

std::map<std::string, HostTensor> interpret(const Graph& g,
                                            const std::map<std::string, HostTensor>& inputs) {
  std::map<std::string, HostTensor> values;

  // Inputs: exactly the graph's, with the declared dtype, shape and byte count.
  for (const auto& [name, t] : inputs) {
    VKD_CHECK(std::find(g.inputs.begin(), g.inputs.end(), name) != g.inputs.end(),
              ErrorCode::InvalidArgument, "input '", name, "' is not an input of the graph");
  }
  for (const std::string& name : g.inputs) {
    auto it = inputs.find(name);
    VKD_CHECK(it != inputs.end(), ErrorCode::InvalidArgument, "input '", name, "' is missing");
    const HostTensor& t = it->second;
    const Value& v = g.value(name);
    check_against(v, t, "input '" + name + "'");
    VKD_CHECK(elem_bytes(t.dtype) != 0, ErrorCode::Unsupported, "input '", name, "': dtype ",
              to_string(t.dtype), " is not supported by the interpreter");
    VKD_CHECK(t.bytes.size() == static_cast<size_t>(t.numel()) * elem_bytes(t.dtype),
              ErrorCode::InvalidArgument, "input '", name, "' holds ", t.bytes.size(),
              " bytes, its shape ", shape_str(t.shape), " and dtype need ",
              t.numel() * static_cast<int64_t>(elem_bytes(t.dtype)));
    values[name] = t;
  }

  // Constants.
  for (const std::string& name : g.value_names()) {
    const Value& v = g.value(name);
    if (!v.is_constant() || values.count(name)) continue;
    VKD_CHECK(elem_bytes(v.dtype) != 0, ErrorCode::Unsupported, "constant '", name, "': dtype ",
              to_string(v.dtype), " is not supported by the interpreter");
    check_shape_valid(v.shape, "constant '" + name + "'");
    const size_t need = static_cast<size_t>(element_count(v.shape)) * elem_bytes(v.dtype);
    VKD_CHECK(v.data->size() == need, ErrorCode::InvalidArgument, "constant '", name, "' holds ",
              v.data->size(), " bytes, its shape ", shape_str(v.shape), " and dtype need ", need);
    values[name] = HostTensor{v.dtype, v.shape, *v.data};
  }

  // Nodes, in execution order.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    ReferenceContext ctx(g, node, i, values);
    const ReferenceFn fn = find_reference(node.op);
    if (fn == nullptr) {
      ctx.fail(ErrorCode::Unsupported,
               "op '" + node.op + "' is not an edge op the interpreter knows");
    }
    std::vector<HostTensor> outs = fn(ctx);
    ctx.require(
        node.outputs.size() == outs.size(),
        detail::concat("has ", node.outputs.size(), " outputs, the op produces ", outs.size()));
    for (size_t k = 0; k < outs.size(); ++k) {
      const std::string& name = node.outputs[k];
      ctx.require(!name.empty(), detail::concat("output ", k, " has no name"));
      ctx.require(values.count(name) == 0,
                  "output '" + name + "' is already defined (input, constant or earlier node)");
      if (g.has_value(name)) {
        check_against(g.value(name), outs[k], ctx.label() + ": output '" + name + "'");
      }
      values[name] = std::move(outs[k]);
    }
  }
  return values;
}

}  // namespace vkd::compiler
