#include "compiler/ops/EdgeOp.h"

#include <variant>

#include "core/Error.h"
#include "partitioner_schema/OpSchema.h"

namespace vkd::compiler {

// The op families, one file each in compiler/ops/ defining <family>_edge_ops (the file's name in
// snake_case): the list is made from that folder at configure time (cmake/VkdFamilyLists.cmake),
// in file-name order. No two families describe the same edge op, so the order changes nothing
// but the order of accepted_edge_ops().
#define VKD_FAMILY(family) std::vector<EdgeOp> family##_edge_ops();
#include "compiler/ops/EdgeOpFamilies.inc"
#undef VKD_FAMILY

namespace {

#define VKD_FAMILY(family) family##_edge_ops,
std::vector<EdgeOp> (*const kFamilies[])() = {
#include "compiler/ops/EdgeOpFamilies.inc"
};
#undef VKD_FAMILY

}  // namespace

const char* lit_name(Lit kind) {
  switch (kind) {
    case Lit::Int: return "an integer";
    case Lit::Number: return "a number";
    case Lit::Bool: return "a bool";
    case Lit::String: return "a string";
    case Lit::Ints: return "a list of integers";
    case Lit::Numbers: return "a list of numbers";
  }
  return "?";
}

bool lit_matches(const ArgValue& v, Lit kind) {
  switch (kind) {
    case Lit::Int: return std::holds_alternative<int64_t>(v);
    case Lit::Number:
      return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
    case Lit::Bool: return std::holds_alternative<bool>(v);
    case Lit::String: return std::holds_alternative<std::string>(v);
    case Lit::Ints:
      return std::holds_alternative<std::vector<int64_t>>(v) || std::holds_alternative<int64_t>(v);
    case Lit::Numbers:
      return std::holds_alternative<std::vector<double>>(v) ||
             std::holds_alternative<std::vector<int64_t>>(v);
  }
  return false;
}

EdgeArg required_arg(const char* name, Lit kind, bool nullable) {
  return {name, kind, true, nullable, std::nullopt};
}

EdgeArg optional_arg(const char* name, Lit kind, std::optional<ArgValue> def, bool nullable) {
  return {name, kind, false, nullable, std::move(def)};
}

int EdgeOp::input_index(std::string_view input_name) const {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (input_name == inputs[i]) return static_cast<int>(i);
  }
  return -1;
}

EdgeOp& EdgeOp::computed_by(ReferenceFn fn) {
  reference = fn;
  return *this;
}

EdgeOp& EdgeOp::refused_on_host_when(HostRefusal fn) {
  refused_on_host = fn;
  return *this;
}

EdgeOp& EdgeOp::fused_by(fusion::FusePattern pattern, std::vector<std::string> backend_ops) {
  fuse = pattern;
  lowers_to.insert(lowers_to.end(), backend_ops.begin(), backend_ops.end());
  return *this;
}

EdgeOp& EdgeOp::lowered_by(fusion::DirectLowering lowering, std::vector<std::string> backend_ops) {
  lower = lowering;
  lowers_to.insert(lowers_to.end(), backend_ops.begin(), backend_ops.end());
  return *this;
}

EdgeOp& EdgeOp::fusing_beyond_device() {
  fuses_beyond_device = true;
  return *this;
}

EdgeOp& EdgeOp::fusing_after_its_consumers() {
  fuses_after_its_consumers = true;
  return *this;
}

EdgeOp& EdgeOp::fusing_before_its_producers() {
  fuses_before_its_producers = true;
  return *this;
}

EdgeOp& EdgeOp::taking_a_tensor_list() {
  tensor_list = true;
  return *this;
}

namespace {

// A descriptor the rest of the compiler can rely on: a shape rule, a reference, and backend
// ops that exist in the op registry.
void check_descriptor(const EdgeOp& op) {
  VKD_CHECK(op.infer != nullptr && op.reference != nullptr, ErrorCode::Internal, "edge op ",
            op.name, " has no shape rule or no CPU reference");
  VKD_CHECK(op.lowers_to.empty() == (op.fuse == nullptr && op.lower == nullptr),
            ErrorCode::Internal, "edge op ", op.name,
            ": a fusion pattern or lowering must name the backend ops it produces");
  for (const std::string& backend : op.lowers_to) {
    VKD_CHECK(schema::find_op_schema(backend) != nullptr, ErrorCode::Internal, "edge op ", op.name,
              " lowers to '", backend, "', which partitioner_schema does not declare");
  }
}

}  // namespace

const std::vector<EdgeOp>& edge_ops() {
  static const std::vector<EdgeOp> kOps = [] {
    std::vector<EdgeOp> all;
    for (auto family : kFamilies) {
      for (EdgeOp& op : family()) {
        check_descriptor(op);
        all.push_back(std::move(op));
      }
    }
    return all;
  }();
  return kOps;
}

const EdgeOp* find_edge_op(std::string_view name) {
  for (const EdgeOp& op : edge_ops()) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

}  // namespace vkd::compiler
