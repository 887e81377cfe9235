// The runtime's op registry: every op name a blob may call, the arguments it takes (kinds,
// names, which are outputs) and the builder that turns one call into prepack and dispatch
// nodes of a ComputeGraph. The deserializer checks blobs against signatures(); the graph
// loader (runtime/delegate/GraphLoader) calls build().
//
// Each op family file <Family>.cpp ends with a register_<family>_ops(OpRegistry&) function (its
// name in snake_case); OpRegistry.cpp calls every one, from a list made from the folder.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/graph/ComputeGraph.h"
#include "runtime/ops/OpUtils.h"
#include "serialization/Deserializer.h"

namespace vkd::ops {

using serialization::ValueKind;

struct ArgSpec {
  std::string name;
  ValueKind kind;
  bool output = false;  // a tensor the op writes
};

class OpCall;
using OpBuildFn = void (*)(const OpCall& call);

// Argument names/kinds and resize support come from the declarative schema
// (partitioner_schema/OpSchema.h); the runtime adds only the builder.
struct OpEntry {
  std::string name;
  std::vector<ArgSpec> args;
  // Whether the op's kernels take the tensors' sizes at run time (input resizing). None does
  // yet: the delegate rejects inputs whose shapes differ from the compiled ones.
  bool supports_resize = false;
  OpBuildFn build = nullptr;
};

class OpRegistry {
 public:
  // Registers the builder of schema op `name`; throws Internal when the schema has no such op,
  // says it has no kernel, or the name is registered twice.
  void add(std::string_view name, OpBuildFn build);
  const OpEntry* find(std::string_view name) const;
  const std::vector<OpEntry>& entries() const { return entries_; }
  serialization::OpSignatureTable signatures() const;

 private:
  std::vector<OpEntry> entries_;
};

// Every op this build of the runtime can run.
const OpRegistry& op_registry();

// One op call while the graph is being built: its arguments resolved against the blob's
// values. Accessors throw InvalidArgument naming the op and the argument on a bad value.
class OpCall {
 public:
  // `tensor_for`: the graph tensor of a tensor value, created on first use (a blob constant
  // becomes a constant with the default NCHW packer then).
  using TensorResolver = std::function<graph::ValueRef(serialization::ValueId)>;
  OpCall(graph::ComputeGraph& graph, const OpEntry& entry, size_t index,
         const serialization::DeserializedGraph& blob, const TensorResolver& tensor_for,
         const std::vector<serialization::ValueId>& args);

  graph::ComputeGraph& graph() const { return graph_; }
  // "op 2 'q8ta_quantize'" for messages.
  const std::string& label() const { return label_; }
  const std::string& op() const { return entry_.name; }

  // Arguments are read by their name in the op's schema (partitioner_schema/ops/), so
  // a schema change that a builder does not follow fails here instead of silently reading the
  // neighbouring argument: a name the schema lacks throws Internal.
  graph::ValueRef tensor(std::string_view arg) const;
  // A TensorList argument: its tensors in order (InvalidArgument when it is empty or an item is
  // no tensor).
  std::vector<graph::ValueRef> tensor_list(std::string_view arg) const;
  // A constant tensor argument as stored in the blob (host NCHW bytes, valid during the build),
  // for builders that prepack it into their own form with graph().add_constant(): the default
  // tensor is then never created. InvalidArgument when the argument is not a constant.
  const serialization::TensorValue& constant(std::string_view arg) const;
  // Per-output-channel float32 constants (weight scales, bias) copied out of the blob with
  // memcpy: a blob may sit at any address, so its bytes are never read in place as floats.
  // Shared, so the packers that read them keep them alive until prepare().
  struct ChannelFloats {
    std::vector<float> scales, bias;
  };
  std::shared_ptr<const ChannelFloats> channel_floats(std::string_view scales_arg,
                                                      std::string_view bias_arg) const;
  double float_arg(std::string_view arg) const;
  int64_t int_arg(std::string_view arg) const;
  // int_arg checked to lie in [lo, hi].
  int32_t int32_arg(std::string_view arg, int64_t lo, int64_t hi) const;
  bool bool_arg(std::string_view arg) const;
  std::vector<int64_t> int_list(std::string_view arg) const;
  std::vector<double> float_list(std::string_view arg) const;
  // int_list checked to have one of `lengths` entries, each in [lo, hi] (geometry lists:
  // stride, padding, dilation, kernel size).
  std::vector<int32_t> int32_list(std::string_view arg, std::initializer_list<size_t> lengths,
                                  int64_t lo, int64_t hi) const;
  // Per-tensor int8 quantization of tensor argument `tensor`: its scale "<tensor>_scale" and
  // zero point "<tensor>_zero_point" (in [-128, 127]); the full int8 range.
  QuantParams quant(std::string_view tensor) const;
  // The zero point of an int8x4 tensor, recorded so host data written to it pads with it.
  void set_zero_point(std::string_view tensor_arg, int32_t zero_point) const;

 private:
  // The position of argument `arg` in the blob's argument list; Internal when the schema has
  // no argument of that name.
  size_t position(std::string_view arg) const;
  // The blob value (id) of argument `arg`, checked to be of `kind`: InvalidArgument when the
  // blob's value is not, Internal when the schema declares another kind.
  serialization::ValueId value_id(std::string_view arg, ValueKind kind) const;
  const serialization::Value& value(std::string_view arg, ValueKind kind) const;
  graph::ComputeGraph& graph_;
  const OpEntry& entry_;
  std::string label_;
  const serialization::DeserializedGraph& blob_;
  const TensorResolver& tensor_for_;
  const std::vector<serialization::ValueId>& args_;
};

}  // namespace vkd::ops
