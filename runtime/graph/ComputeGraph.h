// A ComputeGraph owns GPU tensors and an ordered list of dispatch nodes: the op builders add
// them through its build API (GraphDefinition.h). prepare() then places the tensors in memory
// (GraphMemory.h: intermediates whose lifetimes do not overlap share it), creates the staging
// of the inputs and outputs (GraphIO.h), pipelines, descriptor sets and barriers, uploads the
// constants in size-bounded batches (ConstantUpload.h) and records ONE command buffer for the
// whole graph (GraphRecorder.h); execute() resubmits it. This class is the facade that owns
// those parts and runs prepare()'s steps in order; each method below is documented in the part
// that implements it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/graph/GraphDefinition.h"
#include "runtime/graph/GraphIO.h"
#include "runtime/graph/GraphMemory.h"
#include "runtime/graph/GraphRecorder.h"

namespace vkd::graph {

// The definition is a private base: callers see its build API (below) but not what it gives
// the parts only.
class ComputeGraph : private GraphDefinition {
 public:
  explicit ComputeGraph(vk::Context& context);
  ~ComputeGraph();

  // The build API (GraphDefinition.h).
  using GraphDefinition::add_constant;
  using GraphDefinition::add_input;
  using GraphDefinition::add_node;
  using GraphDefinition::add_output;
  using GraphDefinition::add_tensor;
  using GraphDefinition::add_way_down;
  using GraphDefinition::alias;
  using GraphDefinition::alias_root;
  using GraphDefinition::constant_packer;
  using GraphDefinition::context;
  using GraphDefinition::describe_node;
  using GraphDefinition::id_limit;
  using GraphDefinition::is_constant;
  using GraphDefinition::limit_ids;
  using GraphDefinition::nodes;
  using GraphDefinition::output_refs;
  using GraphDefinition::place_together;
  using GraphDefinition::prepared;
  using GraphDefinition::profile;
  using GraphDefinition::set_zero_point;
  using GraphDefinition::spec;
  using GraphDefinition::tensor;
  using GraphDefinition::tensor_count;
  using GraphDefinition::ways_down;
  using GraphDefinition::zero_point;

  // Settings, before prepare() only. The upper bound of the host-visible staging used to
  // upload constants (default 16 MiB; a texture constant larger than this is staged whole).
  void set_constant_batch_bytes(uint64_t bytes) { constant_batch_bytes_ = bytes; }
  void set_timestamps(bool on) { recorder_.set_timestamps(on); }  // GraphRecorder.h
  bool timestamps() const { return recorder_.timestamps(); }
  using ExecutionTiming = GraphRecorder::ExecutionTiming;
  void set_execution_timing(ExecutionTiming timing) { recorder_.set_execution_timing(timing); }
  // Direct I/O (GraphMemory::set_direct_io): default on; VKD_DIRECT_IO=0 turns it off.
  void set_direct_io(bool on);
  // Constants and intermediates shared with the model's other graphs (GraphMemory::set_shared).
  void set_shared_memory(std::shared_ptr<SharedGraphMemory> shared);

  void prepare();

  // Memory (GraphMemory.h), only after prepare().
  bool direct_io(ValueRef ref) const;
  const MemoryRange& memory_range(ValueRef ref) const;
  const GraphMemoryStats& memory_stats() const { return memory_.stats(); }

  // The recorded execution (GraphRecorder.h).
  bool barrier_before(size_t node) const { return recorder_.barrier_before(node); }
  size_t barrier_count() const { return recorder_.barrier_count(); }
  void execute() { recorder_.execute(); }
  std::vector<NodeTiming> last_timings() const { return recorder_.last_timings(); }
  double last_gpu_span_us() const { return recorder_.last_gpu_span_us(); }
  using CopyTimes = GraphRecorder::CopyTimes;
  CopyTimes last_copy_times() const { return recorder_.last_copy_times(); }
  std::vector<NodeKernelStatistics> kernel_statistics() const {
    return recorder_.kernel_statistics();
  }
  using BenchmarkTimes = GraphRecorder::BenchmarkTimes;
  BenchmarkTimes benchmark(uint32_t warmup, uint32_t repetitions) {
    return recorder_.benchmark(warmup, repetitions);
  }

  // Host data in and out (GraphIO.h).
  void write_float(ValueRef input, const float* nchw, size_t count) {
    io_.write_float(input, nchw, count);
  }
  void write_int32(ValueRef input, const int32_t* nchw, size_t count) {
    io_.write_int32(input, nchw, count);
  }
  void write_int8(ValueRef input, const int8_t* nchw, size_t count, int8_t pad_value) {
    io_.write_int8(input, nchw, count, pad_value);
  }
  void write_float(ValueRef input, const std::vector<float>& nchw) {
    io_.write_float(input, nchw.data(), nchw.size());
  }
  void write_int32(ValueRef input, const std::vector<int32_t>& nchw) {
    io_.write_int32(input, nchw.data(), nchw.size());
  }
  void write_int8(ValueRef input, const std::vector<int8_t>& nchw, int8_t pad_value) {
    io_.write_int8(input, nchw.data(), nchw.size(), pad_value);
  }
  void write_words(ValueRef input, const std::vector<int32_t>& words) {
    io_.write_words(input, words);
  }
  bool staging_is_host_form(ValueRef ref) const { return io_.staging_is_host_form(ref); }
  void* staging_data(ValueRef ref) { return io_.staging_data(ref); }
  void flush_input(ValueRef input) { io_.flush_input(input); }
  void invalidate_output(ValueRef output) const { io_.invalidate_output(output); }
  void read_float(ValueRef output, float* nchw, size_t count) const {
    io_.read_float(output, nchw, count);
  }
  void read_int32(ValueRef output, int32_t* nchw, size_t count) const {
    io_.read_int32(output, nchw, count);
  }
  void read_int8(ValueRef output, int8_t* nchw, size_t count) const {
    io_.read_int8(output, nchw, count);
  }
  std::vector<float> read_float(ValueRef output) const { return io_.read_float(output); }
  std::vector<int32_t> read_int32(ValueRef output) const { return io_.read_int32(output); }
  std::vector<int8_t> read_int8(ValueRef output) const { return io_.read_int8(output); }
  std::vector<int32_t> read_words(ValueRef output) const { return io_.read_words(output); }

 private:
  // Declared in the order they are built; destroyed in reverse: the recorded command buffers
  // before the staging they copy, the staging before the memory, the tensors (the base) last.
  GraphMemory memory_;
  GraphIO io_;
  GraphRecorder recorder_;
  uint64_t constant_batch_bytes_ = 16ull << 20;
};

}  // namespace vkd::graph
