#include "runtime/graph/GraphRecorder.h"

#include <algorithm>

#include "core/Error.h"
#include "runtime/graph/GraphCommands.h"
#include "runtime/graph/HazardTracker.h"

namespace vkd::graph {
namespace {

using shaders::DescriptorKind;

VkDescriptorType to_vk(DescriptorKind kind) {
  return kind == DescriptorKind::StorageImage ? VK_DESCRIPTOR_TYPE_STORAGE_IMAGE
                                              : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}

// Descriptor sets and bindings of every node's kernel, for the descriptor pool.
vk::DescriptorTally descriptor_tally(const std::vector<DispatchNode>& nodes) {
  vk::DescriptorTally tally;
  for (const auto& node : nodes) {
    const auto& info = shaders::shader_info(node.kernel);
    tally.sets += 1;
    for (uint32_t i = 0; i < info.binding_count; ++i) {
      (info.bindings[i] == DescriptorKind::StorageImage ? tally.storage_images
                                                        : tally.storage_buffers) += 1;
    }
  }
  return tally;
}

// What each dispatch node may read and write, from its bindings and the kernel's reflection.
std::vector<NodeAccess> node_accesses(const std::vector<DispatchNode>& nodes,
                                      const GraphMemory& memory) {
  std::vector<NodeAccess> accesses(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    const auto& info = shaders::shader_info(nodes[n].kernel);
    for (uint32_t i = 0; i < info.binding_count; ++i) {
      const MemoryRange& range = memory.range(nodes[n].bindings[i]);
      (shaders::writes_binding(info, i) ? accesses[n].writes : accesses[n].reads).push_back(range);
    }
  }
  return accesses;
}

}  // namespace

GraphRecorder::GraphRecorder(vk::Context& context, const GraphDefinition& graph)
    : context_(context), graph_(graph) {}

void GraphRecorder::set_timestamps(bool on) {
  VKD_CHECK(!graph_.prepared(), ErrorCode::Internal, "set_timestamps() after prepare()");
  timestamps_on_ = on;
  timing_ = on ? ExecutionTiming::PerDispatch : ExecutionTiming::Off;
}

void GraphRecorder::set_execution_timing(ExecutionTiming timing) {
  VKD_CHECK(timing == ExecutionTiming::Off || timestamps_on_, ErrorCode::InvalidArgument,
            "timed execution needs the graph's timestamps on before prepare()");
  timing_ = timing;
}

void GraphRecorder::plan_barriers(const GraphMemory& memory) {
  barrier_before_ = graph::plan_barriers(node_accesses(graph_.nodes(), memory));
}

bool GraphRecorder::barrier_before(size_t node) const {
  VKD_CHECK(graph_.prepared(), ErrorCode::Internal, "barrier_before() before prepare()");
  VKD_CHECK(node < graph_.nodes().size(), ErrorCode::Internal, "node ", node, " out of range");
  return barrier_before_[node];
}

size_t GraphRecorder::barrier_count() const {
  VKD_CHECK(graph_.prepared(), ErrorCode::Internal, "barrier_count() before prepare()");
  return static_cast<size_t>(std::count(barrier_before_.begin(), barrier_before_.end(), true));
}

// One pipeline per distinct (kernel, local size, specialization constants) the nodes use,
// the missing ones created together on the context's pipeline threads.
void GraphRecorder::create_pipelines() {
  std::vector<vk::PipelineKey> keys;
  keys.reserve(graph_.nodes().size());
  for (const auto& node : graph_.nodes()) {
    keys.push_back({node.kernel, node.plan.local_size, node.spec_constants});
  }
  node_pipelines_ = context_.pipelines().get_all(keys);
}

void GraphRecorder::create_descriptor_sets() {
  descriptor_pool_ = vk::DescriptorPool(context_.device(), descriptor_tally(graph_.nodes()));
  for (size_t n = 0; n < graph_.nodes().size(); ++n) {
    VkDescriptorSet set = descriptor_pool_.allocate(node_pipelines_[n]->set_layout);
    descriptor_pool_.write(set, descriptor_resources(n));
    node_sets_.push_back(set);
  }
}

std::vector<vk::DescriptorResource> GraphRecorder::descriptor_resources(size_t n) const {
  const auto& info = shaders::shader_info(graph_.nodes()[n].kernel);
  std::vector<vk::DescriptorResource> resources;
  for (uint32_t i = 0; i < info.binding_count; ++i) {
    const GpuTensor& t = graph_.tensor(graph_.nodes()[n].bindings[i]);
    vk::DescriptorResource r{to_vk(info.bindings[i])};
    if (t.is_image()) {
      r.image_view = t.image().view();
    } else {
      r.buffer = t.buffer().handle();
    }
    resources.push_back(r);
  }
  return resources;
}

void GraphRecorder::create_timestamp_queries() {
  if (!timestamps_on_) return;
  // One region per dispatch node (or one for them all), then the input copies and the output
  // copies.
  timestamps_ = vk::TimestampQueries(context_.device(), context_.profile(),
                                     static_cast<uint32_t>(graph_.nodes().size()) + 2);
  span_timestamps_ = vk::TimestampQueries(context_.device(), context_.profile(), 3);
}

void GraphRecorder::initialize_image_layouts() {
  // Images start UNDEFINED; move every one to GENERAL once (no submission without images).
  std::vector<VkImage> images;
  for (ValueRef ref = 0; static_cast<size_t>(ref) < graph_.tensor_count(); ++ref) {
    if (graph_.tensor(ref).is_image()) images.push_back(graph_.tensor(ref).image().handle());
  }
  if (images.empty()) return;
  vk::CommandBuffer init = context_.new_command_buffer();
  init.begin(true);
  for (VkImage image : images) init.image_to_general(image);
  init.end();
  submit_and_wait_keeping(context_, init, "image layout initialization");
}

// Where record_execution() writes its timestamp pairs: dispatch node n into region
// `dispatch0 + n` (per_dispatch) or all the dispatches into region `dispatch0`, then the input
// and output copy phases.
struct GraphRecorder::TimedRegions {
  bool per_dispatch = true;
  uint32_t dispatch0 = 0, copy_in = 0, copy_out = 0;
};

// The command buffer execute() resubmits: input staging -> tensors, every dispatch, tensors ->
// output staging. With timestamps on, three are recorded: one without queries (runs that are
// not profiled pay for none), one with a pair around every dispatch and one with a pair around
// all of them (set_execution_timing).
void GraphRecorder::record(const GraphIO& io) {
  const vk::TimestampQueries none;
  const auto nodes = static_cast<uint32_t>(graph_.nodes().size());
  command_buffer_ = record_execution(io, none, {});
  if (!timestamps_.enabled()) return;
  timed_command_buffer_ = record_execution(io, timestamps_, {true, 0, nodes, nodes + 1});
  span_command_buffer_ = record_execution(io, span_timestamps_, {false, 0, 1, 2});
}

vk::CommandBuffer GraphRecorder::record_execution(const GraphIO& io, const vk::TimestampQueries& ts,
                                                  const TimedRegions& regions) {
  vk::CommandBuffer cb = context_.new_command_buffer();
  cb.begin(false);
  ts.reset(cb);
  ts.begin(cb, regions.copy_in);
  for (const auto& s : io.inputs()) {
    if (!s.direct) record_copy(cb, graph_.tensor(s.tensor), s.buffer.handle(), true);
  }
  ts.end(cb, regions.copy_in);
  for (size_t n = 0; n < graph_.nodes().size(); ++n) {
    // After the input copies a full barrier; between dispatches a compute-only one, and only
    // where the dispatch depends on one since the last barrier (or overwrites what it reads).
    if (n == 0) {
      cb.memory_barrier();
    } else if (barrier_before_[n]) {
      cb.compute_barrier();
    }
    const auto region = regions.dispatch0 + (regions.per_dispatch ? static_cast<uint32_t>(n) : 0);
    if (regions.per_dispatch || n == 0) ts.begin(cb, region);
    record_dispatch(cb, n);
    if (regions.per_dispatch || n + 1 == graph_.nodes().size()) ts.end(cb, region);
  }
  if (graph_.nodes().empty() && !regions.per_dispatch) {  // an empty span, but every query written
    ts.begin(cb, regions.dispatch0);
    ts.end(cb, regions.dispatch0);
  }
  // The dispatches' writes before the output copies; with no copy (every output bound in host
  // memory) and no timestamps, only the host barrier below.
  const bool copies_out = std::any_of(io.outputs().begin(), io.outputs().end(),
                                      [](const auto& s) { return !s.direct; });
  if (copies_out || ts.enabled()) cb.memory_barrier();
  ts.begin(cb, regions.copy_out);
  for (const auto& s : io.outputs()) {
    if (!s.direct) record_copy(cb, graph_.tensor(s.tensor), s.buffer.handle(), false);
  }
  ts.end(cb, regions.copy_out);
  // Make the transfer writes visible to the host.
  cb.host_read_barrier();
  cb.end();
  return cb;
}

void GraphRecorder::record_dispatch(vk::CommandBuffer& cb, size_t n) {
  const DispatchNode& node = graph_.nodes()[n];
  const vk::Pipeline& p = *node_pipelines_[n];
  cb.bind_compute_pipeline(p.pipeline);
  cb.bind_descriptor_set(p.layout, node_sets_[n]);
  if (!node.push_constants.empty()) {
    cb.push_constants(p.layout, node.push_constants.data(),
                      static_cast<uint32_t>(node.push_constants.size()));
  }
  const auto& groups = node.plan.group_count;
  cb.dispatch(groups[0], groups[1], groups[2]);
}

void GraphRecorder::execute() {
  VKD_CHECK(graph_.prepared(), ErrorCode::Internal, "execute() before prepare()");
  const ExecutionTiming timing = timestamps_.enabled() ? timing_ : ExecutionTiming::Off;
  last_timing_ = ExecutionTiming::Off;
  context_.submit_and_wait(timing == ExecutionTiming::PerDispatch ? timed_command_buffer_
                           : timing == ExecutionTiming::Span      ? span_command_buffer_
                                                                  : command_buffer_,
                           "graph execution");
  last_timing_ = timing;
}

std::vector<NodeTiming> GraphRecorder::last_timings() const {
  std::vector<NodeTiming> out;
  if (last_timing_ != ExecutionTiming::PerDispatch) return out;
  const auto us = timestamps_.read_us();
  const auto& nodes = graph_.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    out.push_back(
        {nodes[n].op, shaders::shader_info(nodes[n].kernel).name, graph_.describe_node(n), us[n]});
  }
  return out;
}

double GraphRecorder::last_gpu_span_us() const {
  if (graph_.nodes().empty()) return 0.0;
  switch (last_timing_) {
    case ExecutionTiming::PerDispatch:
      return timestamps_.span_us(0, static_cast<uint32_t>(graph_.nodes().size()) - 1);
    case ExecutionTiming::Span: return span_timestamps_.read_us()[0];
    case ExecutionTiming::Off: break;
  }
  return 0.0;
}

GraphRecorder::CopyTimes GraphRecorder::last_copy_times() const {
  if (last_timing_ == ExecutionTiming::Off) return {};
  const bool span = last_timing_ == ExecutionTiming::Span;
  const auto us = (span ? span_timestamps_ : timestamps_).read_us();
  const size_t copy_in = span ? 1 : graph_.nodes().size();
  return {us[copy_in], us[copy_in + 1]};
}

std::vector<NodeKernelStatistics> GraphRecorder::kernel_statistics() const {
  VKD_CHECK(graph_.prepared(), ErrorCode::Internal, "kernel_statistics() before prepare()");
  std::vector<NodeKernelStatistics> out;
  const vk::PipelineCache& pipelines = context_.pipelines();
  if (!pipelines.captures_statistics()) return out;
  const auto& nodes = graph_.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    out.push_back({nodes[n].op, shaders::shader_info(nodes[n].kernel).name,
                   pipelines.statistics(node_pipelines_[n]->pipeline)});
  }
  return out;
}

GraphRecorder::BenchmarkTimes GraphRecorder::benchmark(uint32_t warmup, uint32_t repetitions) {
  VKD_CHECK(graph_.prepared(), ErrorCode::Internal, "benchmark() before prepare()");
  const vk::DeviceProfile& profile = context_.profile();
  VKD_CHECK(profile.timestamps, ErrorCode::Unsupported, "device '", profile.name,
            "' has no timestamp queries on its compute queue");
  const uint32_t nodes = static_cast<uint32_t>(graph_.nodes().size());
  vk::TimestampQueries whole(context_.device(), profile, repetitions);
  vk::TimestampQueries kernels(context_.device(), profile, repetitions * nodes);
  vk::CommandBuffer cb = context_.new_command_buffer();
  cb.begin(true);
  whole.reset(cb);
  kernels.reset(cb);
  // Repetition r: warm-up below `warmup`, then `repetitions` timed end to end, then as many
  // kernel-timed ones.
  for (uint32_t r = 0; r < warmup + 2 * repetitions; ++r) {
    // A full barrier first (earlier submissions copied the inputs), then compute-only ones:
    // nothing in here is copied. Always one between repetitions: the first nodes of the next
    // may overwrite what the last ones of this one read; within one, only the graph's own.
    if (r == 0) {
      cb.memory_barrier();
    } else {
      cb.compute_barrier();
    }
    const bool whole_timed = r >= warmup && r < warmup + repetitions;
    const bool kernel_timed = r >= warmup + repetitions;
    const uint32_t rep = kernel_timed ? r - warmup - repetitions : r - warmup;
    if (whole_timed) whole.begin(cb, rep);
    for (uint32_t n = 0; n < nodes; ++n) {
      if (barrier_before_[n]) cb.compute_barrier();
      if (kernel_timed) kernels.begin(cb, rep * nodes + n);
      record_dispatch(cb, n);
      if (kernel_timed) kernels.end(cb, rep * nodes + n);
    }
    if (whole_timed) whole.end(cb, rep);
  }
  cb.end();
  submit_and_wait_keeping(context_, cb, "benchmark", whole, kernels);
  BenchmarkTimes times;
  times.end_to_end_us = whole.read_us();
  const std::vector<double> spans = kernels.read_us();
  times.kernel_us.assign(repetitions, 0.0);
  for (size_t i = 0; i < spans.size(); ++i) times.kernel_us[i / nodes] += spans[i];
  return times;
}

}  // namespace vkd::graph
