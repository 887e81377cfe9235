// The last step of fuse_and_lower: a backend node that does not match its OpSchema entry is a
// bug in a pattern or lowering, caught here rather than by the runtime's loader.
#include <algorithm>

#include "compiler/SchemaView.h"
#include "compiler/fusion/PassSteps.h"
#include "core/Error.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler::fusion {
namespace {

bool arg_has_kind(const ArgValue& v, schema::ArgKind kind) {
  switch (kind) {
    case schema::ArgKind::Int: return std::holds_alternative<int64_t>(v);
    case schema::ArgKind::Float: return std::holds_alternative<double>(v);
    case schema::ArgKind::Bool: return std::holds_alternative<bool>(v);
    case schema::ArgKind::IntList: return std::holds_alternative<std::vector<int64_t>>(v);
    case schema::ArgKind::FloatList: return std::holds_alternative<std::vector<double>>(v);
    case schema::ArgKind::Tensor:
    case schema::ArgKind::TensorList: return false;
  }
  return false;
}

}  // namespace

void check_against_schema(const Graph& g, const Node& n) {
  const schema::OpSchema* s = schema::find_op_schema(n.op);
  if (s == nullptr) return;
  size_t scalars = 0;
  for (const auto& a : s->args) {
    if (schema::holds_tensors(a)) continue;
    ++scalars;
    auto it = n.args.find(a.name);
    VKD_CHECK(it != n.args.end() && arg_has_kind(it->second, a.kind), ErrorCode::Internal,
              "fuse_and_lower: ", n.origin, ": ", n.op, " argument '", a.name,
              "' is missing or of the wrong kind");
  }
  std::vector<TensorUse> uses;
  try {
    uses = tensor_uses(n, *s);
  } catch (const Error& e) {
    VKD_THROW(ErrorCode::Internal, "fuse_and_lower: ", e.what());
  }
  for (const TensorUse& u : uses) {
    const schema::ArgSchema& a = *u.arg;
    VKD_CHECK(!u.value.empty(), ErrorCode::Internal, "fuse_and_lower: ", n.origin, ": ", n.op,
              " has no tensor for '", a.name, "'");
    const Value& v = g.value(u.value);
    VKD_CHECK(std::find(a.dtypes.begin(), a.dtypes.end(), v.dtype) != a.dtypes.end(),
              ErrorCode::Internal, "fuse_and_lower: ", n.origin, ": ", n.op, " '", a.name, "' is ",
              to_string(v.dtype));
    VKD_CHECK(!a.constant || v.is_constant(), ErrorCode::Internal, "fuse_and_lower: ", n.origin,
              ": ", n.op, " '", a.name, "' must be a constant");
  }
  VKD_CHECK(n.args.size() == scalars, ErrorCode::Internal, "fuse_and_lower: ", n.origin, ": ", n.op,
            " has ", n.args.size(), " args; its schema has ", scalars);
}

}  // namespace vkd::compiler::fusion
