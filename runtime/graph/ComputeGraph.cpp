#include "runtime/graph/ComputeGraph.h"

#include "core/Error.h"
#include "runtime/graph/ConstantUpload.h"

namespace vkd::graph {

ComputeGraph::ComputeGraph(vk::Context& context)
    : GraphDefinition(context),
      memory_(context, *this),
      io_(context, *this),
      recorder_(context, *this) {}

ComputeGraph::~ComputeGraph() {
  // A timed-out submission may still use this graph's buffers, descriptor sets and command
  // buffer: wait for it before they are destroyed.
  if (context().timed_out()) {
    try {
      context().wait_idle();
    } catch (const Error&) {
      // Device lost while waiting: nothing runs any more, destruction is safe.
    }
  }
}

void ComputeGraph::set_direct_io(bool on) {
  VKD_CHECK(!prepared(), ErrorCode::Internal, "set_direct_io() after prepare()");
  memory_.set_direct_io(on);
}

void ComputeGraph::set_shared_memory(std::shared_ptr<SharedGraphMemory> shared) {
  VKD_CHECK(!prepared(), ErrorCode::Internal, "set_shared_memory() after prepare()");
  memory_.set_shared(std::move(shared));
}

bool ComputeGraph::direct_io(ValueRef ref) const {
  VKD_CHECK(prepared(), ErrorCode::Internal, "direct_io() before prepare()");
  tensor(ref);
  return memory_.direct_io(ref);
}

const MemoryRange& ComputeGraph::memory_range(ValueRef ref) const {
  VKD_CHECK(prepared(), ErrorCode::Internal, "memory_range() before prepare()");
  tensor(ref);
  return memory_.range(ref);
}

void ComputeGraph::prepare() {
  VKD_CHECK(!prepared(), ErrorCode::Internal, "prepare() called twice");
  memory_.plan_and_bind();
  recorder_.plan_barriers(memory_);
  io_.create_staging_buffers(memory_);
  recorder_.create_pipelines();
  recorder_.create_descriptor_sets();
  recorder_.create_timestamp_queries();
  recorder_.initialize_image_layouts();
  upload_constants(context(), *this, memory_, constant_batch_bytes_);
  recorder_.record(io_);
  mark_prepared();
}

}  // namespace vkd::graph
