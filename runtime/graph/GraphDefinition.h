// What a graph is, before it runs: its GPU tensors (intermediates, inputs, outputs, constants
// with their packers), the views among them (alias()) and the ordered dispatch nodes. This is
// the build API the op builders and the blob loader use; prepare() (ComputeGraph.h) then hands
// it to the parts that place it in memory (GraphMemory.h), record it (GraphRecorder.h) and move
// host data in and out (GraphIO.h), after which it no longer changes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/graph/ConstantPacker.h"
#include "runtime/graph/GpuTensor.h"
#include "runtime/vk/Context.h"
#include "runtime/vk/WorkgroupChooser.h"
#include "vkd/generated/ShaderRegistry.h"

namespace vkd::graph {

using ValueRef = int32_t;

struct DispatchNode {
  std::string op;  // op name shown in profiles, e.g. "q8ta_quantize"
  shaders::Kernel kernel;
  std::vector<ValueRef> bindings;        // binding i of the kernel = tensor bindings[i]
  std::vector<uint8_t> push_constants;   // exactly the kernel's push-constant block size
  std::vector<uint32_t> spec_constants;  // the kernel's ids >= 3, in order
  vk::DispatchPlan plan;
};

// Copies a push-constant struct into the byte vector a DispatchNode carries.
template <typename T>
std::vector<uint8_t> push_constant_bytes(const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  return std::vector<uint8_t>(p, p + sizeof(T));
}

class GraphDefinition {
 public:
  explicit GraphDefinition(vk::Context& context) : context_(context) {}
  GraphDefinition(const GraphDefinition&) = delete;
  GraphDefinition& operator=(const GraphDefinition&) = delete;

  vk::Context& context() { return context_; }
  const vk::DeviceProfile& profile() const { return context_.profile(); }

  // An intermediate tensor (or, after add_input/add_output, a graph input/output).
  ValueRef add_tensor(const TensorSpec& spec, std::string name = "");
  // A constant: uploaded once in prepare(), never shared with other tensors.
  ValueRef add_constant(const TensorSpec& spec, std::string name, ConstantPacker packer,
                        uint64_t host_bytes);
  const TensorSpec& spec(ValueRef ref) const { return tensor(ref).spec(); }
  const GpuTensor& tensor(ValueRef ref) const;
  size_t tensor_count() const { return tensors_.size(); }

  // Checks the binding kinds and constant sizes against the kernel before accepting the node.
  void add_node(DispatchNode node);
  const std::vector<DispatchNode>& nodes() const { return nodes_; }
  // "out: name [1,5,7,9] int8x4 buffer 4W4C; in: ..." for node `index` (binding 0 is the output).
  std::string describe_node(size_t index) const;
  bool is_constant(ValueRef ref) const;
  // A copy of constant `ref`'s packer, for a constant derived from it (e.g. reciprocals), whose
  // own packer then runs in prepare() too. Before prepare() only.
  ConstantPacker constant_packer(ValueRef ref) const;
  // Zero point of an int8x4 tensor as the ops that touch it declare it (host writes pad with
  // it); nullopt when no op declared one.
  void set_zero_point(ValueRef ref, int32_t zero_point);
  std::optional<int32_t> zero_point(ValueRef ref) const { return zero_points_.at(ref); }
  // Token ids: every element of int32 tensor `ref` must lie in [0, rows), the rows of a table an
  // op gathers by it (the smallest table when several do); the host checks each input write
  // against it (GraphIO::flush_input), so a bad id is an error naming it, never a read outside
  // the table. nullopt: no op declared one.
  void limit_ids(ValueRef ref, int64_t rows);
  std::optional<int64_t> id_limit(ValueRef ref) const { return id_limits_.at(ref); }

  void add_input(ValueRef ref);
  void add_output(ValueRef ref);

  // Makes tensor `view` share the bytes of buffer tensor `base` from `byte_offset` on, so no
  // kernel has to move them (a slice that is a contiguous byte range of what it is cut from,
  // a producer writing straight into its part of a concatenation). `view` keeps its own spec
  // and may still be an input or output of the graph; the planner keeps `base`'s memory for
  // both lifetimes. Returns false, changing nothing, when `view` is a constant, an image or
  // already a view, the bytes fall outside `base`, `view` would end up viewing itself, or the
  // device's buffer alignment does not allow the offset. Before prepare() only.
  bool alias(ValueRef view, ValueRef base, uint64_t byte_offset);
  // The tensor whose bytes `ref` shares and where in them (itself and 0 when it is no view).
  std::pair<ValueRef, uint64_t> alias_root(ValueRef ref) const;
  // Makes buffer tensors `first` and `second` (neither a view) views of one new tensor `name`,
  // `first` at 0 and `second` after it at an offset the device's alignment allows, so a kernel
  // can bind both once (a way down where a stage's storage buffers run short). Returns the new
  // tensor and `second`'s byte offset; nullopt, changing nothing, when either is a constant,
  // an image or a view. Before prepare() only.
  std::optional<std::pair<ValueRef, uint64_t>> place_together(ValueRef first, ValueRef second,
                                                              std::string name);

  // The smaller forms ops took because a kernel exceeds this device (their "ways down",
  // docs/DEVICES.md): one line each, "op 'tensor': what instead (why)", in build order, for
  // `vkd inspect` and `vkd compile --target` to show.
  void add_way_down(std::string line) { ways_down_.push_back(std::move(line)); }
  const std::vector<std::string>& ways_down() const { return ways_down_; }

  bool prepared() const { return prepared_; }

  // For the parts prepare() hands the graph to, not for op builders.
  enum Role : uint8_t { kIntermediate = 0, kInput = 1, kOutput = 2, kConstant = 4 };
  const std::vector<uint8_t>& roles() const { return roles_; }  // Role bits per tensor
  const std::vector<ValueRef>& input_refs() const { return input_refs_; }
  const std::vector<ValueRef>& output_refs() const { return output_refs_; }
  bool is_view(ValueRef ref) const { return aliases_[ref].base >= 0; }
  bool is_viewed(ValueRef ref) const;  // the base of some view
  GpuTensor& tensor_to_bind(ValueRef ref) { return *tensors_[ref]; }
  uint64_t constant_host_bytes() const { return constant_host_bytes_; }
  // Constant `ref`'s packer, leaving none behind (dropping whatever it captured once run).
  ConstantPacker take_constant_packer(ValueRef ref);

 protected:
  void mark_prepared() { prepared_ = true; }

 private:
  vk::Context& context_;
  std::vector<std::unique_ptr<GpuTensor>> tensors_;
  std::vector<uint8_t> roles_;           // Role bits per tensor
  std::vector<ConstantPacker> packers_;  // per tensor; empty unless constant
  std::vector<std::optional<int32_t>> zero_points_;
  std::vector<std::optional<int64_t>> id_limits_;
  struct Alias {
    ValueRef base = -1;  // -1: no view
    uint64_t offset = 0;
  };
  std::vector<Alias> aliases_;  // per tensor, see alias()
  std::vector<DispatchNode> nodes_;
  std::vector<ValueRef> input_refs_, output_refs_;
  std::vector<std::string> ways_down_;
  uint64_t constant_host_bytes_ = 0;
  bool prepared_ = false;
};

}  // namespace vkd::graph
