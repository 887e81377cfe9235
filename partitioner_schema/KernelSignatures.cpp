#include "partitioner_schema/KernelSignatures.h"

namespace vkd::schema {

using serialization::ValueKind;

// The schema's argument kinds and the blob's value kinds share their numbering.
static_assert(static_cast<int>(ArgKind::Tensor) == static_cast<int>(ValueKind::Tensor) &&
                  static_cast<int>(ArgKind::Int) == static_cast<int>(ValueKind::Int) &&
                  static_cast<int>(ArgKind::Float) == static_cast<int>(ValueKind::Float) &&
                  static_cast<int>(ArgKind::Bool) == static_cast<int>(ValueKind::Bool) &&
                  static_cast<int>(ArgKind::IntList) == static_cast<int>(ValueKind::IntList) &&
                  static_cast<int>(ArgKind::FloatList) == static_cast<int>(ValueKind::FloatList) &&
                  static_cast<int>(ArgKind::TensorList) == static_cast<int>(ValueKind::ValueList),
              "ArgKind and serialization::ValueKind drifted");

ValueKind to_value_kind(ArgKind kind) { return static_cast<ValueKind>(static_cast<int>(kind)); }

serialization::OpSignature signature_of(const OpSchema& op) {
  serialization::OpSignature sig;
  for (const auto& a : op.args) sig.args.push_back(to_value_kind(a.kind));
  return sig;
}

serialization::OpSignatureTable kernel_signatures() {
  serialization::OpSignatureTable table;
  for (const auto& op : op_schemas()) {
    if (op.has_kernel) table.emplace(op.name, signature_of(op));
  }
  return table;
}

}  // namespace vkd::schema
