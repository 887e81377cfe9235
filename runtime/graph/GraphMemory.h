// Where a prepared graph's tensors live: prepare()'s memory plan. Constants, inputs and outputs
// are packed side by side; intermediates whose lifetimes (first to last node binding them) do
// not overlap share bytes (MemoryPlanner.h); a view (GraphDefinition::alias) is bound inside
// its root's range; textures own their memory; a graph input or output whose device form is
// its host form may be bound straight in host-visible memory, its own staging (direct I/O).
// Also the memory figures of the graph and the peak while loading it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/graph/GraphDefinition.h"
#include "runtime/graph/HazardTracker.h"
#include "runtime/graph/SharedGraphMemory.h"
#include "runtime/vk/Memory.h"

namespace vkd::graph {

// Device memory of a prepared graph, and the peak while loading it.
struct GraphMemoryStats {
  uint64_t constant_host_bytes = 0;         // constants as given (host NCHW)
  uint64_t constant_device_bytes = 0;       // constants on the GPU, uploaded by this graph
  uint64_t constant_shared_bytes = 0;       // constants bound in another graph's (shared)
  uint64_t io_device_bytes = 0;             // graph inputs and outputs
  uint64_t intermediate_naive_bytes = 0;    // every intermediate in its own memory
  uint64_t intermediate_planned_bytes = 0;  // after lifetime-based sharing
  bool intermediates_shared = false;        // planned in another graph's blocks (shared)
  uint64_t image_bytes = 0;                 // texture tensors (own memory, not shared)
  uint64_t device_bytes = 0;                // device memory this graph allocated for tensors
  uint64_t staging_bytes = 0;               // input/output staging kept for execute()
  uint64_t load_peak_bytes = 0;             // device + staging + host packing, during prepare()
};

// Whether a tensor's staging memory holds exactly its NCHW host form (a float32 or int32
// buffer, width-packed, so contiguous NCHW): then callers may write / read that memory in place,
// and the tensor may be bound in it (direct I/O).
bool staging_is_host_form(const TensorSpec& spec);

// The largest output bound directly in the CPU's cached (not device-local) memory: the GPU's
// stores then cross the bus (~2 GB/s for shader stores on an H100: 1.2 MB took 595 us), which
// for a few KB costs less than the staging copy and its barrier (~3 us).
inline constexpr uint64_t kDirectHostOutputMaxBytes = 4096;

class GraphMemory {
 public:
  // VKD_DIRECT_IO=0 turns direct I/O's default off (to compare).
  GraphMemory(vk::Context& context, GraphDefinition& graph);

  // Whether plan_and_bind() may bind a graph input or output whose device form is its host form
  // (staging_is_host_form) straight in host-visible memory, so that memory is its staging:
  // no staging copy on the GPU, and the kernels read the input from / write the output to it.
  // Only where that memory is device-local (and host-cached for an output: a CPU or unified-
  // memory device), or for an output of at most kDirectHostOutputMaxBytes that only its writer
  // binds, in host-cached memory; for a tensor that is not both an input and an output, not a
  // view and not viewed.
  void set_direct_io(bool on) { direct_io_on_ = on; }
  // Memory shared with other graphs of the same model (SharedGraphMemory.h), before
  // plan_and_bind(): constants whose bytes another graph uploaded are bound in its memory (not
  // uploaded: constant_shared()), the intermediates in its blocks when the plan fits them; this
  // graph's own constants and intermediates are offered to the later graphs.
  void set_shared(std::shared_ptr<SharedGraphMemory> shared) { shared_ = std::move(shared); }
  // prepare()'s first step: plans every tensor's memory, allocates it and binds the buffers.
  void plan_and_bind();

  // After plan_and_bind(): whether `ref` was bound in its own host-visible memory.
  bool direct_io(ValueRef ref) const { return direct_io_[ref]; }
  // After plan_and_bind(). Where a tensor's bytes live: a buffer's range in its memory block
  // (intermediates whose lifetimes do not overlap may share bytes), an image's own memory.
  const MemoryRange& range(ValueRef ref) const { return memory_ranges_[ref]; }

  // After plan_and_bind(): constant `ref` is bound in another graph's uploaded bytes.
  bool constant_shared(ValueRef ref) const { return shared_constants_[ref] != nullptr; }
  // The upload's packed bytes of this graph's own constant `ref`, offered to later graphs.
  void constant_uploaded(ValueRef ref, const std::vector<uint8_t>& packed);

  const GraphMemoryStats& stats() const;
  // Host-visible staging held from now on (added) or freed (released), and a new candidate for
  // the load peak: what is held plus `transient_bytes` of host packing.
  void add_staging_bytes(uint64_t bytes) { stats_.staging_bytes += bytes; }
  void release_staging_bytes(uint64_t bytes) { stats_.staging_bytes -= bytes; }
  void note_load_bytes(uint64_t transient_bytes);

 private:
  struct BufferGroup;  // buffers whose memory is planned together (GraphMemory.cpp)
  // `one_node`: only one dispatch node binds the tensor (its lifetime's first and last).
  bool wants_direct_io(size_t index, bool one_node) const;
  void collect_buffer_groups(BufferGroup& persistent, BufferGroup& intermediates);
  void plan_buffer_groups(BufferGroup& persistent, BufferGroup& intermediates);
  void find_shared_constants();
  void bind_buffer_group(const BufferGroup& group, bool may_share);
  void bind_shared_constants();
  uint32_t block_index(const std::shared_ptr<const vk::MemoryBlock>& block);
  void bind_views();  // each view's buffer in its root's memory

  vk::Context& context_;
  GraphDefinition& graph_;
  bool direct_io_on_;
  std::vector<bool> direct_io_;  // per tensor
  // The memory the buffers are bound in (a range's `memory`): this graph's own blocks and
  // those of other graphs it shares, held so none is freed while this graph uses it.
  std::vector<std::shared_ptr<const vk::MemoryBlock>> blocks_;
  std::shared_ptr<SharedGraphMemory> shared_;
  // Per tensor: the other graph's constant it is bound in; null when none.
  std::vector<std::shared_ptr<const SharedConstant>> shared_constants_;
  // This graph's constants as offered to other graphs (they keep only weak references).
  std::vector<std::shared_ptr<const SharedConstant>> offered_constants_;
  std::vector<MemoryRange> memory_ranges_;  // per tensor
  // constant_host_bytes is the definition's, copied in when read.
  mutable GraphMemoryStats stats_;
};

}  // namespace vkd::graph
