#include "compiler/SchemaView.h"

#include <algorithm>

#include "core/Error.h"

namespace vkd::compiler {

namespace {

// How many of the node's inputs the TensorList argument `a` takes when `taken` went to the
// arguments before it: all but one per input tensor argument after it.
size_t list_length(const Node& node, const schema::OpSchema& schema, size_t a, size_t taken) {
  size_t after = 0;
  for (size_t b = a + 1; b < schema.args.size(); ++b) {
    after += holds_tensors(schema.args[b]) && !schema.args[b].output;
  }
  return node.inputs.size() > taken + after ? node.inputs.size() - taken - after : 0;
}

}  // namespace

std::vector<TensorUse> tensor_uses(const Node& node, const schema::OpSchema& schema) {
  std::vector<TensorUse> uses;
  size_t in = 0, out = 0;
  for (size_t a = 0; a < schema.args.size(); ++a) {
    const schema::ArgSchema& arg = schema.args[a];
    if (!holds_tensors(arg)) continue;
    const auto& list = arg.output ? node.outputs : node.inputs;
    size_t& next = arg.output ? out : in;
    const size_t count = arg.kind == schema::ArgKind::TensorList
                             ? std::max<size_t>(list_length(node, schema, a, in), 1)
                             : 1;
    for (size_t k = 0; k < count; ++k) {
      VKD_CHECK(next < list.size(), ErrorCode::InvalidArgument, node.origin, ": ", schema.name,
                " needs tensor '", arg.name, "' (", arg.output ? "output " : "input ", next, ")");
      uses.push_back({list[next], &arg, static_cast<int>(a), arg.output});
      ++next;
    }
  }
  VKD_CHECK(in == node.inputs.size() && out == node.outputs.size(), ErrorCode::InvalidArgument,
            node.origin, ": ", schema.name, " takes ", in, " input and ", out,
            " output tensors, the node has ", node.inputs.size(), " and ", node.outputs.size());
  return uses;
}

}  // namespace vkd::compiler
