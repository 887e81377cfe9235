// deserialize(): checks a blob completely, then returns it as plain C++ objects (no
// FlatBuffers types leak out). Anything malformed is a vkd::Error(InvalidArgument) that names
// the field, value or op and the numbers involved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/TensorSpec.h"
#include "serialization/Blob.h"
#include "serialization/DynamicLength.h"

namespace vkd::serialization {

// A view of constant bytes inside the blob passed to deserialize(): valid only while that blob
// is alive and unchanged. offset is from the start of the blob (for mapping files).
struct ConstantBytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  uint64_t offset = 0;
};

struct TensorValue {
  TensorSpec spec;                        // passed vkd::validate()
  std::string name;                       // may be empty
  std::optional<ConstantBytes> constant;  // constant_byte_size(spec) bytes when present
};
struct IntValue {
  int64_t value = 0;
};
struct FloatValue {
  double value = 0.0;
};
struct BoolValue {
  bool value = false;
};
struct IntListValue {
  std::vector<int64_t> items;
};
struct FloatListValue {
  std::vector<double> items;
};
struct StringValue {
  std::string value;
};
struct ValueListValue {
  std::vector<ValueId> items;
};  // every id in range

// The alternatives are in ValueKind order: value.index() == static_cast<size_t>(kind).
using Value = std::variant<TensorValue, IntValue, FloatValue, BoolValue, IntListValue,
                           FloatListValue, StringValue, ValueListValue>;

enum class ValueKind : uint8_t {
  Tensor = 0,
  Int,
  Float,
  Bool,
  IntList,
  FloatList,
  String,
  ValueList,
};
ValueKind kind_of(const Value& value);
std::string_view to_string(ValueKind kind);  // "tensor", "int", "int_list", ...

struct OpCall {
  std::string name;
  std::vector<ValueId> args;  // every id in range
};

struct GraphIO {
  ValueId value = 0;  // a non-constant tensor
  std::string name;   // may be empty
};

struct DeserializedGraph {
  uint32_t header_version = 0;     // 1: an old blob, read without integrity checks
  uint64_t source_graph_hash = 0;  // of the graph IR it was compiled from; 0: not recorded
  uint32_t schema_version = 0;
  std::vector<Value> values;  // indexed by ValueId
  std::vector<OpCall> ops;    // execution order
  std::vector<GraphIO> inputs;
  std::vector<GraphIO> outputs;
  std::optional<DynamicLength> dynamic;  // absent: every shape is static
};

// What an op expects: exactly these argument kinds, in this order.
struct OpSignature {
  std::vector<ValueKind> args;
};
// Op name -> signature. std::less<> so lookups take a string_view.
using OpSignatureTable = std::map<std::string, OpSignature, std::less<>>;

// Checks, in order: the header (Blob.h parse_header), the checksums of a version 2 blob
// (verify_checksums: the graph, the constants, zero padding), the FlatBuffers identifier and
// verifier, the schema version, every value (known kind and enums, tensor spec valid,
// constant within the segment and of the tensor's byte size, list ids in range), every op
// (name non-empty, ids in range; with known_ops: name known and arguments matching its
// signature), inputs and outputs (ids in range, tensors, not constants, names consistent).
// Constant views point into [data, data + size): keep the blob alive while using them.
DeserializedGraph deserialize(const uint8_t* data, size_t size,
                              const OpSignatureTable* known_ops = nullptr);
DeserializedGraph deserialize(const std::vector<uint8_t>& blob,
                              const OpSignatureTable* known_ops = nullptr);
// A temporary blob would leave the constant views dangling.
DeserializedGraph deserialize(std::vector<uint8_t>&& blob,
                              const OpSignatureTable* known_ops = nullptr) = delete;

}  // namespace vkd::serialization
