// A ComputeGraph owns GPU tensors and an ordered list of dispatch nodes. prepare() plans and
// binds device memory (intermediates whose lifetimes do not overlap share it), uploads the
// constants in size-bounded batches, creates pipelines and descriptor sets and records ONE
// command buffer for the whole graph (input uploads, every dispatch - with a timestamp pair
// around it when timestamps are on - output downloads); execute() resubmits it. Between two
// dispatches a barrier is recorded only where one touches memory the other writes
// (HazardTracker.h). Host data enters and leaves through per-tensor staging buffers in the tensor's
// device element order (packing happens on the CPU, core/HostPacking.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph/GpuTensor.h"
#include "runtime/graph/HazardTracker.h"
#include "runtime/vk/Commands.h"
#include "runtime/vk/Context.h"
#include "runtime/vk/Descriptors.h"
#include "runtime/vk/TimestampQueries.h"
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

struct NodeTiming {
  std::string op;
  std::string kernel;
  std::string tensors;  // describe_node()
  double gpu_us;
};

// What the driver compiled one dispatch node's kernel into (ComputeGraph::kernel_statistics).
struct NodeKernelStatistics {
  std::string op;
  std::string kernel;
  std::vector<vk::PipelineExecutableStatistics> executables;
};

// Produces a constant's bytes in the tensor's device element order (exactly
// GpuTensor::bytes()); called once during prepare(), then dropped.
using ConstantPacker = std::function<std::vector<uint8_t>()>;
// The default packer: host NCHW bytes (serialization's constant format: float32/int32 4 bytes,
// float16 2, int8/int8x4 1 per element) into the layout of `spec`. `nchw` must stay valid until
// prepare() returns. int8x4 padding lanes get `pad_value`.
ConstantPacker nchw_constant_packer(const TensorSpec& spec, const uint8_t* nchw, size_t bytes,
                                    int8_t pad_value);

// Device memory of a prepared graph, and the peak while loading it.
struct GraphMemoryStats {
  uint64_t constant_host_bytes = 0;         // constants as given (host NCHW)
  uint64_t constant_device_bytes = 0;       // constants on the GPU
  uint64_t io_device_bytes = 0;             // graph inputs and outputs
  uint64_t intermediate_naive_bytes = 0;    // every intermediate in its own memory
  uint64_t intermediate_planned_bytes = 0;  // after lifetime-based sharing
  uint64_t image_bytes = 0;                 // texture tensors (own memory, not shared)
  uint64_t device_bytes = 0;                // all device memory held for tensors
  uint64_t staging_bytes = 0;               // input/output staging kept for execute()
  uint64_t load_peak_bytes = 0;             // device + staging + host packing, during prepare()
};

class ComputeGraph {
 public:
  explicit ComputeGraph(vk::Context& context);
  ~ComputeGraph();
  ComputeGraph(const ComputeGraph&) = delete;
  ComputeGraph& operator=(const ComputeGraph&) = delete;

  vk::Context& context() { return context_; }
  const vk::DeviceProfile& profile() const { return context_.profile(); }

  // An intermediate tensor (or, after add_input/add_output, a graph input/output).
  ValueRef add_tensor(const TensorSpec& spec, std::string name = "");
  // A constant: uploaded once in prepare(), never shared with other tensors.
  ValueRef add_constant(const TensorSpec& spec, std::string name, ConstantPacker packer,
                        uint64_t host_bytes);
  // Upper bound of the host-visible staging used to upload constants (default 16 MiB; a
  // texture constant larger than this is staged whole).
  void set_constant_batch_bytes(uint64_t bytes) { constant_batch_bytes_ = bytes; }
  const TensorSpec& spec(ValueRef ref) const { return tensor(ref).spec(); }
  const GpuTensor& tensor(ValueRef ref) const;
  size_t tensor_count() const { return tensors_.size(); }

  // Checks the binding kinds and constant sizes against the kernel before accepting the node.
  void add_node(DispatchNode node);
  const std::vector<DispatchNode>& nodes() const { return nodes_; }
  // "out: name [1,5,7,9] int8x4 buffer 4W4C; in: ..." for node `index` (binding 0 is the output).
  std::string describe_node(size_t index) const;
  const GraphMemoryStats& memory_stats() const { return stats_; }
  bool is_constant(ValueRef ref) const;
  // A copy of constant `ref`'s packer, for a constant derived from it (e.g. reciprocals), whose
  // own packer then runs in prepare() too. Before prepare() only.
  ConstantPacker constant_packer(ValueRef ref) const;
  // Zero point of an int8x4 tensor as the ops that touch it declare it (host writes pad with
  // it); nullopt when no op declared one.
  void set_zero_point(ValueRef ref, int32_t zero_point);
  std::optional<int32_t> zero_point(ValueRef ref) const { return zero_points_.at(ref); }

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

  // Whether prepare() records the timed forms of the execution (default on), so
  // last_timings() and last_gpu_span_us() can report the GPU side of an execute(). Off, an
  // execute() does no query work at all. Before prepare() only.
  void set_timestamps(bool on);
  bool timestamps() const { return timestamps_on_; }
  // With timestamps on, how the following execute()s are timed. PerDispatch (the default): a
  // timestamp pair around every dispatch and around each staging-copy phase (last_timings(),
  // the span, the copies); the pairs serialize the dispatches and add each one's launch to the
  // span. Span: one pair around all the dispatches and one around each copy phase, nothing
  // between the dispatches: the span as an execute() without profiling runs it (last_timings()
  // empty). Off: no query at all (everything empty / 0).
  enum class ExecutionTiming { Off, Span, PerDispatch };
  void set_execution_timing(ExecutionTiming timing);

  // Whether prepare() may bind a graph input or output whose device form is its host form
  // (staging_is_host_form) straight in host-visible memory, so that memory is its staging:
  // no staging copy on the GPU, and the kernels read the input from / write the output to it.
  // Only where that memory is device-local (and host-cached for an output: a CPU or unified-
  // memory device), for a tensor that is not both an input and an output, not a view and not
  // viewed. Default on; VKD_DIRECT_IO=0 turns the default off (to compare). Before prepare().
  void set_direct_io(bool on);
  // Only after prepare(): whether `ref` was bound so (no staging copy).
  bool direct_io(ValueRef ref) const;

  void prepare();
  bool prepared() const { return prepared_; }

  // Only after prepare(). Where a tensor's bytes live: a buffer's range in its memory block
  // (intermediates whose lifetimes do not overlap may share bytes), an image's own memory.
  const MemoryRange& memory_range(ValueRef ref) const;
  // Whether a barrier is recorded before dispatch node `node` (there is always one before node
  // 0, after the input copies; this says false for it), and how many such barriers separate
  // the dispatch nodes of one execution.
  bool barrier_before(size_t node) const;
  size_t barrier_count() const;

  // Host -> input staging. Float tensors take NCHW float32 (float16 tensors are converted),
  // int32 tensors NCHW int32, int8x4 tensors NCHW int8 (packed on the CPU, padding =
  // pad_value, the tensor's zero point) or raw words.
  // The pointer forms read `count` elements straight from caller memory (no copy).
  void write_float(ValueRef input, const float* nchw, size_t count);
  void write_int32(ValueRef input, const int32_t* nchw, size_t count);
  void write_int8(ValueRef input, const int8_t* nchw, size_t count, int8_t pad_value);
  void write_float(ValueRef input, const std::vector<float>& nchw) {
    write_float(input, nchw.data(), nchw.size());
  }
  void write_int32(ValueRef input, const std::vector<int32_t>& nchw) {
    write_int32(input, nchw.data(), nchw.size());
  }
  void write_int8(ValueRef input, const std::vector<int8_t>& nchw, int8_t pad_value) {
    write_int8(input, nchw.data(), nchw.size(), pad_value);
  }
  void write_words(ValueRef input, const std::vector<int32_t>& words);

  void execute();

  // Whether graph input/output `ref`'s staging memory holds exactly its NCHW host form (a
  // float32 or int32 buffer, width-packed, so contiguous NCHW): then callers may write / read
  // that mapped memory in place (staging_data) and skip the host copy.
  bool staging_is_host_form(ValueRef ref) const;
  // The mapped staging memory of graph input or output `ref`; kept for the graph's lifetime.
  void* staging_data(ValueRef ref);
  // After the host wrote an input's staging in place: its writes made visible to the device.
  void flush_input(ValueRef input);
  // Before the host reads an output's staging in place: the device's writes made visible.
  void invalidate_output(ValueRef output) const { output_staging(output); }
  // Output staging -> host, NCHW. The pointer forms write `count` elements (checked against
  // the tensor) straight into caller memory, unpacked from the mapped staging memory.
  void read_float(ValueRef output, float* nchw, size_t count) const;
  void read_int32(ValueRef output, int32_t* nchw, size_t count) const;
  void read_int8(ValueRef output, int8_t* nchw, size_t count) const;
  std::vector<float> read_float(ValueRef output) const;
  std::vector<int32_t> read_int32(ValueRef output) const;
  std::vector<int8_t> read_int8(ValueRef output) const;
  std::vector<int32_t> read_words(ValueRef output) const;

  // GPU time of every dispatch node in the last execute() (empty without timestamp support).
  std::vector<NodeTiming> last_timings() const;
  // First dispatch's start to last dispatch's end in the last execute() (µs): the GPU time of
  // the dispatches with the gaps between them; 0 without timestamps or dispatch nodes.
  double last_gpu_span_us() const;
  // GPU time of the staging copies in the last execute() (µs): inputs staging -> tensors,
  // tensors -> output staging; zeros without timestamps.
  struct CopyTimes {
    double inputs_us = 0.0, outputs_us = 0.0;
  };
  CopyTimes last_copy_times() const;

  // Per dispatch node, in order: the kernel and its pipeline's driver statistics (registers,
  // shared memory, ...). Empty when the context does not capture them
  // (ContextOptions::capture_kernel_statistics off, or the device lacks the extension).
  // Only after prepare(), which creates the pipelines.
  std::vector<NodeKernelStatistics> kernel_statistics() const;

  // Benchmarking: runs the dispatch nodes only (no staging copies) `warmup` + 2 x
  // `repetitions` times back to back in one submission, so the GPU stays busy and its clocks
  // up, with an execution's barriers between its dispatches (only where a hazard needs one:
  // independent dispatches overlap) and one between repetitions. The first `repetitions` are
  // timed end to end (end_to_end_us), the second with timestamps around each dispatch
  // (kernel_us: the sum of the dispatches' own spans, what a per-kernel profiler reports; the
  // timestamps serialize the dispatches, so this includes each one's launch). Microseconds,
  // one entry per repetition. Inputs keep whatever the last execute() uploaded.
  struct BenchmarkTimes {
    std::vector<double> end_to_end_us;
    std::vector<double> kernel_us;
  };
  BenchmarkTimes benchmark(uint32_t warmup, uint32_t repetitions);

 private:
  struct Staging {
    ValueRef tensor;
    vk::Buffer buffer;    // empty when the tensor is bound in host-visible memory (direct)
    bool direct = false;  // then the tensor's own buffer is the staging
  };
  const vk::Buffer& staging_buffer(const Staging& s) const {
    return s.direct ? tensor(s.tensor).buffer() : s.buffer;
  }
  bool wants_direct_io(size_t ref) const;  // plan_and_bind_memory's choice
  enum Role : uint8_t { kIntermediate = 0, kInput = 1, kOutput = 2, kConstant = 4 };
  struct BufferGroup;  // buffers whose memory is planned together (ComputeGraph.cpp)

  // prepare()'s steps, in order.
  void plan_and_bind_memory();
  void collect_buffer_groups(BufferGroup& persistent, BufferGroup& intermediates);
  void plan_buffer_groups(BufferGroup& persistent, BufferGroup& intermediates);
  void bind_buffer_group(const BufferGroup& group);
  void bind_views();  // each view's buffer in its root's memory
  // What each dispatch node may read and write, from its bindings and the kernel's reflection.
  std::vector<NodeAccess> node_accesses() const;
  void create_staging_buffers();
  void create_pipelines();
  void create_descriptor_sets();
  std::vector<vk::DescriptorResource> descriptor_resources(size_t node_index) const;
  void initialize_image_layouts();
  // Staging bytes for the constant upload: 0 without constants.
  uint64_t constant_staging_capacity() const;
  void upload_constants();
  void record_execution();
  struct TimedRegions;  // which timestamp region each part of the execution is (ComputeGraph.cpp)
  vk::CommandBuffer record_execution(const vk::TimestampQueries& ts, const TimedRegions& regions);

  void note_load_bytes(uint64_t transient_bytes);
  const Staging& staging_for(const std::vector<Staging>& list, ValueRef ref,
                             const char* role) const;
  // The mapped staging memory of an input (`bytes` long, checked) / of an output (made
  // visible to the host first).
  void* input_staging(ValueRef input, size_t bytes);
  const void* output_staging(ValueRef output) const;
  // Caller NCHW values <-> a float32 / int32 input's or output's staging memory: one copy
  // shared by the context's host copy threads where the staging is the host form
  // (staging_is_host_form), else packed / unpacked element runs.
  template <typename T>
  void pack_input(ValueRef input, const T* nchw);
  template <typename T>
  void unpack_output(ValueRef output, T* nchw) const;
  void record_dispatch(vk::CommandBuffer& cb, size_t node_index);

  vk::Context& context_;
  std::vector<std::unique_ptr<GpuTensor>> tensors_;
  std::vector<uint8_t> roles_;           // Role bits per tensor
  std::vector<ConstantPacker> packers_;  // per tensor; empty unless constant
  std::vector<std::optional<int32_t>> zero_points_;
  struct Alias {
    ValueRef base = -1;  // -1: no view
    uint64_t offset = 0;
  };
  std::vector<Alias> aliases_;              // per tensor, see alias()
  std::vector<vk::MemoryBlock> blocks_;     // shared memory the buffers are bound in
  std::vector<MemoryRange> memory_ranges_;  // per tensor, from plan_and_bind_memory()
  std::vector<bool> barrier_before_;        // per dispatch node, from prepare()
  uint64_t constant_batch_bytes_ = 16ull << 20;
  GraphMemoryStats stats_;
  std::vector<DispatchNode> nodes_;
  std::vector<ValueRef> input_refs_, output_refs_;
  std::vector<Staging> inputs_, outputs_;
  bool prepared_ = false;
  bool timestamps_on_ = true;
  bool direct_io_on_ = true;
  std::vector<bool> direct_io_;  // per tensor, from prepare()
  vk::DescriptorPool descriptor_pool_;
  vk::TimestampQueries timestamps_;         // per dispatch node, then the two copy phases
  vk::TimestampQueries span_timestamps_;    // all the dispatches, then the two copy phases
  vk::CommandBuffer command_buffer_;        // execute() without timestamp queries
  vk::CommandBuffer timed_command_buffer_;  // with timestamps_ (timestamps on)
  vk::CommandBuffer span_command_buffer_;   // with span_timestamps_ (timestamps on)
  ExecutionTiming timing_ = ExecutionTiming::PerDispatch;
  ExecutionTiming last_timing_ = ExecutionTiming::Off;  // of the last execute()
  std::vector<const vk::Pipeline*> node_pipelines_;
  std::vector<VkDescriptorSet> node_sets_;
};

}  // namespace vkd::graph
