// How a backend node's tensors line up with its schema: node.inputs are the schema's
// non-output tensor args in order (a TensorList arg takes one or more of them: every input the
// other tensor args leave), node.outputs its output tensor args.
#pragma once

#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler {

struct TensorUse {
  std::string value;             // value name
  const schema::ArgSchema* arg;  // its schema argument
  int arg_index;                 // index in schema.args
  bool output;
};

// One use per tensor (a TensorList arg gives one per list item, each with the list's schema
// argument). Throws InvalidArgument naming the node when the node's tensor counts do not match.
std::vector<TensorUse> tensor_uses(const Node& node, const schema::OpSchema& schema);

}  // namespace vkd::compiler
