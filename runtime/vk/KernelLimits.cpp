#include "runtime/vk/KernelLimits.h"

#include <sstream>

#include "core/Error.h"

namespace vkd::vk {

uint64_t shared_memory_bytes(const shaders::ShaderInfo& info,
                             const std::array<uint32_t, 3>& local_size,
                             const std::vector<uint32_t>& spec_constants) {
  using Kind = shaders::SharedSizeOpKind;
  auto spec_value = [&](uint32_t id) -> uint64_t {
    if (id < 3) return local_size[id];
    for (uint32_t i = 0; i < info.spec_constant_count && i < spec_constants.size(); ++i) {
      if (info.spec_constants[i].id == id) return spec_constants[i];
    }
    VKD_THROW(ErrorCode::Internal, "kernel ", info.name, ": its shared memory size reads ",
              "specialization constant ", id, ", which it does not declare");
  };
  std::vector<uint64_t> stack;
  for (uint32_t i = 0; i < info.shared_program_length; ++i) {
    const shaders::SharedSizeOp& op = info.shared_program[i];
    if (op.kind == Kind::kConst || op.kind == Kind::kSpec) {
      stack.push_back(op.kind == Kind::kConst ? op.value : spec_value(op.value));
      continue;
    }
    VKD_CHECK(stack.size() >= 2, ErrorCode::Internal, "kernel ", info.name,
              ": malformed shared memory program");
    const uint64_t b = stack.back();
    stack.pop_back();
    uint64_t& a = stack.back();
    switch (op.kind) {
      case Kind::kAdd: a += b; break;
      case Kind::kSub: a = a >= b ? a - b : 0; break;
      case Kind::kMul: a *= b; break;
      case Kind::kDiv: a = b == 0 ? 0 : a / b; break;
      case Kind::kShl: a = b >= 32 ? 0 : a << b; break;
      case Kind::kShr: a = b >= 64 ? 0 : a >> b; break;
      default: break;
    }
  }
  VKD_CHECK(stack.size() <= 1, ErrorCode::Internal, "kernel ", info.name,
            ": malformed shared memory program");
  return info.shared_bytes + (stack.empty() ? 0 : stack.back());
}

uint32_t storage_buffers_of(const shaders::ShaderInfo& info) {
  uint32_t buffers = 0;
  for (uint32_t i = 0; i < info.binding_count; ++i) {
    buffers += info.bindings[i] == shaders::DescriptorKind::StorageImage ? 0 : 1;
  }
  return buffers;
}

bool fits_storage_buffers(const DeviceProfile& profile, shaders::Kernel kernel) {
  return storage_buffers_of(shaders::shader_info(kernel)) <= profile.max_per_stage_storage_buffers;
}

std::string storage_buffers_problem(const DeviceProfile& profile, const std::string& what,
                                    uint32_t buffers) {
  return what + " binds " + std::to_string(buffers) +
         " storage buffers; the device's maxPerStageDescriptorStorageBuffers is " +
         std::to_string(profile.max_per_stage_storage_buffers);
}

std::string storage_buffers_problem(const DeviceProfile& profile, shaders::Kernel kernel) {
  const shaders::ShaderInfo& info = shaders::shader_info(kernel);
  return storage_buffers_problem(profile, "kernel " + std::string(info.name),
                                 storage_buffers_of(info));
}

std::string kernel_limit_problem(const DeviceProfile& profile, const shaders::ShaderInfo& info,
                                 const std::array<uint32_t, 3>& local_size,
                                 const std::vector<uint32_t>& spec_constants) {
  std::ostringstream os;
  const std::array<uint32_t, 3> size =
      info.local_size_from_spec
          ? local_size
          : std::array<uint32_t, 3>{info.fixed_local_size[0], info.fixed_local_size[1],
                                    info.fixed_local_size[2]};
  const uint64_t invocations = uint64_t{size[0]} * size[1] * size[2];
  const std::string device =
      "device '" + profile.name + "'" +
      (profile.device_class.empty() ? "" : " as class " + profile.device_class);
  if (invocations > profile.max_workgroup_invocations) {
    os << "kernel " << info.name << " runs " << invocations << " invocations a workgroup ("
       << size[0] << "x" << size[1] << "x" << size[2] << "); " << device << " allows "
       << profile.max_workgroup_invocations << " (maxComputeWorkGroupInvocations)";
    return os.str();
  }
  for (int i = 0; i < 3; ++i) {
    if (size[i] > profile.max_workgroup_size[i]) {
      os << "kernel " << info.name << " has a workgroup " << size[0] << "x" << size[1] << "x"
         << size[2] << "; " << device << " allows " << profile.max_workgroup_size[i]
         << " along axis " << "xyz"[i] << " (maxComputeWorkGroupSize)";
      return os.str();
    }
  }
  const uint64_t shared = shared_memory_bytes(info, size, spec_constants);
  if (shared > profile.max_shared_memory_bytes) {
    os << "kernel " << info.name << " needs " << shared << " bytes of shared memory; " << device
       << " has " << profile.max_shared_memory_bytes << " (maxComputeSharedMemorySize)";
    return os.str();
  }
  if (info.push_constant_bytes > profile.max_push_constant_bytes) {
    os << "kernel " << info.name << " needs " << info.push_constant_bytes
       << " bytes of push constants; " << device << " allows " << profile.max_push_constant_bytes
       << " (maxPushConstantsSize)";
    return os.str();
  }
  return "";
}

}  // namespace vkd::vk
