// One descriptor per edge-dialect op: everything the compiler knows about it, in one file per
// op family (compiler/ops/<Family>.cpp: the descriptors, their shape rules, CPU references,
// fusion patterns and direct lowerings). The parser reads the signature, shape inference the
// rule, the interpreter the CPU reference, fuse_and_lower the fusion pattern and the direct
// lowering. Adding an edge op = adding a descriptor to its family's list (a new family is a new
// <Family>.cpp defining <family>_edge_ops, which the build lists for EdgeOps.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/GraphIR.h"
#include "compiler/fusion/Patterns.h"
#include "compiler/reference/Reference.h"

namespace vkd::compiler {

class ShapeContext;

// The literal kinds of non-tensor arguments, as the graph IR writes them.
enum class Lit { Int, Number, Bool, String, Ints, Numbers };
const char* lit_name(Lit kind);  // "an integer", "a list of integers", ...
// An int is a Number and a one-entry Ints; a list of ints is also a list of Numbers.
bool lit_matches(const ArgValue& value, Lit kind);

// A non-tensor argument of the op's ATen schema.
struct EdgeArg {
  const char* name;
  Lit kind;
  bool required;
  bool nullable;                // null (None) is accepted
  std::optional<ArgValue> def;  // filled in by the parser when the argument is absent
};
EdgeArg required_arg(const char* name, Lit kind, bool nullable = false);
EdgeArg optional_arg(const char* name, Lit kind, std::optional<ArgValue> def = std::nullopt,
                     bool nullable = true);

// What shape inference computes for each output.
struct TypedShape {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
};
using ShapeRule = std::vector<TypedShape> (*)(const ShapeContext&);
// Why the CPU reference refuses a node its shape rule accepts (an argument value it does not
// implement: zero_point_domain 'FLOAT'), or nullopt. host_refusal() (Interpreter.h) reads it,
// and the reference itself, so the two cannot disagree.
using HostRefusal = std::optional<std::string> (*)(const Node&);

struct EdgeOp {
  std::string name;                 // "aten.convolution"
  std::vector<const char*> inputs;  // tensor argument names, ATen schema order
  size_t required_inputs = 0;       // the first ones are required, the rest optional
  std::vector<EdgeArg> args;        // non-tensor arguments
  size_t outputs = 1;               // 0: one or more, as many as the shape rule infers (split)
  ShapeRule infer = nullptr;        // dtypes and shapes of the outputs, checking the inputs
  // Defaults that depend on another argument (max_pool2d: stride = kernel_size); may be null.
  void (*complete_args)(Args& args) = nullptr;
  ReferenceFn reference = nullptr;        // the CPU reference (in the family's file)
  HostRefusal refused_on_host = nullptr;  // null: the reference runs every node the rule accepts
  // The backend ops this op can become, and how: a quantized pattern anchored at this op
  // (the family's, or a shared one of Patterns.h) and/or a direct lowering of a node left after
  // fusion. Either may be null.
  std::vector<std::string> lowers_to;
  fusion::FusePattern fuse = nullptr;
  fusion::DirectLowering lower = nullptr;
  // The last tensor input is a list (ATen's Tensor[], aten.cat's `tensors`): a node gives it one
  // or more values, each read as that input (set by taking_a_tensor_list()).
  bool tensor_list = false;
  // The pattern is tried even when the anchor reads or writes a tensor above the device rank
  // (a 5-D view inside a channel shuffle): it keeps such nodes only inside a match whose
  // backend op is at most 4-D. Other patterns never see those anchors.
  bool fuses_beyond_device = false;
  // The pattern joins the match of a node after its anchor (a quantize joining the load of the
  // convolution reading its output), so it is tried once every other pattern has been
  // (compiler/Fuse.cpp: match_patterns).
  bool fuses_after_its_consumers = false;
  // The pattern takes nodes before its anchor that a pattern of their own would otherwise take
  // first (an attention's head split, a plain view at one token), so it is tried before every
  // other pattern (compiler/Fuse.cpp: match_patterns).
  bool fuses_before_its_producers = false;

  int input_index(std::string_view input_name) const;  // -1 when absent

  // Chained setters for the family lists: EdgeOp{...}.computed_by(reference_relu)
  // .lowered_by(fusion::lower_relu, {"relu"}).
  EdgeOp& computed_by(ReferenceFn fn);
  EdgeOp& refused_on_host_when(HostRefusal fn);
  EdgeOp& fused_by(fusion::FusePattern pattern, std::vector<std::string> backend_ops);
  EdgeOp& lowered_by(fusion::DirectLowering lowering, std::vector<std::string> backend_ops);
  EdgeOp& taking_a_tensor_list();
  EdgeOp& fusing_beyond_device();
  EdgeOp& fusing_after_its_consumers();
  EdgeOp& fusing_before_its_producers();
};

// Every edge op, families in a fixed order (the order of "accepted: ..." messages).
const std::vector<EdgeOp>& edge_ops();
// The descriptor named `name` (exactly), or nullptr.
const EdgeOp* find_edge_op(std::string_view name);

}  // namespace vkd::compiler
