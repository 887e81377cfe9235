// What the GPU runs for a prepared graph: a pipeline and a descriptor set per dispatch node,
// barriers only where one dispatch touches memory another writes (HazardTracker.h), and ONE
// recorded command buffer resubmitted by every execute(): input staging -> tensors, every
// dispatch, tensors -> output staging. With timestamps on, also the timed forms of it and
// what their queries measured; and benchmark(), the dispatches alone repeated back to back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/graph/GraphDefinition.h"
#include "runtime/graph/GraphIO.h"
#include "runtime/graph/GraphMemory.h"
#include "runtime/vk/Commands.h"
#include "runtime/vk/Descriptors.h"
#include "runtime/vk/TimestampQueries.h"

namespace vkd::graph {

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

class GraphRecorder {
 public:
  GraphRecorder(vk::Context& context, const GraphDefinition& graph);

  // Whether record() records the timed forms of the execution (default on), so last_timings()
  // and last_gpu_span_us() can report the GPU side of an execute(). Off, an execute() does no
  // query work at all.
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

  // prepare()'s steps, in this order between the memory plan and the constant upload (which
  // needs the images in GENERAL layout), then record() last.
  void plan_barriers(const GraphMemory& memory);
  // Pipelines first (a kernel the device cannot build fails here, before any recording).
  void create_pipelines();
  void create_descriptor_sets();
  void create_timestamp_queries();
  void initialize_image_layouts();
  void record(const GraphIO& io);

  // Whether a barrier is recorded before dispatch node `node` (there is always one before node
  // 0, after the input copies; this says false for it), and how many such barriers separate
  // the dispatch nodes of one execution. Only after prepare().
  bool barrier_before(size_t node) const;
  size_t barrier_count() const;

  void execute();

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
  std::vector<vk::DescriptorResource> descriptor_resources(size_t node_index) const;
  struct TimedRegions;  // which timestamp region each part of the execution is (.cpp)
  vk::CommandBuffer record_execution(const GraphIO& io, const vk::TimestampQueries& ts,
                                     const TimedRegions& regions);
  void record_dispatch(vk::CommandBuffer& cb, size_t node_index);

  vk::Context& context_;
  const GraphDefinition& graph_;
  std::vector<bool> barrier_before_;  // per dispatch node
  bool timestamps_on_ = true;
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
