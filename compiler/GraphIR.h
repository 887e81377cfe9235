// The compiler's in-memory graph: what the JSON graph IR parses into and what every pass
// rewrites. Pure C++ (no Vulkan); values are named, nodes are in execution order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/DType.h"
#include "core/TensorSpec.h"

namespace vkd::compiler {

// A shape in compiler messages: "[1, 3, 5, 7]".
inline std::string shape_str(const std::vector<int64_t>& shape) {
  return sizes_string(shape, ", ");
}

// The element count of a shape (1 for a scalar).
inline int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A node argument literal (named as in the op's ATen schema). Lists keep their element type.
struct NoneArg {
  bool operator==(const NoneArg&) const { return true; }
};
using ArgValue = std::variant<NoneArg, bool, int64_t, double, std::string, std::vector<int64_t>,
                              std::vector<double>>;
using Args = std::map<std::string, ArgValue>;

// Quantization of an int8 activation, attached by fusion (per tensor).
struct QuantInfo {
  double scale = 1.0;
  int64_t zero_point = 0;
  int64_t quant_min = -128;
  int64_t quant_max = 127;
};

struct Value {
  std::string name;
  // Edge graphs use float32 / int8 / int32; after lowering, int8 activations are Int8x4.
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;                // NCHW for rank 4
  std::optional<std::vector<uint8_t>> data;  // constant: host NCHW bytes (little-endian)
  // A dtype no device tensor has ("bool", "int64", "float64", ...), as the graph IR wrote it;
  // empty for the device's dtypes. Such a value (an attention mask, token ids) belongs to a
  // CPU runtime: every node reading or writing it is refused (Partition.h, fits_device), and
  // `dtype` means nothing for it.
  std::string foreign_dtype;
  // Constants read from the weights file: the tensor's name there (the graph IR's "data"), so a
  // partition plan can name it for the host ("" for a constant the compiler made).
  std::string weights_name;
  std::optional<QuantInfo> quant;  // int8/int8x4 activations after fusion
  // Decided by layout propagation (unset before it runs).
  std::optional<StorageType> storage;
  std::optional<MemoryLayout> layout;
  bool is_constant() const { return data.has_value(); }
};

struct Node {
  std::string op;                    // edge op ("aten.convolution") or backend op ("q8ta_conv2d")
  std::vector<std::string> inputs;   // value names (tensors); "" for an absent optional input
  Args args;                         // literals
  std::vector<std::string> outputs;  // value names
  std::string origin;                // where it came from, for messages: "node 3 (aten.relu)"
};

// A graph IR written at its maximum sequence length that runs at every length in [min, max]
// (issue 35; the IR's "dynamic" section, compiler/DynamicLength.h): the value dimensions and the
// node args (by node index in the IR) that follow the length L, each a * L + b.
struct DynamicDim {
  std::string value;
  size_t dim = 0;
  int64_t a = 0, b = 0;
};
struct DynamicArg {
  size_t node = 0;
  std::string arg;
  int64_t element = -1;  // the item of an int list; -1: the arg is an int
  int64_t a = 0, b = 0;
};
struct DynamicSpec {
  std::string name;  // "T"
  int64_t min = 1, max = 1;
  std::vector<DynamicDim> dims;
  std::vector<DynamicArg> args;
};

class Graph {
 public:
  // Values: insertion order is kept so every pass and the serializer are deterministic.
  Value& add_value(Value v);  // throws InvalidArgument on a duplicate name
  bool has_value(const std::string& name) const { return index_.count(name) != 0; }
  Value& value(const std::string& name);  // throws InvalidArgument naming the value
  const Value& value(const std::string& name) const;
  const std::vector<std::string>& value_names() const { return order_; }
  void remove_value(const std::string& name);
  // A fresh name derived from `base` ("x_q", "x_q.1", ...).
  std::string unique_name(const std::string& base) const;

  std::vector<Node> nodes;
  std::vector<std::string> inputs, outputs;
  std::optional<DynamicSpec> dynamic;  // set by the parser for an IR with a dynamic length

  // Index of the node writing `value`, or -1 (graph input, constant or unknown).
  int producer(const std::string& value) const;
  // Indices of the nodes reading `value`, in order.
  std::vector<int> consumers(const std::string& value) const;
  bool is_graph_input(const std::string& value) const;
  bool is_graph_output(const std::string& value) const;

 private:
  std::map<std::string, Value> values_;
  std::map<std::string, size_t> index_;
  std::vector<std::string> order_;
};

// Accessors for node args with errors naming the node and the field.
int64_t arg_int(const Node& node, const std::string& name);
double arg_float(const Node& node, const std::string& name);  // ints accepted
bool arg_bool(const Node& node, const std::string& name);
std::vector<int64_t> arg_ints(const Node& node, const std::string& name);
bool arg_present(const Node& node, const std::string& name);  // present and not None

}  // namespace vkd::compiler
