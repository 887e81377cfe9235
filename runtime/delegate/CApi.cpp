// The stable C API (vkd_delegate.h) over vkd::Delegate (Delegate.hpp).
//
// Nothing escapes: every entry point catches everything and turns it into a vkd_status plus a
// message (vkd_init_error() for vkd_delegate_init, vkd_delegate_last_error() afterwards).
//
// String lifetimes (what the header promises):
//   - tensor info strings (name, device_dtype, layout): copied once at init, valid until destroy;
//   - profile strings (op, kernel, tensors): stored once per distinct text on the handle
//     (vkd::api::CProfile), valid until destroy, whatever other threads run meanwhile;
//   - vkd_delegate_last_error(): a per-thread copy kept on the handle, valid until the same
//     thread's next vkd_delegate_last_error() on that handle, or destroy;
//   - vkd_init_error(): thread_local, valid until the thread's next vkd_delegate_init.
#include "vkdelegate/vkd_delegate.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/delegate/ApiBoundary.h"
#include "vkdelegate/Delegate.hpp"

// The C enums and the C++ enums share their numbers (both headers say so); keep them honest.
static_assert(VKD_OK == static_cast<int>(vkd::Status::Ok), "vkd_status drifted");
static_assert(VKD_ERROR_INVALID_ARGUMENT == static_cast<int>(vkd::Status::InvalidArgument), "");
static_assert(VKD_ERROR_UNSUPPORTED == static_cast<int>(vkd::Status::Unsupported), "");
static_assert(VKD_ERROR_OUT_OF_MEMORY == static_cast<int>(vkd::Status::OutOfMemory), "");
static_assert(VKD_ERROR_DEVICE_LOST == static_cast<int>(vkd::Status::DeviceLost), "");
static_assert(VKD_ERROR_TIMEOUT == static_cast<int>(vkd::Status::Timeout), "");
static_assert(VKD_ERROR_VULKAN == static_cast<int>(vkd::Status::VulkanFailure), "");
static_assert(VKD_ERROR_INTERNAL == static_cast<int>(vkd::Status::Internal), "");
static_assert(VKD_FLOAT32 == static_cast<int>(vkd::HostDType::Float32), "vkd_dtype drifted");
static_assert(VKD_INT32 == static_cast<int>(vkd::HostDType::Int32), "");
static_assert(VKD_INT8 == static_cast<int>(vkd::HostDType::Int8), "");
static_assert(std::is_standard_layout<vkd_options>::value, "offsetof needs standard layout");

// The opaque handle: the C++ delegate plus everything the C side hands out by pointer (the
// tensor infos, the lock and the last error: vkd::api::CHandle).
struct vkd_delegate : vkd::api::CHandle {
  std::unique_ptr<vkd::Delegate> impl;
  std::string device_name;     // copied once at init
  vkd::api::CProfile profile;  // of the last execute; guarded by `mutex`
};

namespace {

using namespace vkd::api;

thread_local std::string g_init_error;

const char* const kNullHandleMessage = "invalid argument: the vkd_delegate handle is NULL";

}  // namespace

extern "C" {

VKD_C_API const char* vkd_status_name(vkd_status status) {
  switch (c_enum_value(status)) {  // a C caller may pass any int
    case VKD_OK: return "VKD_OK";
    case VKD_ERROR_INVALID_ARGUMENT: return "VKD_ERROR_INVALID_ARGUMENT";
    case VKD_ERROR_UNSUPPORTED: return "VKD_ERROR_UNSUPPORTED";
    case VKD_ERROR_OUT_OF_MEMORY: return "VKD_ERROR_OUT_OF_MEMORY";
    case VKD_ERROR_DEVICE_LOST: return "VKD_ERROR_DEVICE_LOST";
    case VKD_ERROR_VULKAN: return "VKD_ERROR_VULKAN";
    case VKD_ERROR_INTERNAL: return "VKD_ERROR_INTERNAL";
    case VKD_ERROR_TIMEOUT: return "VKD_ERROR_TIMEOUT";
  }
  return "VKD_ERROR_UNKNOWN_STATUS";
}

VKD_C_API void vkd_options_init(vkd_options* options) {
  if (options == nullptr) return;
  try {
    const vkd::DelegateOptions defaults;  // one source of truth for the default values
    options->struct_size = sizeof(vkd_options);
    options->device = nullptr;
    options->validation = defaults.validation ? 1 : 0;
    options->profiling = defaults.profiling ? 1 : 0;
    options->pipeline_cache_file = nullptr;
    options->constant_batch_bytes = defaults.constant_batch_bytes;
    options->gpu_timeout_ms = defaults.gpu_timeout_ms;
  } catch (...) {
    // Constructing empty strings does not allocate; nothing to report if it ever did.
  }
}

VKD_C_API vkd_status vkd_delegate_init(const void* blob, size_t size, const vkd_options* options,
                                       vkd_delegate** out) {
  if (out != nullptr) *out = nullptr;
  try {
    g_init_error.clear();
    if (out == nullptr) {
      g_init_error = "vkd_delegate_init: out is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    if (blob == nullptr) {
      g_init_error = "vkd_delegate_init: blob is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    vkd::DelegateOptions cpp_options;
    const vkd_status options_status =
        to_delegate_options(options, &cpp_options, &g_init_error, "vkd_delegate_init");
    if (options_status != VKD_OK) return options_status;

    auto handle = std::make_unique<vkd_delegate>();
    std::string error;
    const vkd::Status st = vkd::Delegate::create(blob, size, cpp_options, &handle->impl, &error);
    if (st != vkd::Status::Ok || !handle->impl) {
      return creation_failure(st, error, "vkd_delegate_init", g_init_error);
    }
    handle->copy_infos(*handle->impl);
    handle->device_name = handle->impl->device_name();
    *out = handle.release();
    return VKD_OK;
  } catch (...) {
    return handle_exception("vkd_delegate_init", g_init_error);
  }
}

VKD_C_API const char* vkd_init_error(void) {
  return g_init_error.c_str();  // never throws; "" when the last init succeeded
}

VKD_C_API size_t vkd_delegate_input_count(const vkd_delegate* handle) {
  return handle == nullptr ? 0 : handle->inputs.size();
}

VKD_C_API size_t vkd_delegate_output_count(const vkd_delegate* handle) {
  return handle == nullptr ? 0 : handle->outputs.size();
}

VKD_C_API vkd_status vkd_delegate_input_info(vkd_delegate* handle, size_t index,
                                             vkd_tensor_info* info) {
  return tensor_info(handle, index, info, /*input=*/true, "vkd_delegate_input_info");
}

VKD_C_API vkd_status vkd_delegate_output_info(vkd_delegate* handle, size_t index,
                                              vkd_tensor_info* info) {
  return tensor_info(handle, index, info, /*input=*/false, "vkd_delegate_output_info");
}

VKD_C_API vkd_status vkd_delegate_length_range(vkd_delegate* handle, int64_t* min, int64_t* max) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(handle, &handle->error, "vkd_delegate_length_range",
                            [&]() -> vkd_status {
                              if (min == nullptr || max == nullptr) {
                                handle->error = "vkd_delegate_length_range: min or max is NULL";
                                return VKD_ERROR_INVALID_ARGUMENT;
                              }
                              const vkd::Delegate::LengthRange r = handle->impl->length_range();
                              *min = r.min;
                              *max = r.max;
                              return VKD_OK;
                            });
}

VKD_C_API vkd_status vkd_delegate_input_info_at_length(vkd_delegate* handle, int64_t length,
                                                       size_t index, vkd_tensor_info* info) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return info_at_length(handle, *handle->impl, length, index, info, true,
                        "vkd_delegate_input_info_at_length");
}

VKD_C_API vkd_status vkd_delegate_output_info_at_length(vkd_delegate* handle, int64_t length,
                                                        size_t index, vkd_tensor_info* info) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return info_at_length(handle, *handle->impl, length, index, info, false,
                        "vkd_delegate_output_info_at_length");
}

VKD_C_API vkd_status vkd_delegate_execute(vkd_delegate* handle, const vkd_tensor* inputs,
                                          size_t input_count, vkd_tensor* outputs,
                                          size_t output_count) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return execute_locked(handle, *handle->impl, "vkd_delegate_execute", inputs, input_count, outputs,
                        output_count, handle->profile);
}

namespace {

vkd_status staging_tensor(vkd_delegate* handle, bool input, size_t index, vkd_tensor* tensor,
                          const char* where) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(handle, &handle->error, where, [&]() -> vkd_status {
    if (tensor == nullptr) {
      handle->error = std::string(where) + ": tensor is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    vkd::TensorView view;
    const vkd::Status st = input ? handle->impl->staging_input(index, &view)
                                 : handle->impl->staging_output(index, &view);
    if (st != vkd::Status::Ok) {
      handle->error = handle->impl->last_error();
      return from_status(st);
    }
    vkd_tensor out{};
    out.data = view.data;
    out.bytes = view.bytes;
    out.dtype = static_cast<vkd_dtype>(static_cast<int>(view.dtype));
    out.rank = static_cast<uint32_t>(view.sizes.size());  // <= 4: the blob's ranks are checked
    for (size_t i = 0; i < view.sizes.size() && i < VKD_MAX_RANK; ++i) out.sizes[i] = view.sizes[i];
    *tensor = out;
    handle->error.clear();
    return VKD_OK;
  });
}

}  // namespace

VKD_C_API vkd_status vkd_delegate_staging_input(vkd_delegate* handle, size_t index,
                                                vkd_tensor* tensor) {
  return staging_tensor(handle, true, index, tensor, "vkd_delegate_staging_input");
}

VKD_C_API vkd_status vkd_delegate_staging_output(vkd_delegate* handle, size_t index,
                                                 vkd_tensor* tensor) {
  return staging_tensor(handle, false, index, tensor, "vkd_delegate_staging_output");
}

VKD_C_API vkd_status vkd_delegate_set_profiling(vkd_delegate* handle, int mode) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return set_profiling(handle, *handle->impl, mode, "vkd_delegate_set_profiling");
}

VKD_C_API size_t vkd_delegate_profile_count(vkd_delegate* handle) {
  if (handle == nullptr) return 0;
  try {
    std::lock_guard<std::mutex> lock(handle->mutex);
    return handle->profile.nodes.size();
  } catch (...) {
    return 0;
  }
}

VKD_C_API vkd_status vkd_delegate_profile_entry(vkd_delegate* handle, size_t index,
                                                vkd_node_profile* entry) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(
      handle, &handle->error, "vkd_delegate_profile_entry", [&]() -> vkd_status {
        return node_profile_entry(handle->profile.nodes, index, entry, "vkd_delegate_profile_entry",
                                  "the last execute", handle->error);
      });
}

VKD_C_API vkd_status vkd_delegate_execute_profile(vkd_delegate* handle,
                                                  vkd_execute_profile* profile) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(
      handle, &handle->error, "vkd_delegate_execute_profile", [&]() -> vkd_status {
        if (profile == nullptr) {
          handle->error = "vkd_delegate_execute_profile: profile is NULL";
          return VKD_ERROR_INVALID_ARGUMENT;
        }
        const vkd::ExecuteProfile p = handle->impl->last_execute_profile();
        vkd_execute_profile full{};
        full.struct_size = sizeof(full);
        full.host_wall_us = p.host_wall_us;
        full.input_copy_us = p.input_copy_us;
        full.submit_wait_us = p.submit_wait_us;
        full.output_copy_us = p.output_copy_us;
        full.gpu_span_us = p.gpu_span_us;
        full.gpu_total_us = p.gpu_total_us;
        full.gpu_input_copy_us = p.gpu_input_copy_us;
        full.gpu_output_copy_us = p.gpu_output_copy_us;
        return write_out_struct(full, profile, "vkd_delegate_execute_profile", handle->error);
      });
}

VKD_C_API const char* vkd_delegate_last_error(const vkd_delegate* handle) {
  if (handle == nullptr) return kNullHandleMessage;
  return last_error_copy(handle,
                         "vkd_delegate_last_error: out of host memory while copying the message");
}

VKD_C_API const char* vkd_delegate_device_name(const vkd_delegate* handle) {
  return handle == nullptr ? "" : handle->device_name.c_str();
}

VKD_C_API uint64_t vkd_delegate_validation_message_count(const vkd_delegate* handle) {
  if (handle == nullptr) return 0;
  try {
    std::lock_guard<std::mutex> lock(handle->mutex);
    return handle->impl->validation_message_count();
  } catch (...) {
    return 0;
  }
}

VKD_C_API void vkd_delegate_destroy(vkd_delegate* handle) {
  try {
    delete handle;  // NULL: no-op
  } catch (...) {
    // Destructors do not throw; nothing may reach the caller if one ever did.
  }
}

}  // extern "C"
