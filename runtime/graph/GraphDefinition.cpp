#include "runtime/graph/GraphDefinition.h"

#include <algorithm>

#include "core/Error.h"
#include "runtime/vk/KernelLimits.h"
#include "runtime/vk/PipelineCache.h"

namespace vkd::graph {

using shaders::DescriptorKind;

ValueRef GraphDefinition::add_tensor(const TensorSpec& spec, std::string name) {
  VKD_CHECK(!prepared_, ErrorCode::Internal, "add_tensor after prepare()");
  const auto ref = static_cast<ValueRef>(tensors_.size());
  if (name.empty()) name = "t" + std::to_string(ref);
  tensors_.push_back(std::make_unique<GpuTensor>(context_.memory(), spec, std::move(name)));
  roles_.push_back(kIntermediate);
  packers_.emplace_back();
  zero_points_.emplace_back();
  id_limits_.emplace_back();
  aliases_.emplace_back();
  return ref;
}

ValueRef GraphDefinition::add_constant(const TensorSpec& spec, std::string name,
                                       ConstantPacker packer, uint64_t host_bytes) {
  const ValueRef ref = add_tensor(spec, std::move(name));
  roles_[ref] = kConstant;
  packers_[ref] = std::move(packer);
  constant_host_bytes_ += host_bytes;
  return ref;
}

bool GraphDefinition::is_constant(ValueRef ref) const {
  tensor(ref);
  return roles_[ref] & kConstant;
}

ConstantPacker GraphDefinition::constant_packer(ValueRef ref) const {
  VKD_CHECK(is_constant(ref) && packers_[ref], ErrorCode::Internal, "'", tensor(ref).name(),
            "' is not a constant still to be packed");
  return packers_[ref];
}

void GraphDefinition::set_zero_point(ValueRef ref, int32_t zero_point) {
  const GpuTensor& t = tensor(ref);
  VKD_CHECK(!zero_points_[ref] || *zero_points_[ref] == zero_point, ErrorCode::InvalidArgument,
            "tensor '", t.name(), "' is used with zero point ", zero_point,
            " but an earlier op declared ", *zero_points_[ref]);
  zero_points_[ref] = zero_point;
}

void GraphDefinition::limit_ids(ValueRef ref, int64_t rows) {
  VKD_CHECK(tensor(ref).spec().dtype == DType::Int32 && rows >= 1, ErrorCode::Internal,
            "limit_ids: tensor '", tensor(ref).name(), "' is not int32 or the limit ", rows,
            " is below 1");
  id_limits_[ref] = std::min(rows, id_limits_[ref].value_or(rows));
}

std::string GraphDefinition::describe_node(size_t index) const {
  VKD_CHECK(index < nodes_.size(), ErrorCode::Internal, "node ", index, " out of range");
  std::string out;
  const auto& bindings = nodes_[index].bindings;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const GpuTensor& t = tensor(bindings[i]);
    out += (i == 0 ? "out: " : i == 1 ? "; in: " : ", ") + t.name() + " " + t.spec().describe();
  }
  return out;
}

const GpuTensor& GraphDefinition::tensor(ValueRef ref) const {
  VKD_CHECK(ref >= 0 && static_cast<size_t>(ref) < tensors_.size(), ErrorCode::InvalidArgument,
            "value id ", ref, " is not a tensor of this graph (", tensors_.size(), " tensors)");
  return *tensors_[ref];
}

void GraphDefinition::add_node(DispatchNode node) {
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
  const uint32_t buffers = vk::storage_buffers_of(info), images = info.binding_count - buffers;
  VKD_CHECK(buffers <= profile().max_per_stage_storage_buffers, ErrorCode::Unsupported, node.op,
            ": ",
            vk::storage_buffers_problem(profile(), "kernel " + std::string(info.name), buffers));
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

bool GraphDefinition::alias(ValueRef view, ValueRef base, uint64_t byte_offset) {
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

std::optional<std::pair<ValueRef, uint64_t>> GraphDefinition::place_together(ValueRef first,
                                                                             ValueRef second,
                                                                             std::string name) {
  for (ValueRef ref : {first, second}) {
    if (is_constant(ref) || tensor(ref).is_image() || aliases_[ref].base >= 0) return std::nullopt;
  }
  // The base at 256 bytes or the views' own alignment, the largest (the most any driver asks
  // of a storage buffer's offset), rounded sizes as the driver reports them.
  const VkMemoryRequirements& a = tensor(first).buffer().requirements();
  const VkMemoryRequirements& b = tensor(second).buffer().requirements();
  const uint64_t align = std::max<uint64_t>({256, a.alignment, b.alignment});
  const uint64_t second_at = (a.size + align - 1) / align * align;
  const ValueRef both = add_tensor({{static_cast<int64_t>((second_at + b.size + 3) / 4)},
                                    DType::Int32,
                                    StorageType::Buffer,
                                    MemoryLayout::WidthPacked},
                                   std::move(name));
  VKD_CHECK(alias(first, both, 0) && alias(second, both, second_at), ErrorCode::Internal,
            "tensors '", tensor(first).name(), "' and '", tensor(second).name(),
            "' cannot be placed in one buffer");
  return std::make_pair(both, second_at);
}

std::pair<ValueRef, uint64_t> GraphDefinition::alias_root(ValueRef ref) const {
  uint64_t offset = 0;
  while (aliases_.at(ref).base >= 0) {
    offset += aliases_[ref].offset;
    ref = aliases_[ref].base;
  }
  return {ref, offset};
}

void GraphDefinition::add_input(ValueRef ref) {
  VKD_CHECK(!is_constant(ref), ErrorCode::InvalidArgument, "constant '", tensor(ref).name(),
            "' cannot be a graph input");
  roles_[ref] |= kInput;
  input_refs_.push_back(ref);
}

void GraphDefinition::add_output(ValueRef ref) {
  tensor(ref);
  roles_[ref] |= kOutput;
  output_refs_.push_back(ref);
}

bool GraphDefinition::is_viewed(ValueRef ref) const {
  for (const Alias& a : aliases_) {
    if (a.base == ref) return true;
  }
  return false;
}

ConstantPacker GraphDefinition::take_constant_packer(ValueRef ref) {
  ConstantPacker packer = std::move(packers_[ref]);
  packers_[ref] = nullptr;
  return packer;
}

}  // namespace vkd::graph
