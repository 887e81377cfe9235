#include "runtime/graph/GraphMemory.h"

#include <algorithm>
#include <string>

#include "core/Env.h"
#include "core/Error.h"
#include "runtime/graph/MemoryPlanner.h"

namespace vkd::graph {

bool staging_is_host_form(const TensorSpec& spec) {
  return (spec.dtype == DType::Float32 || spec.dtype == DType::Int32) &&
         spec.storage == StorageType::Buffer && spec.layout == MemoryLayout::WidthPacked;
}

GraphMemory::GraphMemory(vk::Context& context, GraphDefinition& graph)
    : context_(context),
      graph_(graph),
      direct_io_on_(env_string("VKD_DIRECT_IO").empty() || env_flag("VKD_DIRECT_IO")) {}

const GraphMemoryStats& GraphMemory::stats() const {
  stats_.constant_host_bytes = graph_.constant_host_bytes();
  return stats_;
}

// Buffers whose memory is planned together: the persistent ones (constants, inputs, outputs and
// tensors no node binds) packed side by side, or the intermediates shared by lifetime.
struct GraphMemory::BufferGroup {
  const char* what;  // in errors and block names
  std::vector<PlanItem> items;
  std::vector<ValueRef> refs;  // the tensor of each item
  uint32_t type_bits = ~0u;    // the memory types every buffer of the group accepts
  MemoryPlan plan;
};

namespace {

// Lifetimes in node indices: the first and the last node binding each tensor (nodes + 1 and -1
// for a tensor no node binds).
struct Lifetimes {
  std::vector<int64_t> first, last;
};

Lifetimes tensor_lifetimes(const std::vector<DispatchNode>& nodes, size_t tensor_count) {
  const int64_t last_node = static_cast<int64_t>(nodes.size());
  Lifetimes life{std::vector<int64_t>(tensor_count, last_node + 1),
                 std::vector<int64_t>(tensor_count, -1)};
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueRef ref : nodes[n].bindings) {
      life.first[ref] = std::min<int64_t>(life.first[ref], static_cast<int64_t>(n));
      life.last[ref] = std::max<int64_t>(life.last[ref], static_cast<int64_t>(n));
    }
  }
  return life;
}

// Whole-model check before the first allocation: a model larger than the device's memory is a
// clear error, not a driver failure halfway through (or silent oversubscription).
void check_fits_device_heap(const vk::DeviceProfile& profile, uint64_t persistent_bytes,
                            uint64_t intermediate_bytes, uint64_t image_bytes) {
  const uint64_t total = image_bytes + persistent_bytes + intermediate_bytes;
  const uint64_t heap = profile.device_local_heap_bytes;
  const auto mib = [](uint64_t bytes) { return (bytes + (1u << 20) - 1) >> 20; };
  VKD_CHECK(heap == 0 || total <= heap, ErrorCode::OutOfMemory, "the model needs ", mib(total),
            " MiB of device memory (constants, inputs and outputs ", mib(persistent_bytes),
            " MiB, intermediates ", mib(intermediate_bytes), " MiB, textures ", mib(image_bytes),
            " MiB); device '", profile.name, "' has a ", mib(heap), " MiB device-local heap");
}

}  // namespace

void GraphMemory::plan_and_bind() {
  direct_io_.assign(graph_.tensor_count(), false);
  const Lifetimes life = tensor_lifetimes(graph_.nodes(), graph_.tensor_count());
  for (size_t i = 0; i < graph_.tensor_count(); ++i) {
    direct_io_[i] = wants_direct_io(i, life.first[i] == life.last[i]);
  }
  shared_constants_.assign(graph_.tensor_count(), nullptr);
  if (shared_ && shared_->has_constants()) find_shared_constants();
  BufferGroup persistent{"graph constants, inputs and outputs"};
  BufferGroup intermediates{"graph intermediates"};
  collect_buffer_groups(persistent, intermediates);
  memory_ranges_.assign(graph_.tensor_count(), MemoryRange{});
  plan_buffer_groups(persistent, intermediates);
  bind_buffer_group(persistent, false);
  bind_buffer_group(intermediates, shared_ != nullptr);
  bind_shared_constants();
  bind_views();
  // Images and the direct inputs / outputs own their memory: ids after the blocks', each its
  // own.
  auto next_memory = static_cast<uint32_t>(blocks_.size());
  for (size_t i = 0; i < graph_.tensor_count(); ++i) {
    GpuTensor& t = graph_.tensor_to_bind(static_cast<ValueRef>(i));
    if (t.is_image()) memory_ranges_[i] = {next_memory++, 0, t.bytes()};
    if (!direct_io_[i]) continue;
    const bool input = graph_.roles()[i] & GraphDefinition::kInput;
    t.buffer_to_bind() = context_.memory().create_buffer(
        t.bytes(), input ? vk::MemoryUse::DirectUpload : vk::MemoryUse::HostReadback,
        std::string(input ? "input" : "output") + " tensor '" + t.name() + "' (its own staging)");
    memory_ranges_[i] = {next_memory++, 0, t.buffer().size()};
  }
}

bool GraphMemory::wants_direct_io(size_t index, bool one_node) const {
  const auto ref = static_cast<ValueRef>(index);
  const uint8_t role = graph_.roles()[index];
  if (!direct_io_on_ || (role & GraphDefinition::kConstant) ||
      (role != GraphDefinition::kInput && role != GraphDefinition::kOutput)) {
    return false;
  }
  if (!staging_is_host_form(graph_.spec(ref)) || graph_.is_view(ref)) return false;
  if (graph_.is_viewed(ref)) return false;  // planned with its views
  // Only where the memory is the GPU's own (and, read back, cached for the CPU): on an H100 the
  // host memory its staging uses made refinenet_lite's span 763 us instead of 152 (the float
  // head writing 1.2 MB across PCIe took 595 us, the stem reading its input 39). An input takes
  // mappable device-local memory where there is some (DirectUpload: the H100's BAR), an output
  // needs it cached for the CPU's reads too (unified memory).
  const bool input = role == GraphDefinition::kInput;
  const VkMemoryPropertyFlags flags = context_.memory().memory_flags(
      input ? vk::MemoryUse::DirectUpload : vk::MemoryUse::HostReadback,
      graph_.tensor(ref).buffer().requirements().memoryTypeBits);
  const VkMemoryPropertyFlags needed =
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | (input ? 0 : VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  if ((flags & needed) == needed) return true;
  // A small output that only its writer binds (one node in its lifetime) may live in the CPU's
  // cached memory anyway: the GPU writing its few bytes across the bus costs less than the copy and
  // barrier of a staging copy (H200: 3.2 us for MiniLM's 1.5 KB sentence embedding).
  return !input && (flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) &&
         graph_.tensor(ref).bytes() <= kDirectHostOutputMaxBytes && one_node;
}

void GraphMemory::collect_buffer_groups(BufferGroup& persistent_group, BufferGroup& intermediates) {
  // Inputs, outputs and constants live for the whole graph (they hold data across
  // executions); an intermediate lives from its first to its last node. A view has no memory of
  // its own: its root (the tensor whose bytes it shares) lives for both and is persistent when
  // either is.
  Lifetimes life = tensor_lifetimes(graph_.nodes(), graph_.tensor_count());
  std::vector<uint8_t> roles = graph_.roles();
  for (size_t i = 0; i < graph_.tensor_count(); ++i) {
    const ValueRef root = graph_.alias_root(static_cast<ValueRef>(i)).first;
    if (root == static_cast<ValueRef>(i)) continue;
    life.first[root] = std::min(life.first[root], life.first[i]);
    life.last[root] = std::max(life.last[root], life.last[i]);
    roles[root] |= graph_.roles()[i];
  }
  for (size_t i = 0; i < graph_.tensor_count(); ++i) {
    GpuTensor& t = graph_.tensor_to_bind(static_cast<ValueRef>(i));
    if (t.is_image()) {
      stats_.image_bytes += t.bytes();
      if (graph_.roles()[i] & GraphDefinition::kConstant) stats_.constant_device_bytes += t.bytes();
      continue;
    }
    if (graph_.is_view(static_cast<ValueRef>(i)))
      continue;                   // bound in its root's memory (bind_views)
    if (direct_io_[i]) continue;  // its own host-visible memory (plan_and_bind)
    const auto& req = t.buffer().requirements();
    if (shared_constants_[i]) {  // bound in another graph's memory (bind_shared_constants)
      stats_.constant_shared_bytes += req.size;
      continue;
    }
    const bool persistent = roles[i] != GraphDefinition::kIntermediate || life.last[i] < 0;
    BufferGroup& group = persistent ? persistent_group : intermediates;
    group.items.push_back(
        {req.size, req.alignment, persistent ? 0 : life.first[i], persistent ? 0 : life.last[i]});
    group.refs.push_back(static_cast<ValueRef>(i));
    group.type_bits &= req.memoryTypeBits;
    if (graph_.roles()[i] & GraphDefinition::kConstant) {
      stats_.constant_device_bytes += req.size;
    } else if (persistent && graph_.roles()[i] != GraphDefinition::kIntermediate) {
      stats_.io_device_bytes += req.size;
    }
  }
}

void GraphMemory::plan_buffer_groups(BufferGroup& persistent, BufferGroup& intermediates) {
  const uint64_t max_block = context_.profile().max_memory_allocation_bytes
                                 ? context_.profile().max_memory_allocation_bytes
                                 : (uint64_t{1} << 31);
  stats_.device_bytes = stats_.image_bytes;
  for (BufferGroup* group : {&persistent, &intermediates}) {
    if (group->items.empty()) continue;
    VKD_CHECK(group->type_bits != 0, ErrorCode::Unsupported, group->what,
              ": the buffers share no memory type");
    group->plan = plan_memory(group->items, max_block);
  }
  stats_.intermediate_naive_bytes = intermediates.plan.naive_bytes;
  stats_.intermediate_planned_bytes = intermediates.plan.planned_bytes;
  check_fits_device_heap(context_.profile(), persistent.plan.planned_bytes,
                         intermediates.plan.planned_bytes, stats_.image_bytes);
}

void GraphMemory::bind_buffer_group(const BufferGroup& group, bool may_share) {
  if (group.items.empty()) return;
  const MemoryPlan& plan = group.plan;
  const size_t first_block = blocks_.size();
  // Intermediates: in the blocks another graph of the model planned, when this plan fits them
  // (the graphs never run at the same time), else in blocks of this graph offered to the next.
  std::vector<std::shared_ptr<const vk::MemoryBlock>> blocks;
  if (may_share) blocks = shared_->intermediates_for(plan.block_bytes, group.type_bits);
  if (may_share) stats_.intermediates_shared = !blocks.empty();
  for (size_t b = 0; blocks.size() < plan.block_bytes.size(); ++b) {
    blocks.push_back(std::make_shared<const vk::MemoryBlock>(context_.memory().allocate_block(
        plan.block_bytes[b], group.type_bits,
        std::string(group.what) + " (block " + std::to_string(b) + ")")));
    stats_.device_bytes += plan.block_bytes[b];
    note_load_bytes(0);
  }
  if (may_share && !stats_.intermediates_shared) shared_->offer_intermediates(blocks);
  blocks_.insert(blocks_.end(), blocks.begin(), blocks.end());
  for (size_t k = 0; k < group.refs.size(); ++k) {
    GpuTensor& t = graph_.tensor_to_bind(group.refs[k]);
    const Placement& p = plan.placements[k];
    const auto block = static_cast<uint32_t>(first_block + p.block);
    context_.memory().bind(t.buffer_to_bind(), *blocks_[block], p.offset,
                           "tensor '" + t.name() + "'");
    memory_ranges_[group.refs[k]] = {block, p.offset, group.items[k].bytes};
  }
}

// Each buffer constant packed and fingerprinted: one whose bytes another graph of the model
// uploaded already (whole, or as their first bytes) is bound there, its packer dropped.
void GraphMemory::find_shared_constants() {
  std::vector<const SharedConstant*> taken;  // each shared constant once per graph
  for (size_t i = 0; i < graph_.tensor_count(); ++i) {
    const auto ref = static_cast<ValueRef>(i);
    if (!graph_.is_constant(ref) || graph_.tensor(ref).is_image()) continue;
    const GpuTensor& t = graph_.tensor(ref);
    const std::vector<uint8_t> packed = graph_.constant_packer(ref)();
    note_load_bytes(packed.size());
    if (packed.size() != t.bytes()) continue;  // the upload names the mismatch
    const ConstantFingerprint f = fingerprint_constant(t.spec().sizes, packed);
    const auto& req = t.buffer().requirements();
    std::shared_ptr<const SharedConstant> c =
        shared_->find_constant(f.bytes, f.hash, req.memoryTypeBits, req.alignment, taken);
    if (!c || c->reserved < req.size) continue;
    taken.push_back(c.get());
    shared_constants_[i] = std::move(c);
    graph_.take_constant_packer(ref);
  }
}

void GraphMemory::bind_shared_constants() {
  for (size_t i = 0; i < graph_.tensor_count(); ++i) {
    const SharedConstant* c = shared_constants_[i].get();
    if (c == nullptr) continue;
    GpuTensor& t = graph_.tensor_to_bind(static_cast<ValueRef>(i));
    const uint32_t block = block_index(c->block);
    context_.memory().bind(t.buffer_to_bind(), *c->block, c->offset,
                           "tensor '" + t.name() + "' (a constant another graph uploaded)");
    memory_ranges_[i] = {block, c->offset, t.buffer().requirements().size};
  }
}

uint32_t GraphMemory::block_index(const std::shared_ptr<const vk::MemoryBlock>& block) {
  const auto it = std::find(blocks_.begin(), blocks_.end(), block);
  if (it != blocks_.end()) return static_cast<uint32_t>(it - blocks_.begin());
  blocks_.push_back(block);
  return static_cast<uint32_t>(blocks_.size() - 1);
}

void GraphMemory::constant_uploaded(ValueRef ref, const std::vector<uint8_t>& packed) {
  if (!shared_ || constant_shared(ref) || graph_.tensor(ref).is_image()) return;
  const MemoryRange& r = memory_ranges_[ref];
  auto c = std::make_shared<const SharedConstant>(
      SharedConstant{blocks_[r.memory], r.offset, graph_.tensor(ref).buffer().requirements().size});
  shared_->add_constant(fingerprint_constant(graph_.tensor(ref).spec().sizes, packed), c);
  offered_constants_.push_back(std::move(c));
}

void GraphMemory::bind_views() {
  for (size_t i = 0; i < graph_.tensor_count(); ++i) {
    if (!graph_.is_view(static_cast<ValueRef>(i))) continue;
    const auto [root, offset] = graph_.alias_root(static_cast<ValueRef>(i));
    const MemoryRange& r = memory_ranges_[root];
    GpuTensor& t = graph_.tensor_to_bind(static_cast<ValueRef>(i));
    context_.memory().bind(
        t.buffer_to_bind(), *blocks_[r.memory], r.offset + offset,
        "tensor '" + t.name() + "' (a view of '" + graph_.tensor(root).name() + "')");
    memory_ranges_[i] = {r.memory, r.offset + offset, t.buffer().requirements().size};
  }
}

void GraphMemory::note_load_bytes(uint64_t transient_bytes) {
  stats_.load_peak_bytes = std::max(stats_.load_peak_bytes,
                                    stats_.device_bytes + stats_.staging_bytes + transient_bytes);
}

}  // namespace vkd::graph
