#include "runtime/graph/ComputeGraph.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/Env.h"
#include "core/Error.h"
#include "core/HostPacking.h"
#include "core/PackedInt8Layout.h"
#include "runtime/graph/MemoryPlanner.h"

namespace vkd::graph {
namespace {

using shaders::DescriptorKind;

VkDescriptorType to_vk(DescriptorKind kind) {
  return kind == DescriptorKind::StorageImage ? VK_DESCRIPTOR_TYPE_STORAGE_IMAGE
                                              : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}

template <typename T>
std::vector<T> read_host_elements(const uint8_t* bytes, size_t count) {
  std::vector<T> out(count);
  std::memcpy(out.data(), bytes, count * sizeof(T));
  return out;
}

template <typename T>
std::vector<uint8_t> as_bytes(const std::vector<T>& values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace

ConstantPacker nchw_constant_packer(const TensorSpec& spec, const uint8_t* nchw, size_t bytes,
                                    int8_t pad_value) {
  const uint64_t expected = static_cast<uint64_t>(spec.numel()) * host_element_size(spec.dtype);
  VKD_CHECK(bytes == expected, ErrorCode::InvalidArgument, "constant ", spec.describe(), " needs ",
            expected, " host bytes, got ", bytes);
  return [spec, nchw, pad_value]() -> std::vector<uint8_t> {
    const auto n = static_cast<size_t>(spec.numel());
    switch (spec.dtype) {
      case DType::Float32:
        return as_bytes(pack_strided(read_host_elements<float>(nchw, n).data(), spec.dims4(),
                                     spec.storage, spec.layout));
      case DType::Float16: {
        const auto half = read_host_elements<uint16_t>(nchw, n);
        std::vector<float> values(n);
        std::transform(half.begin(), half.end(), values.begin(), from_float16);
        const auto packed = pack_strided(values.data(), spec.dims4(), spec.storage, spec.layout);
        std::vector<uint16_t> out(packed.size());
        std::transform(packed.begin(), packed.end(), out.begin(), to_float16);
        return as_bytes(out);
      }
      case DType::Int32:
        return as_bytes(pack_strided(read_host_elements<int32_t>(nchw, n).data(), spec.dims4(),
                                     spec.storage, spec.layout));
      case DType::Int8x4:
        return as_bytes(
            pack_int8(reinterpret_cast<const int8_t*>(nchw), spec.dims4(), spec.layout, pad_value));
      case DType::Int8: return std::vector<uint8_t>(nchw, nchw + n);
    }
    VKD_THROW(ErrorCode::Internal, "constant of unknown dtype");
  };
}

namespace {

// Submits `cmd` and waits. On a timeout the submission is still in flight, so `cmd` and the
// caller's other local objects it uses go to the context, which frees them once the device is
// idle, instead of being destroyed by the unwinding.
template <typename... InUse>
void submit_and_wait_keeping(vk::Context& context, vk::CommandBuffer& cmd, const std::string& what,
                             InUse&... in_use) {
  try {
    context.submit_and_wait(cmd, what);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Timeout) {
      context.keep_until_idle(std::make_shared<vk::CommandBuffer>(std::move(cmd)));
      (context.keep_until_idle(std::make_shared<InUse>(std::move(in_use))), ...);
    }
    throw;
  }
}

}  // namespace

ComputeGraph::ComputeGraph(vk::Context& context)
    : context_(context),
      direct_io_on_(env_string("VKD_DIRECT_IO").empty() || env_flag("VKD_DIRECT_IO")) {}

ComputeGraph::~ComputeGraph() {
  // A timed-out submission may still use this graph's buffers, descriptor sets and command
  // buffer: wait for it before they are destroyed.
  if (context_.timed_out()) {
    try {
      context_.wait_idle();
    } catch (const Error&) {
      // Device lost while waiting: nothing runs any more, destruction is safe.
    }
  }
}

ValueRef ComputeGraph::add_tensor(const TensorSpec& spec, std::string name) {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "add_tensor after prepare()");
  const auto ref = static_cast<ValueRef>(tensors_.size());
  if (name.empty()) name = "t" + std::to_string(ref);
  tensors_.push_back(std::make_unique<GpuTensor>(context_.memory(), spec, std::move(name)));
  roles_.push_back(kIntermediate);
  packers_.emplace_back();
  zero_points_.emplace_back();
  aliases_.emplace_back();
  return ref;
}

ValueRef ComputeGraph::add_constant(const TensorSpec& spec, std::string name, ConstantPacker packer,
                                    uint64_t host_bytes) {
  const ValueRef ref = add_tensor(spec, std::move(name));
  roles_[ref] = kConstant;
  packers_[ref] = std::move(packer);
  stats_.constant_host_bytes += host_bytes;
  return ref;
}

bool ComputeGraph::is_constant(ValueRef ref) const {
  tensor(ref);
  return roles_[ref] & kConstant;
}

ConstantPacker ComputeGraph::constant_packer(ValueRef ref) const {
  VKD_CHECK(is_constant(ref) && packers_[ref], ErrorCode::Internal, "'", tensor(ref).name(),
            "' is not a constant still to be packed");
  return packers_[ref];
}

void ComputeGraph::set_zero_point(ValueRef ref, int32_t zero_point) {
  const GpuTensor& t = tensor(ref);
  VKD_CHECK(!zero_points_[ref] || *zero_points_[ref] == zero_point, ErrorCode::InvalidArgument,
            "tensor '", t.name(), "' is used with zero point ", zero_point,
            " but an earlier op declared ", *zero_points_[ref]);
  zero_points_[ref] = zero_point;
}

std::string ComputeGraph::describe_node(size_t index) const {
  VKD_CHECK(index < nodes_.size(), ErrorCode::Internal, "node ", index, " out of range");
  std::string out;
  const auto& bindings = nodes_[index].bindings;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const GpuTensor& t = tensor(bindings[i]);
    out += (i == 0 ? "out: " : i == 1 ? "; in: " : ", ") + t.name() + " " + t.spec().describe();
  }
  return out;
}

const GpuTensor& ComputeGraph::tensor(ValueRef ref) const {
  VKD_CHECK(ref >= 0 && static_cast<size_t>(ref) < tensors_.size(), ErrorCode::InvalidArgument,
            "value id ", ref, " is not a tensor of this graph (", tensors_.size(), " tensors)");
  return *tensors_[ref];
}

void ComputeGraph::add_node(DispatchNode node) {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "add_node after prepare()");
  const auto& info = shaders::shader_info(node.kernel);
  VKD_CHECK(node.bindings.size() == info.binding_count, ErrorCode::Internal, node.op, ": kernel ",
            info.name, " has ", info.binding_count, " bindings, node gives ", node.bindings.size());
  for (size_t i = 0; i < node.bindings.size(); ++i) {
    const GpuTensor& t = tensor(node.bindings[i]);
    const bool wants_image = info.bindings[i] == DescriptorKind::StorageImage;
    VKD_CHECK(wants_image == t.is_image(), ErrorCode::Internal, node.op, ": kernel ", info.name,
              " binding ", i, " expects a ", wants_image ? "storage image" : "storage buffer",
              " but tensor '", t.name(), "' is ", to_string(t.spec().storage));
  }
  VKD_CHECK(node.push_constants.size() == info.push_constant_bytes, ErrorCode::Internal, node.op,
            ": kernel ", info.name, " takes ", info.push_constant_bytes,
            " push-constant bytes, node gives ", node.push_constants.size());
  VKD_CHECK(node.spec_constants.size() == info.spec_constant_count, ErrorCode::Internal, node.op,
            ": kernel ", info.name, " takes ", info.spec_constant_count,
            " specialization constants, node gives ", node.spec_constants.size());
  VKD_CHECK(info.push_constant_bytes <= profile().max_push_constant_bytes, ErrorCode::Unsupported,
            node.op, ": kernel ", info.name, " needs ", info.push_constant_bytes,
            " push-constant bytes; the device's maxPushConstantsSize is ",
            profile().max_push_constant_bytes, " bytes");
  uint32_t buffers = 0, images = 0;
  for (uint32_t i = 0; i < info.binding_count; ++i) {
    (info.bindings[i] == DescriptorKind::StorageImage ? images : buffers) += 1;
  }
  VKD_CHECK(buffers <= profile().max_per_stage_storage_buffers, ErrorCode::Unsupported, node.op,
            ": kernel ", info.name, " binds ", buffers,
            " storage buffers; the device's maxPerStageDescriptorStorageBuffers is ",
            profile().max_per_stage_storage_buffers);
  VKD_CHECK(images <= profile().max_per_stage_storage_images, ErrorCode::Unsupported, node.op,
            ": kernel ", info.name, " binds ", images,
            " storage images; the device's maxPerStageDescriptorStorageImages is ",
            profile().max_per_stage_storage_images);
  vk::check_kernel_supported(profile(), node.kernel);
  for (int a = 0; a < 3; ++a) {
    VKD_CHECK(node.plan.group_count[a] <= profile().max_workgroup_count[a], ErrorCode::Unsupported,
              node.op, ": dispatch of ", node.plan.group_count[a], " workgroups on axis ", a,
              " exceeds the device limit ", profile().max_workgroup_count[a]);
  }
  nodes_.push_back(std::move(node));
}

bool ComputeGraph::alias(ValueRef view, ValueRef base, uint64_t byte_offset) {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "alias after prepare()");
  const GpuTensor& v = tensor(view);
  const GpuTensor& b = tensor(base);
  if (is_constant(view) || is_constant(base) || v.is_image() || b.is_image()) return false;
  const auto [root, root_offset] = alias_root(base);
  if (aliases_[view].base >= 0 || root == view || byte_offset + v.bytes() > b.bytes()) {
    return false;
  }
  // The root is placed at a multiple of its own alignment, the view's buffer bound at that plus
  // the offset, and the view's whole buffer (its size rounded as the driver asks) inside.
  const VkMemoryRequirements& need = v.buffer().requirements();
  const VkMemoryRequirements& has = tensor(root).buffer().requirements();
  const uint64_t at = root_offset + byte_offset;
  if (need.alignment == 0 || at % need.alignment != 0 || has.alignment % need.alignment != 0 ||
      at + need.size > has.size || (need.memoryTypeBits & has.memoryTypeBits) == 0) {
    return false;
  }
  aliases_[view] = {base, byte_offset};
  return true;
}

std::pair<ValueRef, uint64_t> ComputeGraph::alias_root(ValueRef ref) const {
  uint64_t offset = 0;
  while (aliases_.at(ref).base >= 0) {
    offset += aliases_[ref].offset;
    ref = aliases_[ref].base;
  }
  return {ref, offset};
}

void ComputeGraph::add_input(ValueRef ref) {
  VKD_CHECK(!is_constant(ref), ErrorCode::InvalidArgument, "constant '", tensor(ref).name(),
            "' cannot be a graph input");
  roles_[ref] |= kInput;
  input_refs_.push_back(ref);
}

void ComputeGraph::add_output(ValueRef ref) {
  tensor(ref);
  roles_[ref] |= kOutput;
  output_refs_.push_back(ref);
}

void ComputeGraph::note_load_bytes(uint64_t transient_bytes) {
  stats_.load_peak_bytes = std::max(stats_.load_peak_bytes,
                                    stats_.device_bytes + stats_.staging_bytes + transient_bytes);
}

// Buffers whose memory is planned together: the persistent ones (constants, inputs, outputs and
// tensors no node binds) packed side by side, or the intermediates shared by lifetime.
struct ComputeGraph::BufferGroup {
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

void ComputeGraph::plan_and_bind_memory() {
  direct_io_.assign(tensors_.size(), false);
  for (size_t i = 0; i < tensors_.size(); ++i) direct_io_[i] = wants_direct_io(i);
  BufferGroup persistent{"graph constants, inputs and outputs"};
  BufferGroup intermediates{"graph intermediates"};
  collect_buffer_groups(persistent, intermediates);
  memory_ranges_.assign(tensors_.size(), MemoryRange{});
  plan_buffer_groups(persistent, intermediates);
  bind_buffer_group(persistent);
  bind_buffer_group(intermediates);
  bind_views();
  // Images and the direct inputs / outputs own their memory: ids after the blocks', each its
  // own.
  auto next_memory = static_cast<uint32_t>(blocks_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    GpuTensor& t = *tensors_[i];
    if (t.is_image()) memory_ranges_[i] = {next_memory++, 0, t.bytes()};
    if (!direct_io_[i]) continue;
    const bool input = roles_[i] & kInput;
    t.buffer_to_bind() = context_.memory().create_buffer(
        t.bytes(), input ? vk::MemoryUse::DirectUpload : vk::MemoryUse::HostReadback,
        std::string(input ? "input" : "output") + " tensor '" + t.name() + "' (its own staging)");
    memory_ranges_[i] = {next_memory++, 0, t.buffer().size()};
  }
}

void ComputeGraph::set_direct_io(bool on) {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "set_direct_io() after prepare()");
  direct_io_on_ = on;
}

bool ComputeGraph::direct_io(ValueRef ref) const {
  VKD_CHECK(prepared_, ErrorCode::Internal, "direct_io() before prepare()");
  tensor(ref);
  return direct_io_[ref];
}

bool ComputeGraph::wants_direct_io(size_t ref) const {
  const uint8_t role = roles_[ref];
  if (!direct_io_on_ || (role & kConstant) || (role != kInput && role != kOutput)) return false;
  if (!staging_is_host_form(static_cast<ValueRef>(ref)) || aliases_[ref].base >= 0) return false;
  for (const Alias& a : aliases_) {
    if (a.base == static_cast<ValueRef>(ref)) return false;  // viewed: planned with its views
  }
  // Only where the memory is the GPU's own (and, read back, cached for the CPU): on an H100 the
  // host memory its staging uses made refinenet_lite's span 763 us instead of 152 (the float
  // head writing 1.2 MB across PCIe took 595 us, the stem reading its input 39). An input takes
  // mappable device-local memory where there is some (DirectUpload: the H100's BAR), an output
  // needs it cached for the CPU's reads too (unified memory).
  const bool input = role == kInput;
  const VkMemoryPropertyFlags flags = context_.memory().memory_flags(
      input ? vk::MemoryUse::DirectUpload : vk::MemoryUse::HostReadback,
      tensors_[ref]->buffer().requirements().memoryTypeBits);
  const VkMemoryPropertyFlags needed =
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | (input ? 0 : VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  return (flags & needed) == needed;
}

void ComputeGraph::collect_buffer_groups(BufferGroup& persistent_group,
                                         BufferGroup& intermediates) {
  // Inputs, outputs and constants live for the whole graph (they hold data across
  // executions); an intermediate lives from its first to its last node. A view has no memory of
  // its own: its root (the tensor whose bytes it shares) lives for both and is persistent when
  // either is.
  Lifetimes life = tensor_lifetimes(nodes_, tensors_.size());
  std::vector<uint8_t> roles = roles_;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const ValueRef root = alias_root(static_cast<ValueRef>(i)).first;
    if (root == static_cast<ValueRef>(i)) continue;
    life.first[root] = std::min(life.first[root], life.first[i]);
    life.last[root] = std::max(life.last[root], life.last[i]);
    roles[root] |= roles_[i];
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    GpuTensor& t = *tensors_[i];
    if (t.is_image()) {
      stats_.image_bytes += t.bytes();
      if (roles_[i] & kConstant) stats_.constant_device_bytes += t.bytes();
      continue;
    }
    if (aliases_[i].base >= 0) continue;  // bound in its root's memory (bind_views)
    if (direct_io_[i]) continue;          // its own host-visible memory (plan_and_bind_memory)
    const auto& req = t.buffer().requirements();
    const bool persistent = roles[i] != kIntermediate || life.last[i] < 0;
    BufferGroup& group = persistent ? persistent_group : intermediates;
    group.items.push_back(
        {req.size, req.alignment, persistent ? 0 : life.first[i], persistent ? 0 : life.last[i]});
    group.refs.push_back(static_cast<ValueRef>(i));
    group.type_bits &= req.memoryTypeBits;
    if (roles_[i] & kConstant) {
      stats_.constant_device_bytes += req.size;
    } else if (persistent && roles_[i] != kIntermediate) {
      stats_.io_device_bytes += req.size;
    }
  }
}

void ComputeGraph::plan_buffer_groups(BufferGroup& persistent, BufferGroup& intermediates) {
  const uint64_t max_block = profile().max_memory_allocation_bytes
                                 ? profile().max_memory_allocation_bytes
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
  check_fits_device_heap(profile(), persistent.plan.planned_bytes, intermediates.plan.planned_bytes,
                         stats_.image_bytes);
}

void ComputeGraph::bind_buffer_group(const BufferGroup& group) {
  if (group.items.empty()) return;
  const MemoryPlan& plan = group.plan;
  const size_t first_block = blocks_.size();
  for (size_t b = 0; b < plan.block_bytes.size(); ++b) {
    blocks_.push_back(context_.memory().allocate_block(
        plan.block_bytes[b], group.type_bits,
        std::string(group.what) + " (block " + std::to_string(b) + ")"));
    stats_.device_bytes += plan.block_bytes[b];
    note_load_bytes(0);
  }
  for (size_t k = 0; k < group.refs.size(); ++k) {
    GpuTensor& t = *tensors_[group.refs[k]];
    const Placement& p = plan.placements[k];
    const auto block = static_cast<uint32_t>(first_block + p.block);
    context_.memory().bind(t.buffer_to_bind(), blocks_[block], p.offset,
                           "tensor '" + t.name() + "'");
    memory_ranges_[group.refs[k]] = {block, p.offset, group.items[k].bytes};
  }
}

void ComputeGraph::bind_views() {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (aliases_[i].base < 0) continue;
    const auto [root, offset] = alias_root(static_cast<ValueRef>(i));
    const MemoryRange& r = memory_ranges_[root];
    GpuTensor& t = *tensors_[i];
    context_.memory().bind(t.buffer_to_bind(), blocks_[r.memory], r.offset + offset,
                           "tensor '" + t.name() + "' (a view of '" + tensor(root).name() + "')");
    memory_ranges_[i] = {r.memory, r.offset + offset, t.buffer().requirements().size};
  }
}

std::vector<NodeAccess> ComputeGraph::node_accesses() const {
  std::vector<NodeAccess> accesses(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const auto& info = shaders::shader_info(nodes_[n].kernel);
    for (uint32_t i = 0; i < info.binding_count; ++i) {
      const MemoryRange& range = memory_ranges_[nodes_[n].bindings[i]];
      (shaders::writes_binding(info, i) ? accesses[n].writes : accesses[n].reads).push_back(range);
    }
  }
  return accesses;
}

const MemoryRange& ComputeGraph::memory_range(ValueRef ref) const {
  VKD_CHECK(prepared_, ErrorCode::Internal, "memory_range() before prepare()");
  tensor(ref);
  return memory_ranges_[ref];
}

bool ComputeGraph::barrier_before(size_t node) const {
  VKD_CHECK(prepared_, ErrorCode::Internal, "barrier_before() before prepare()");
  VKD_CHECK(node < nodes_.size(), ErrorCode::Internal, "node ", node, " out of range");
  return barrier_before_[node];
}

size_t ComputeGraph::barrier_count() const {
  VKD_CHECK(prepared_, ErrorCode::Internal, "barrier_count() before prepare()");
  return static_cast<size_t>(std::count(barrier_before_.begin(), barrier_before_.end(), true));
}

namespace {

// Records the copy between tensor `t` and a staging buffer (at `staging_offset`) in either
// direction; an image leaves GENERAL only for the copy.
void record_copy(vk::CommandBuffer& cb, const GpuTensor& t, VkBuffer staging, bool to_device,
                 uint64_t staging_offset = 0) {
  if (!t.is_image()) {
    VkBufferCopy region{to_device ? staging_offset : 0, to_device ? 0 : staging_offset, t.bytes()};
    if (to_device) {
      cb.copy_buffer(staging, t.buffer().handle(), region);
    } else {
      cb.copy_buffer(t.buffer().handle(), staging, region);
    }
    return;
  }
  VkBufferImageCopy region{};
  region.bufferOffset = staging_offset;
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = t.image().extent();
  const VkImage image = t.image().handle();
  const VkImageLayout copy_layout =
      to_device ? VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL : VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  cb.image_layout(image, VK_IMAGE_LAYOUT_GENERAL, copy_layout);
  if (to_device) {
    cb.copy_buffer_to_image(staging, image, copy_layout, region);
  } else {
    cb.copy_image_to_buffer(image, copy_layout, staging, region);
  }
  cb.image_layout(image, copy_layout, VK_IMAGE_LAYOUT_GENERAL);
}

// Copies packed constants into their tensors through one host-visible staging buffer of
// `capacity` bytes, submitting (and waiting) whenever it is full: a buffer constant is copied
// in chunks of whatever space is left, a texture constant waits for its whole size.
class ConstantStager {
 public:
  ConstantStager(vk::Context& context, uint64_t capacity)
      : context_(context),
        capacity_(capacity),
        staging_(context.memory().create_buffer(capacity, vk::MemoryUse::HostUpload,
                                                "constant staging")),
        mapped_(static_cast<uint8_t*>(staging_.mapped())),
        cmd_(context.new_command_buffer()) {
    cmd_.begin(true);
  }

  uint64_t staging_bytes() const { return staging_.size(); }

  void add(const GpuTensor& t, const std::vector<uint8_t>& packed) {
    if (t.is_image()) {
      add_image(t, packed);
    } else {
      add_buffer(t, packed);
    }
  }

  // Submits what is still staged; the last, empty command buffer is never submitted.
  void finish() {
    flush();
    cmd_.end();
  }

 private:
  // A buffer-to-image copy must start at a multiple of the texel size (8 or 16 bytes), so an
  // image goes at the next multiple of 16 after what is staged, in a fresh batch when it would
  // end past the capacity: used_ never exceeds capacity_ (add_buffer's free space relies on it).
  void add_image(const GpuTensor& t, const std::vector<uint8_t>& packed) {
    uint64_t offset = (used_ + 15) / 16 * 16;
    if (offset + packed.size() > capacity_) {
      flush();
      offset = 0;
    }
    std::memcpy(mapped_ + offset, packed.data(), packed.size());
    record_copy(cmd_, t, staging_.handle(), true, offset);
    used_ = offset + packed.size();
  }

  void add_buffer(const GpuTensor& t, const std::vector<uint8_t>& packed) {
    for (uint64_t done = 0; done < packed.size();) {
      if (used_ == capacity_) flush();
      const uint64_t n = std::min<uint64_t>(capacity_ - used_, packed.size() - done);
      std::memcpy(mapped_ + used_, packed.data() + done, n);
      cmd_.copy_buffer(staging_.handle(), t.buffer().handle(), VkBufferCopy{used_, done, n});
      used_ += n;
      done += n;
    }
  }

  void flush() {
    if (used_ == 0) return;
    staging_.flush();
    cmd_.end();
    submit_and_wait_keeping(context_, cmd_, "constant upload", staging_);
    cmd_ = context_.new_command_buffer();
    cmd_.begin(true);
    used_ = 0;
  }

  vk::Context& context_;
  const uint64_t capacity_;
  vk::Buffer staging_;
  uint8_t* mapped_;
  vk::CommandBuffer cmd_;  // destroyed before the staging buffer it copies from
  uint64_t used_ = 0;
};

}  // namespace

uint64_t ComputeGraph::constant_staging_capacity() const {
  uint64_t total = 0, largest_image = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!(roles_[i] & kConstant)) continue;
    // Sizes rounded up to 16 cover the padding ConstantStager puts before images, so
    // constants below the batch limit still go in one batch.
    total += (tensors_[i]->bytes() + 15) / 16 * 16;
    if (tensors_[i]->is_image()) largest_image = std::max(largest_image, tensors_[i]->bytes());
  }
  if (total == 0) return 0;
  return std::max<uint64_t>(
      std::min<uint64_t>(std::max<uint64_t>(constant_batch_bytes_, 16), total), largest_image);
}

void ComputeGraph::upload_constants() {
  // Constants go through one host-visible staging buffer of at most constant_batch_bytes_
  // (larger buffer constants are copied in chunks; a texture constant is staged whole), which
  // is freed before prepare() goes on: load memory stays near the model's own size.
  const uint64_t capacity = constant_staging_capacity();
  if (capacity == 0) return;
  ConstantStager stager(context_, capacity);
  stats_.staging_bytes += stager.staging_bytes();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!(roles_[i] & kConstant)) continue;
    const GpuTensor& t = *tensors_[i];
    const std::vector<uint8_t> packed = packers_[i]();
    packers_[i] = nullptr;  // drops whatever the packer captured
    note_load_bytes(packed.size());
    VKD_CHECK(packed.size() == t.bytes(), ErrorCode::Internal, "constant '", t.name(),
              "': packer gave ", packed.size(), " bytes, the tensor holds ", t.bytes());
    stager.add(t, packed);
  }
  stager.finish();
  stats_.staging_bytes -= stager.staging_bytes();
}

namespace {

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

}  // namespace

void ComputeGraph::set_timestamps(bool on) {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "set_timestamps() after prepare()");
  timestamps_on_ = on;
  timing_ = on ? ExecutionTiming::PerDispatch : ExecutionTiming::Off;
}

void ComputeGraph::prepare() {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "prepare() called twice");
  plan_and_bind_memory();
  barrier_before_ = plan_barriers(node_accesses());
  create_staging_buffers();
  // Pipelines first (a kernel the device cannot build fails here, before any recording).
  create_pipelines();
  create_descriptor_sets();
  if (timestamps_on_) {
    // One region per dispatch node (or one for them all), then the input copies and the output
    // copies.
    timestamps_ = vk::TimestampQueries(context_.device(), profile(),
                                       static_cast<uint32_t>(nodes_.size()) + 2);
    span_timestamps_ = vk::TimestampQueries(context_.device(), profile(), 3);
  }
  initialize_image_layouts();
  upload_constants();
  record_execution();
  prepared_ = true;
}

// Staging buffers for graph inputs and outputs; a direct one is its tensor's own memory.
void ComputeGraph::create_staging_buffers() {
  for (const bool input : {true, false}) {
    for (ValueRef ref : input ? input_refs_ : output_refs_) {
      const GpuTensor& t = tensor(ref);
      auto& list = input ? inputs_ : outputs_;
      if (direct_io_[ref]) {
        list.push_back({ref, {}, true});
      } else {
        list.push_back(
            {ref, context_.memory().create_buffer(
                      t.bytes(), input ? vk::MemoryUse::HostUpload : vk::MemoryUse::HostReadback,
                      std::string(input ? "input" : "output") + " staging for tensor '" + t.name() +
                          "'")});
      }
      stats_.staging_bytes += staging_buffer(list.back()).size();
    }
  }
  note_load_bytes(0);
}

// One pipeline per distinct (kernel, local size, specialization constants) the nodes use,
// the missing ones created together on the context's pipeline threads.
void ComputeGraph::create_pipelines() {
  std::vector<vk::PipelineKey> keys;
  keys.reserve(nodes_.size());
  for (const auto& node : nodes_) {
    keys.push_back({node.kernel, node.plan.local_size, node.spec_constants});
  }
  node_pipelines_ = context_.pipelines().get_all(keys);
}

void ComputeGraph::create_descriptor_sets() {
  descriptor_pool_ = vk::DescriptorPool(context_.device(), descriptor_tally(nodes_));
  for (size_t n = 0; n < nodes_.size(); ++n) {
    VkDescriptorSet set = descriptor_pool_.allocate(node_pipelines_[n]->set_layout);
    descriptor_pool_.write(set, descriptor_resources(n));
    node_sets_.push_back(set);
  }
}

std::vector<vk::DescriptorResource> ComputeGraph::descriptor_resources(size_t n) const {
  const auto& info = shaders::shader_info(nodes_[n].kernel);
  std::vector<vk::DescriptorResource> resources;
  for (uint32_t i = 0; i < info.binding_count; ++i) {
    const GpuTensor& t = tensor(nodes_[n].bindings[i]);
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

void ComputeGraph::initialize_image_layouts() {
  // Images start UNDEFINED; move every one to GENERAL once (no submission without images).
  if (std::none_of(tensors_.begin(), tensors_.end(), [](const auto& t) { return t->is_image(); })) {
    return;
  }
  vk::CommandBuffer init = context_.new_command_buffer();
  init.begin(true);
  for (const auto& t : tensors_) {
    if (t->is_image()) init.image_to_general(t->image().handle());
  }
  init.end();
  submit_and_wait_keeping(context_, init, "image layout initialization");
}

// Where record_execution() writes its timestamp pairs: dispatch node n into region
// `dispatch0 + n` (per_dispatch) or all the dispatches into region `dispatch0`, then the input
// and output copy phases.
struct ComputeGraph::TimedRegions {
  bool per_dispatch = true;
  uint32_t dispatch0 = 0, copy_in = 0, copy_out = 0;
};

// The command buffer execute() resubmits: input staging -> tensors, every dispatch, tensors ->
// output staging. With timestamps on, three are recorded: one without queries (runs that are
// not profiled pay for none), one with a pair around every dispatch and one with a pair around
// all of them (set_execution_timing).
void ComputeGraph::record_execution() {
  const vk::TimestampQueries none;
  const auto nodes = static_cast<uint32_t>(nodes_.size());
  command_buffer_ = record_execution(none, {});
  if (!timestamps_.enabled()) return;
  timed_command_buffer_ = record_execution(timestamps_, {true, 0, nodes, nodes + 1});
  span_command_buffer_ = record_execution(span_timestamps_, {false, 0, 1, 2});
}

vk::CommandBuffer ComputeGraph::record_execution(const vk::TimestampQueries& ts,
                                                 const TimedRegions& regions) {
  vk::CommandBuffer cb = context_.new_command_buffer();
  cb.begin(false);
  ts.reset(cb);
  ts.begin(cb, regions.copy_in);
  for (const auto& s : inputs_) {
    if (!s.direct) record_copy(cb, tensor(s.tensor), s.buffer.handle(), true);
  }
  ts.end(cb, regions.copy_in);
  for (size_t n = 0; n < nodes_.size(); ++n) {
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
    if (regions.per_dispatch || n + 1 == nodes_.size()) ts.end(cb, region);
  }
  if (nodes_.empty() && !regions.per_dispatch) {  // an empty span, but every query written
    ts.begin(cb, regions.dispatch0);
    ts.end(cb, regions.dispatch0);
  }
  cb.memory_barrier();
  ts.begin(cb, regions.copy_out);
  for (const auto& s : outputs_) {
    if (!s.direct) record_copy(cb, tensor(s.tensor), s.buffer.handle(), false);
  }
  ts.end(cb, regions.copy_out);
  // Make the transfer writes visible to the host.
  cb.host_read_barrier();
  cb.end();
  return cb;
}

void ComputeGraph::record_dispatch(vk::CommandBuffer& cb, size_t n) {
  const DispatchNode& node = nodes_[n];
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

ComputeGraph::BenchmarkTimes ComputeGraph::benchmark(uint32_t warmup, uint32_t repetitions) {
  VKD_CHECK(prepared_, ErrorCode::Internal, "benchmark() before prepare()");
  VKD_CHECK(profile().timestamps, ErrorCode::Unsupported, "device '", profile().name,
            "' has no timestamp queries on its compute queue");
  const uint32_t nodes = static_cast<uint32_t>(nodes_.size());
  vk::TimestampQueries whole(context_.device(), profile(), repetitions);
  vk::TimestampQueries kernels(context_.device(), profile(), repetitions * nodes);
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

const ComputeGraph::Staging& ComputeGraph::staging_for(const std::vector<Staging>& list,
                                                       ValueRef ref, const char* role) const {
  VKD_CHECK(prepared_, ErrorCode::Internal, "graph used before prepare()");
  for (const auto& s : list) {
    if (s.tensor == ref) return s;
  }
  VKD_THROW(ErrorCode::InvalidArgument, "tensor '", tensor(ref).name(), "' is not a graph ", role);
}

void* ComputeGraph::input_staging(ValueRef input, size_t bytes) {
  const Staging& s = staging_for(inputs_, input, "input");
  VKD_CHECK(bytes == tensor(input).bytes(), ErrorCode::Internal, "staging size mismatch");
  return staging_buffer(s).mapped();
}

const void* ComputeGraph::output_staging(ValueRef output) const {
  const vk::Buffer& b = staging_buffer(staging_for(outputs_, output, "output"));
  b.invalidate();
  return b.mapped();
}

bool ComputeGraph::staging_is_host_form(ValueRef ref) const {
  const TensorSpec& spec = tensor(ref).spec();
  return (spec.dtype == DType::Float32 || spec.dtype == DType::Int32) &&
         spec.storage == StorageType::Buffer && spec.layout == MemoryLayout::WidthPacked;
}

void* ComputeGraph::staging_data(ValueRef ref) {
  VKD_CHECK(prepared_, ErrorCode::Internal, "graph used before prepare()");
  for (auto* list : {&inputs_, &outputs_}) {
    for (const auto& s : *list) {
      if (s.tensor == ref) return staging_buffer(s).mapped();
    }
  }
  VKD_THROW(ErrorCode::InvalidArgument, "tensor '", tensor(ref).name(),
            "' is neither a graph input nor a graph output");
}

template <typename T>
void ComputeGraph::pack_input(ValueRef input, const T* nchw) {
  const TensorSpec& spec = tensor(input).spec();
  const int64_t elements = device_element_count(spec.dims4(), spec.storage, spec.layout);
  // Straight into the mapped staging memory.
  auto* staging = static_cast<T*>(input_staging(input, elements * sizeof(T)));
  if (staging_is_host_form(input)) {
    context_.host_copies().copy(staging, nchw, static_cast<size_t>(elements) * sizeof(T));
  } else {
    pack_strided_into(nchw, staging, spec.dims4(), spec.storage, spec.layout);
  }
}

template <typename T>
void ComputeGraph::unpack_output(ValueRef output, T* nchw) const {
  const TensorSpec& spec = tensor(output).spec();
  // Straight out of the mapped staging memory.
  const auto* staging = static_cast<const T*>(output_staging(output));
  if (staging_is_host_form(output)) {
    context_.host_copies().copy(nchw, staging, static_cast<size_t>(spec.numel()) * sizeof(T));
  } else {
    unpack_strided_into(staging, nchw, spec.dims4(), spec.storage, spec.layout);
  }
}

void ComputeGraph::flush_input(ValueRef input) {
  staging_buffer(staging_for(inputs_, input, "input")).flush();
}

void ComputeGraph::write_float(ValueRef input, const float* nchw, size_t count) {
  const TensorSpec& spec = tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Float32 || spec.dtype == DType::Float16,
            ErrorCode::InvalidArgument, "input '", tensor(input).name(), "' is ",
            to_string(spec.dtype), ", not a float tensor");
  VKD_CHECK(static_cast<int64_t>(count) == spec.numel(), ErrorCode::InvalidArgument, "input '",
            tensor(input).name(), "' ", spec.describe(), " needs ", spec.numel(), " values, got ",
            count);
  if (spec.dtype == DType::Float32) {
    pack_input(input, nchw);
  } else {
    const int64_t elements = device_element_count(spec.dims4(), spec.storage, spec.layout);
    const auto packed = pack_strided(nchw, spec.dims4(), spec.storage, spec.layout);
    auto* staging = static_cast<uint16_t*>(input_staging(input, elements * sizeof(uint16_t)));
    std::transform(packed.begin(), packed.end(), staging, to_float16);
  }
  flush_input(input);
}

void ComputeGraph::write_int32(ValueRef input, const int32_t* nchw, size_t count) {
  const TensorSpec& spec = tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Int32 && static_cast<int64_t>(count) == spec.numel(),
            ErrorCode::InvalidArgument, "input '", tensor(input).name(), "' ", spec.describe(),
            " cannot take ", count, " int32 values");
  pack_input(input, nchw);
  flush_input(input);
}

void ComputeGraph::write_int8(ValueRef input, const int8_t* nchw, size_t count, int8_t pad_value) {
  const TensorSpec& spec = tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Int8x4 && static_cast<int64_t>(count) == spec.numel(),
            ErrorCode::InvalidArgument, "input '", tensor(input).name(), "' ", spec.describe(),
            " cannot take ", count, " int8 values");
  const int64_t words = packed_int8_word_count(spec.layout, spec.dims4());
  auto* staging = static_cast<int32_t*>(input_staging(input, words * sizeof(int32_t)));
  pack_int8_into(nchw, staging, spec.dims4(), spec.layout, pad_value);
  flush_input(input);
}

void ComputeGraph::write_words(ValueRef input, const std::vector<int32_t>& words) {
  VKD_CHECK(words.size() * 4 == tensor(input).bytes(), ErrorCode::InvalidArgument, "input '",
            tensor(input).name(), "' holds ", tensor(input).bytes() / 4, " words, got ",
            words.size());
  std::memcpy(input_staging(input, words.size() * 4), words.data(), words.size() * 4);
  flush_input(input);
}

void ComputeGraph::set_execution_timing(ExecutionTiming timing) {
  VKD_CHECK(timing == ExecutionTiming::Off || timestamps_on_, ErrorCode::InvalidArgument,
            "timed execution needs the graph's timestamps on before prepare()");
  timing_ = timing;
}

void ComputeGraph::execute() {
  VKD_CHECK(prepared_, ErrorCode::Internal, "execute() before prepare()");
  const ExecutionTiming timing = timestamps_.enabled() ? timing_ : ExecutionTiming::Off;
  last_timing_ = ExecutionTiming::Off;
  context_.submit_and_wait(timing == ExecutionTiming::PerDispatch ? timed_command_buffer_
                           : timing == ExecutionTiming::Span      ? span_command_buffer_
                                                                  : command_buffer_,
                           "graph execution");
  last_timing_ = timing;
}

void ComputeGraph::read_float(ValueRef output, float* nchw, size_t count) const {
  const TensorSpec& spec = tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Float32 || spec.dtype == DType::Float16,
            ErrorCode::InvalidArgument, "output '", tensor(output).name(), "' is ",
            to_string(spec.dtype), ", not a float tensor");
  VKD_CHECK(static_cast<int64_t>(count) == spec.numel(), ErrorCode::InvalidArgument, "output '",
            tensor(output).name(), "' ", spec.describe(), " gives ", spec.numel(), " values, not ",
            count);
  if (spec.dtype == DType::Float32) {
    unpack_output(output, nchw);
    return;
  }
  const void* staging = output_staging(output);
  const int64_t elements = device_element_count(spec.dims4(), spec.storage, spec.layout);
  const auto* half = static_cast<const uint16_t*>(staging);
  std::vector<float> device(static_cast<size_t>(elements));
  std::transform(half, half + elements, device.begin(), from_float16);
  unpack_strided_into(device.data(), nchw, spec.dims4(), spec.storage, spec.layout);
}

void ComputeGraph::read_int32(ValueRef output, int32_t* nchw, size_t count) const {
  const TensorSpec& spec = tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Int32 && static_cast<int64_t>(count) == spec.numel(),
            ErrorCode::InvalidArgument, "output '", tensor(output).name(), "' ", spec.describe(),
            " cannot give ", count, " int32 values");
  unpack_output(output, nchw);
}

void ComputeGraph::read_int8(ValueRef output, int8_t* nchw, size_t count) const {
  const TensorSpec& spec = tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Int8x4 && static_cast<int64_t>(count) == spec.numel(),
            ErrorCode::InvalidArgument, "output '", tensor(output).name(), "' ", spec.describe(),
            " cannot give ", count, " int8 values");
  unpack_int8_into(static_cast<const int32_t*>(output_staging(output)), nchw, spec.dims4(),
                   spec.layout);
}

std::vector<float> ComputeGraph::read_float(ValueRef output) const {
  std::vector<float> out(static_cast<size_t>(tensor(output).spec().numel()));
  read_float(output, out.data(), out.size());
  return out;
}

std::vector<int32_t> ComputeGraph::read_int32(ValueRef output) const {
  std::vector<int32_t> out(static_cast<size_t>(tensor(output).spec().numel()));
  read_int32(output, out.data(), out.size());
  return out;
}

std::vector<int8_t> ComputeGraph::read_int8(ValueRef output) const {
  std::vector<int8_t> out(static_cast<size_t>(tensor(output).spec().numel()));
  read_int8(output, out.data(), out.size());
  return out;
}

std::vector<int32_t> ComputeGraph::read_words(ValueRef output) const {
  const auto* words = static_cast<const int32_t*>(output_staging(output));
  return std::vector<int32_t>(words, words + tensor(output).bytes() / 4);
}

std::vector<NodeTiming> ComputeGraph::last_timings() const {
  std::vector<NodeTiming> out;
  if (last_timing_ != ExecutionTiming::PerDispatch) return out;
  const auto us = timestamps_.read_us();
  for (size_t n = 0; n < nodes_.size(); ++n) {
    out.push_back(
        {nodes_[n].op, shaders::shader_info(nodes_[n].kernel).name, describe_node(n), us[n]});
  }
  return out;
}

double ComputeGraph::last_gpu_span_us() const {
  if (nodes_.empty()) return 0.0;
  switch (last_timing_) {
    case ExecutionTiming::PerDispatch:
      return timestamps_.span_us(0, static_cast<uint32_t>(nodes_.size()) - 1);
    case ExecutionTiming::Span: return span_timestamps_.read_us()[0];
    case ExecutionTiming::Off: break;
  }
  return 0.0;
}

ComputeGraph::CopyTimes ComputeGraph::last_copy_times() const {
  if (last_timing_ == ExecutionTiming::Off) return {};
  const bool span = last_timing_ == ExecutionTiming::Span;
  const auto us = (span ? span_timestamps_ : timestamps_).read_us();
  const size_t copy_in = span ? 1 : nodes_.size();
  return {us[copy_in], us[copy_in + 1]};
}

std::vector<NodeKernelStatistics> ComputeGraph::kernel_statistics() const {
  VKD_CHECK(prepared_, ErrorCode::Internal, "kernel_statistics() before prepare()");
  std::vector<NodeKernelStatistics> out;
  const vk::PipelineCache& pipelines = context_.pipelines();
  if (!pipelines.captures_statistics()) return out;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    out.push_back({nodes_[n].op, shaders::shader_info(nodes_[n].kernel).name,
                   pipelines.statistics(node_pipelines_[n]->pipeline)});
  }
  return out;
}

}  // namespace vkd::graph
