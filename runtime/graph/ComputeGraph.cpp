#include "runtime/graph/ComputeGraph.h"

#include <algorithm>
#include <cstring>

#include "runtime/common/Error.h"
#include "runtime/tensor/HostPacking.h"
#include "runtime/tensor/PackedInt8Layout.h"

namespace vkd::graph {
namespace {

using shaders::DescriptorKind;

VkDescriptorType to_vk(DescriptorKind kind) {
  return kind == DescriptorKind::StorageImage ? VK_DESCRIPTOR_TYPE_STORAGE_IMAGE
                                              : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}

}  // namespace

ComputeGraph::ComputeGraph(vk::Context& context) : context_(context) {}

ComputeGraph::~ComputeGraph() = default;

ValueRef ComputeGraph::add_tensor(const TensorSpec& spec, std::string name) {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "add_tensor after prepare()");
  const auto ref = static_cast<ValueRef>(tensors_.size());
  if (name.empty()) name = "t" + std::to_string(ref);
  tensors_.push_back(std::make_unique<GpuTensor>(context_.memory(), spec, std::move(name)));
  return ref;
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
  vk::check_kernel_supported(profile(), node.kernel);
  for (int a = 0; a < 3; ++a) {
    VKD_CHECK(node.plan.group_count[a] <= profile().max_workgroup_count[a], ErrorCode::Unsupported,
              node.op, ": dispatch of ", node.plan.group_count[a], " workgroups on axis ", a,
              " exceeds the device limit ", profile().max_workgroup_count[a]);
  }
  nodes_.push_back(std::move(node));
}

void ComputeGraph::add_input(ValueRef ref) {
  tensor(ref);
  input_refs_.push_back(ref);
}

void ComputeGraph::add_output(ValueRef ref) {
  tensor(ref);
  output_refs_.push_back(ref);
}

void ComputeGraph::record_copy(VkCommandBuffer cmd, const GpuTensor& t, VkBuffer staging,
                               bool to_device) {
  if (!t.is_image()) {
    VkBufferCopy region{0, 0, t.bytes()};
    if (to_device) {
      vkCmdCopyBuffer(cmd, staging, t.buffer().handle(), 1, &region);
    } else {
      vkCmdCopyBuffer(cmd, t.buffer().handle(), staging, 1, &region);
    }
    return;
  }
  VkBufferImageCopy region{};
  region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
  region.imageExtent = t.image().extent();
  const VkImage image = t.image().handle();
  const VkImageLayout copy_layout =
      to_device ? VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL : VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
  command_buffer_.image_layout(image, VK_IMAGE_LAYOUT_GENERAL, copy_layout);
  if (to_device) {
    vkCmdCopyBufferToImage(cmd, staging, image, copy_layout, 1, &region);
  } else {
    vkCmdCopyImageToBuffer(cmd, image, copy_layout, staging, 1, &region);
  }
  command_buffer_.image_layout(image, copy_layout, VK_IMAGE_LAYOUT_GENERAL);
}

void ComputeGraph::prepare() {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "prepare() called twice");
  auto& pipelines = context_.pipelines();

  // Staging buffers for graph inputs and outputs.
  for (ValueRef ref : input_refs_) {
    const GpuTensor& t = tensor(ref);
    inputs_.push_back({ref, context_.memory().create_buffer(
                                t.bytes(), vk::MemoryUse::HostUpload,
                                "input staging for tensor '" + t.name() + "'")});
  }
  for (ValueRef ref : output_refs_) {
    const GpuTensor& t = tensor(ref);
    outputs_.push_back({ref, context_.memory().create_buffer(
                                 t.bytes(), vk::MemoryUse::HostReadback,
                                 "output staging for tensor '" + t.name() + "'")});
  }

  // Pipelines first (a kernel the device cannot build fails here, before any recording).
  std::vector<const vk::Pipeline*>& node_pipelines = node_pipelines_;
  vk::DescriptorTally tally;
  for (const auto& node : nodes_) {
    node_pipelines.push_back(
        &pipelines.get({node.kernel, node.plan.local_size, node.spec_constants}));
    const auto& info = shaders::shader_info(node.kernel);
    tally.sets += 1;
    for (uint32_t i = 0; i < info.binding_count; ++i) {
      (info.bindings[i] == DescriptorKind::StorageImage ? tally.storage_images
                                                        : tally.storage_buffers) += 1;
    }
  }
  descriptor_pool_ = vk::DescriptorPool(context_.device(), tally);
  std::vector<VkDescriptorSet>& sets = node_sets_;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const auto& info = shaders::shader_info(nodes_[n].kernel);
    VkDescriptorSet set = descriptor_pool_.allocate(node_pipelines[n]->set_layout);
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
    descriptor_pool_.write(set, resources);
    sets.push_back(set);
  }
  timestamps_ = vk::TimestampQueries(context_.device(), profile(),
                                     static_cast<uint32_t>(nodes_.size()));

  // Images start UNDEFINED; move every one to GENERAL once (no submission without images).
  if (std::any_of(tensors_.begin(), tensors_.end(), [](const auto& t) { return t->is_image(); })) {
    vk::CommandBuffer init = context_.new_command_buffer();
    init.begin(true);
    for (const auto& t : tensors_) {
      if (t->is_image()) init.image_to_general(t->image().handle());
    }
    init.end();
    context_.submit_and_wait(init, "image layout initialization");
  }

  command_buffer_ = context_.new_command_buffer();
  VkCommandBuffer cmd = command_buffer_.handle();
  command_buffer_.begin(false);
  timestamps_.reset(cmd);
  for (const auto& s : inputs_) record_copy(cmd, tensor(s.tensor), s.buffer.handle(), true);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    command_buffer_.memory_barrier();
    timestamps_.begin(cmd, static_cast<uint32_t>(n));
    record_dispatch(cmd, n);
    timestamps_.end(cmd, static_cast<uint32_t>(n));
  }
  command_buffer_.memory_barrier();
  for (const auto& s : outputs_) record_copy(cmd, tensor(s.tensor), s.buffer.handle(), false);
  // Make the transfer writes visible to the host.
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                       &to_host, 0, nullptr, 0, nullptr);
  command_buffer_.end();
  prepared_ = true;
}

void ComputeGraph::record_dispatch(VkCommandBuffer cmd, size_t n) {
  const DispatchNode& node = nodes_[n];
  const vk::Pipeline& p = *node_pipelines_[n];
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &node_sets_[n], 0,
                          nullptr);
  if (!node.push_constants.empty()) {
    vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(node.push_constants.size()),
                       node.push_constants.data());
  }
  vkCmdDispatch(cmd, node.plan.group_count[0], node.plan.group_count[1], node.plan.group_count[2]);
}

std::vector<double> ComputeGraph::benchmark(uint32_t warmup, uint32_t repetitions) {
  VKD_CHECK(prepared_, ErrorCode::Internal, "benchmark() before prepare()");
  VKD_CHECK(profile().timestamps, ErrorCode::Unsupported, "device '", profile().name,
            "' has no timestamp queries on its compute queue");
  vk::TimestampQueries queries(context_.device(), profile(), repetitions);
  vk::CommandBuffer cb = context_.new_command_buffer();
  VkCommandBuffer cmd = cb.handle();
  cb.begin(true);
  queries.reset(cmd);
  for (uint32_t r = 0; r < warmup + repetitions; ++r) {
    cb.memory_barrier();
    if (r >= warmup) queries.begin(cmd, r - warmup);
    for (size_t n = 0; n < nodes_.size(); ++n) {
      if (n > 0) cb.memory_barrier();
      record_dispatch(cmd, n);
    }
    if (r >= warmup) queries.end(cmd, r - warmup);
  }
  cb.end();
  context_.submit_and_wait(cb, "benchmark");
  return queries.read_us();
}

const ComputeGraph::Staging& ComputeGraph::staging_for(const std::vector<Staging>& list,
                                                       ValueRef ref, const char* role) const {
  VKD_CHECK(prepared_, ErrorCode::Internal, "graph used before prepare()");
  for (const auto& s : list) {
    if (s.tensor == ref) return s;
  }
  VKD_THROW(ErrorCode::InvalidArgument, "tensor '", tensor(ref).name(), "' is not a graph ", role);
}

void ComputeGraph::upload_bytes(ValueRef input, const void* data, size_t bytes) {
  const Staging& s = staging_for(inputs_, input, "input");
  VKD_CHECK(bytes == tensor(input).bytes(), ErrorCode::Internal, "staging size mismatch");
  std::memcpy(s.buffer.mapped(), data, bytes);
  s.buffer.flush();
}

std::vector<uint8_t> ComputeGraph::download_bytes(ValueRef output) const {
  const Staging& s = staging_for(outputs_, output, "output");
  s.buffer.invalidate();
  const auto* p = static_cast<const uint8_t*>(s.buffer.mapped());
  return std::vector<uint8_t>(p, p + tensor(output).bytes());
}

void ComputeGraph::write_float(ValueRef input, const std::vector<float>& nchw) {
  const TensorSpec& spec = tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Float32 || spec.dtype == DType::Float16,
            ErrorCode::InvalidArgument, "input '", tensor(input).name(), "' is ",
            to_string(spec.dtype), ", not a float tensor");
  VKD_CHECK(static_cast<int64_t>(nchw.size()) == spec.numel(), ErrorCode::InvalidArgument,
            "input '", tensor(input).name(), "' ", spec.describe(), " needs ", spec.numel(),
            " values, got ", nchw.size());
  const auto packed = pack_strided(nchw.data(), spec.dims4(), spec.storage, spec.layout);
  if (spec.dtype == DType::Float32) {
    upload_bytes(input, packed.data(), packed.size() * sizeof(float));
    return;
  }
  std::vector<uint16_t> half(packed.size());
  std::transform(packed.begin(), packed.end(), half.begin(), to_float16);
  upload_bytes(input, half.data(), half.size() * sizeof(uint16_t));
}

void ComputeGraph::write_int32(ValueRef input, const std::vector<int32_t>& nchw) {
  const TensorSpec& spec = tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Int32 && static_cast<int64_t>(nchw.size()) == spec.numel(),
            ErrorCode::InvalidArgument, "input '", tensor(input).name(), "' ", spec.describe(),
            " cannot take ", nchw.size(), " int32 values");
  const auto packed = pack_strided(nchw.data(), spec.dims4(), spec.storage, spec.layout);
  upload_bytes(input, packed.data(), packed.size() * sizeof(int32_t));
}

void ComputeGraph::write_int8(ValueRef input, const std::vector<int8_t>& nchw, int8_t pad_value) {
  const TensorSpec& spec = tensor(input).spec();
  VKD_CHECK(spec.dtype == DType::Int8x4 && static_cast<int64_t>(nchw.size()) == spec.numel(),
            ErrorCode::InvalidArgument, "input '", tensor(input).name(), "' ", spec.describe(),
            " cannot take ", nchw.size(), " int8 values");
  const auto words = pack_int8(nchw.data(), spec.dims4(), spec.layout, pad_value);
  upload_bytes(input, words.data(), words.size() * sizeof(int32_t));
}

void ComputeGraph::write_words(ValueRef input, const std::vector<int32_t>& words) {
  VKD_CHECK(words.size() * 4 == tensor(input).bytes(), ErrorCode::InvalidArgument, "input '",
            tensor(input).name(), "' holds ", tensor(input).bytes() / 4, " words, got ",
            words.size());
  upload_bytes(input, words.data(), words.size() * sizeof(int32_t));
}

void ComputeGraph::execute() {
  VKD_CHECK(prepared_, ErrorCode::Internal, "execute() before prepare()");
  context_.submit_and_wait(command_buffer_, "graph execution");
}

std::vector<float> ComputeGraph::read_float(ValueRef output) const {
  const TensorSpec& spec = tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Float32 || spec.dtype == DType::Float16,
            ErrorCode::InvalidArgument, "output '", tensor(output).name(), "' is ",
            to_string(spec.dtype), ", not a float tensor");
  const auto bytes = download_bytes(output);
  std::vector<float> device(spec.dtype == DType::Float32 ? bytes.size() / 4 : bytes.size() / 2);
  if (spec.dtype == DType::Float32) {
    std::memcpy(device.data(), bytes.data(), device.size() * 4);
  } else {
    for (size_t i = 0; i < device.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      device[i] = from_float16(h);
    }
  }
  return unpack_strided(device.data(), spec.dims4(), spec.storage, spec.layout);
}

std::vector<int32_t> ComputeGraph::read_int32(ValueRef output) const {
  const TensorSpec& spec = tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Int32, ErrorCode::InvalidArgument, "output '",
            tensor(output).name(), "' is not int32");
  const auto bytes = download_bytes(output);
  std::vector<int32_t> device(bytes.size() / 4);
  std::memcpy(device.data(), bytes.data(), bytes.size());
  return unpack_strided(device.data(), spec.dims4(), spec.storage, spec.layout);
}

std::vector<int32_t> ComputeGraph::read_words(ValueRef output) const {
  const auto bytes = download_bytes(output);
  std::vector<int32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}

std::vector<int8_t> ComputeGraph::read_int8(ValueRef output) const {
  const TensorSpec& spec = tensor(output).spec();
  VKD_CHECK(spec.dtype == DType::Int8x4, ErrorCode::InvalidArgument, "output '",
            tensor(output).name(), "' is not int8x4");
  const auto words = read_words(output);
  return unpack_int8(words.data(), spec.dims4(), spec.layout);
}

std::vector<NodeTiming> ComputeGraph::last_timings() const {
  std::vector<NodeTiming> out;
  if (!timestamps_.enabled()) return out;
  const auto us = timestamps_.read_us();
  for (size_t n = 0; n < nodes_.size(); ++n) {
    out.push_back({nodes_[n].op, shaders::shader_info(nodes_[n].kernel).name, us[n]});
  }
  return out;
}

}  // namespace vkd::graph
