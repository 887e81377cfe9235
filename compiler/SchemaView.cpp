#include "compiler/SchemaView.h"

#include "runtime/core/Error.h"

namespace vkd::compiler {

std::vector<TensorUse> tensor_uses(const Node& node, const schema::OpSchema& schema) {
  std::vector<TensorUse> uses;
  size_t in = 0, out = 0;
  for (size_t a = 0; a < schema.args.size(); ++a) {
    const schema::ArgSchema& arg = schema.args[a];
    if (arg.kind != schema::ArgKind::Tensor) continue;
    const auto& list = arg.output ? node.outputs : node.inputs;
    size_t& next = arg.output ? out : in;
    VKD_CHECK(next < list.size(), ErrorCode::InvalidArgument, node.origin, ": ", schema.name,
              " needs tensor '", arg.name, "' (", arg.output ? "output " : "input ", next, ")");
    uses.push_back({list[next], &arg, static_cast<int>(a), arg.output});
    ++next;
  }
  VKD_CHECK(in == node.inputs.size() && out == node.outputs.size(), ErrorCode::InvalidArgument,
            node.origin, ": ", schema.name, " takes ", in, " input and ", out,
            " output tensors, the node has ", node.inputs.size(), " and ", node.outputs.size());
  return uses;
}

}  // namespace vkd::compiler
