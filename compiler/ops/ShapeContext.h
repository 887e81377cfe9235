// The node a shape rule is inferring (compiler/ops/<Family>.cpp): its inputs by their schema
// names and its arguments, with errors that name the node, the field, and expected vs got.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/ops/EdgeOp.h"
#include "core/Error.h"

namespace vkd::compiler {

class ShapeContext {
 public:
  ShapeContext(const Graph& graph, const Node& node, const EdgeOp& op)
      : graph_(graph), node_(node), op_(op) {}

  const Node& node() const { return node_; }

  template <typename... A>
  [[noreturn]] void fail(const std::string& field, const A&... parts) const {
    VKD_THROW(ErrorCode::InvalidArgument, node_.origin, ": ", field, ": ", parts...);
  }

  // At most the op's tensor inputs (the driver checks this before the rule runs).
  void max_inputs() const;

  // "input 'weight' (value 'w')": the schema's input name, then the graph value given for it.
  std::string input_field(const char* name) const;
  const Value& in(const char* name) const;      // a required input
  const Value* opt_in(const char* name) const;  // nullptr when absent
  // The values of the tensor list `name` (EdgeOp::tensor_list: the last input), in order.
  std::vector<const Value*> list(const char* name) const;

  void dtype(const Value& v, const char* name, DType want) const;
  void rank(const Value& v, const char* name, size_t want) const;
  void shape(const Value& v, const char* name, const std::vector<int64_t>& want,
             const char* why) const;

  static std::string arg_field(const std::string& name) { return "argument '" + name + "'"; }

  int64_t i64(const std::string& name) const { return arg_int(node_, name); }
  double f64(const std::string& name) const { return arg_float(node_, name); }
  std::optional<double> opt_f64(const std::string& name) const;
  bool flag_or(const std::string& name, bool def) const;
  std::vector<int64_t> ints(const std::string& name) const { return arg_ints(node_, name); }
  std::optional<std::string> opt_str(const std::string& name) const;
  std::string str(const std::string& name) const;

  // A string arg that must be one of `allowed` (None allowed when `none_ok`).
  void str_in(const std::string& name, std::initializer_list<const char*> allowed,
              bool none_ok) const;
  // Int arg `name`, a dim of a rank-`rank` tensor in [-rank, rank), made non-negative.
  int64_t dim_arg(const std::string& name, size_t rank) const;
  // An int[2] arg given as 1 or 2 ints, each >= `min`.
  std::vector<int64_t> pair(const std::string& name, int64_t min) const;
  std::vector<int64_t> checked_pair(const std::string& name, std::vector<int64_t> v,
                                    int64_t min) const;
  // int8 quantization range args.
  void int8_range(const std::string& qmin_name, const std::string& qmax_name, bool none_ok) const;
  void positive_scale(const std::string& name) const;
  void int8_zero_point(const std::string& name) const;

 private:
  size_t index_of(const char* name) const;  // the schema position of input `name`
  const Value& defined(size_t i, const char* name) const;

  const Graph& graph_;
  const Node& node_;
  const EdgeOp& op_;
};

// The shape rule of an element-wise op on one float32 tensor 'self': float32 of its shape.
std::vector<TypedShape> unary_float_shape(const ShapeContext& c);

}  // namespace vkd::compiler
