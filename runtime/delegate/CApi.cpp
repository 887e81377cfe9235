// The stable C API (vkd_delegate.h) over vkd::Delegate (Delegate.hpp).
//
// Nothing escapes: every entry point catches everything and turns it into a vkd_status plus a
// message (vkd_init_error() for vkd_delegate_init, vkd_delegate_last_error() afterwards).
//
// String lifetimes (what the header promises):
//   - tensor info strings (name, device_dtype, layout): copied once at init, valid until destroy;
//   - profile strings (op, kernel): refreshed by each execute, valid until the handle's next
//     execute;
//   - vkd_delegate_last_error(): a per-thread copy kept on the handle, valid until the same
//     thread's next vkd_delegate_last_error() on that handle, or destroy;
//   - vkd_init_error(): thread_local, valid until the thread's next vkd_delegate_init.
#include "vkdelegate/vkd_delegate.h"

#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/core/Error.h"
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

// The opaque handle: the C++ delegate plus everything the C side hands out by pointer.
struct vkd_delegate {
  std::unique_ptr<vkd::Delegate> impl;
  // Copied once at init (the infos never change): their strings live until destroy.
  std::vector<vkd::TensorInfo> inputs, outputs;
  std::vector<size_t> input_bytes, output_bytes;
  std::string device_name;

  // Everything below is guarded by `mutex` (one handle may be shared between threads).
  mutable std::mutex mutex;
  std::vector<vkd::NodeProfile> profile;  // of the last execute
  std::string error;                      // message of the last failed call ("" after a good execute)
  // vkd_delegate_last_error() returns a pointer into this thread's copy, so another thread's
  // call on the same handle cannot invalidate it.
  mutable std::unordered_map<std::thread::id, std::string> error_copies;
};

namespace {

thread_local std::string g_init_error;

// Assigns without letting an allocation failure escape (used inside catch handlers).
void set_message(std::string& target, const char* message) noexcept {
  try {
    target = message;
  } catch (...) {
    target.clear();  // never allocates
  }
}
void set_message(std::string& target, const std::string& message) noexcept {
  set_message(target, message.c_str());
}

vkd_status from_status(vkd::Status status) {
  const int value = static_cast<int>(status);
  if (value < VKD_OK || value > VKD_ERROR_TIMEOUT) return VKD_ERROR_INTERNAL;
  return static_cast<vkd_status>(value);
}

vkd_status from_error_code(vkd::ErrorCode code) {
  switch (code) {
    case vkd::ErrorCode::InvalidArgument: return VKD_ERROR_INVALID_ARGUMENT;
    case vkd::ErrorCode::Unsupported: return VKD_ERROR_UNSUPPORTED;
    case vkd::ErrorCode::OutOfMemory: return VKD_ERROR_OUT_OF_MEMORY;
    case vkd::ErrorCode::DeviceLost: return VKD_ERROR_DEVICE_LOST;
    case vkd::ErrorCode::VulkanFailure: return VKD_ERROR_VULKAN;
    case vkd::ErrorCode::Internal: return VKD_ERROR_INTERNAL;
    case vkd::ErrorCode::Timeout: return VKD_ERROR_TIMEOUT;
  }
  return VKD_ERROR_INTERNAL;
}

// Maps the exception being handled to a status and stores its message in `message`.
// Call only from inside a catch block.
vkd_status translate_current_exception(const char* where, std::string& message) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    set_message(message, std::string(where) + ": out of host memory (std::bad_alloc)");
    return VKD_ERROR_OUT_OF_MEMORY;
  } catch (const vkd::Error& e) {
    set_message(message, std::string(where) + ": " + e.what());
    return from_error_code(e.code());
  } catch (const std::exception& e) {
    set_message(message, std::string(where) + ": internal error: " + e.what());
    return VKD_ERROR_INTERNAL;
  } catch (...) {
    set_message(message, std::string(where) + ": internal error: unknown exception");
    return VKD_ERROR_INTERNAL;
  }
}
// The string concatenations above may themselves throw bad_alloc; this wrapper makes the
// outcome total (the message is then just emptied by set_message).
vkd_status handle_exception(const char* where, std::string& message) noexcept {
  try {
    return translate_current_exception(where, message);
  } catch (...) {
    return VKD_ERROR_OUT_OF_MEMORY;
  }
}

// ABI rule: a caller built against an older header passes a smaller vkd_options; read a field
// only when it lies entirely inside options->struct_size.
#define VKD_OPTION_FITS(options, field) \
  ((options)->struct_size >= offsetof(vkd_options, field) + sizeof((options)->field))

vkd_status to_delegate_options(const vkd_options* in, vkd::DelegateOptions* out,
                               std::string* error) {
  if (in == nullptr) return VKD_OK;  // defaults
  if (in->struct_size < sizeof(in->struct_size)) {
    *error = "vkd_delegate_init: options->struct_size is " + std::to_string(in->struct_size) +
             "; call vkd_options_init(&options) before setting fields";
    return VKD_ERROR_INVALID_ARGUMENT;
  }
  if (VKD_OPTION_FITS(in, device) && in->device != nullptr) out->device = in->device;
  if (VKD_OPTION_FITS(in, validation)) out->validation = in->validation != 0;
  if (VKD_OPTION_FITS(in, profiling)) out->profiling = in->profiling != 0;
  if (VKD_OPTION_FITS(in, pipeline_cache_file) && in->pipeline_cache_file != nullptr) {
    out->pipeline_cache_file = in->pipeline_cache_file;
  }
  if (VKD_OPTION_FITS(in, constant_batch_bytes)) {
    out->constant_batch_bytes = in->constant_batch_bytes;
  }
  if (VKD_OPTION_FITS(in, gpu_timeout_ms)) out->gpu_timeout_ms = in->gpu_timeout_ms;
  return VKD_OK;
}

#undef VKD_OPTION_FITS

// ABI rule for out-structs: fill a complete struct, copy only the caller's struct_size bytes.
template <typename T>
vkd_status write_out_struct(const T& full, T* out, const char* fn, std::string& error) {
  if (out->struct_size < sizeof(out->struct_size)) {
    error = std::string(fn) + ": struct_size is " + std::to_string(out->struct_size) +
            "; set it to sizeof the struct before the call";
    return VKD_ERROR_INVALID_ARGUMENT;
  }
  const size_t caller_size = out->struct_size;
  std::memcpy(out, &full, caller_size < sizeof(T) ? caller_size : sizeof(T));
  out->struct_size = caller_size;
  return VKD_OK;
}

vkd_tensor_info make_info(const vkd::TensorInfo& info, size_t bytes) {
  vkd_tensor_info out{};
  out.struct_size = sizeof(out);
  out.name = info.name.c_str();
  out.dtype = static_cast<vkd_dtype>(static_cast<int>(info.host_dtype));
  const size_t rank = info.sizes.size() < VKD_MAX_RANK ? info.sizes.size() : VKD_MAX_RANK;
  out.rank = static_cast<uint32_t>(rank);
  for (size_t i = 0; i < VKD_MAX_RANK; ++i) out.sizes[i] = i < rank ? info.sizes[i] : 0;
  out.bytes = bytes;
  out.device_dtype = info.device_dtype.c_str();
  out.layout = info.layout.c_str();
  out.storage = info.storage.c_str();
  return out;
}

// Copies the C tensor descriptions into C++ views. A NULL data pointer or a rank above
// VKD_MAX_RANK cannot be forwarded (the sizes array holds 4), so they fail here; every other
// mismatch (count, dtype, sizes, bytes) is the Delegate's to report.
template <typename View, typename Data>
vkd_status to_views(const vkd_tensor* tensors, size_t count, const char* what,
                    std::vector<View>* views, std::string* error) {
  if (count > 0 && tensors == nullptr) {
    *error = std::string("vkd_delegate_execute: ") + what + " is NULL but " + what +
             "_count is " + std::to_string(count);
    return VKD_ERROR_INVALID_ARGUMENT;
  }
  views->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const vkd_tensor& t = tensors[i];
    if (t.rank > VKD_MAX_RANK) {
      *error = std::string("vkd_delegate_execute: ") + what + "[" + std::to_string(i) +
               "]: rank " + std::to_string(t.rank) + " exceeds VKD_MAX_RANK (" +
               std::to_string(VKD_MAX_RANK) + ")";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    if (t.data == nullptr) {
      *error = std::string("vkd_delegate_execute: ") + what + "[" + std::to_string(i) +
               "].data is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    View view;
    view.data = static_cast<Data>(t.data);
    view.bytes = t.bytes;
    view.dtype = static_cast<vkd::HostDType>(static_cast<int32_t>(t.dtype));
    view.sizes.assign(t.sizes, t.sizes + t.rank);
    views->push_back(std::move(view));
  }
  return VKD_OK;
}

const char* const kNullHandleMessage = "invalid argument: the vkd_delegate handle is NULL";

// Runs `body` with the handle's mutex held; an exception from `body` becomes a status and a
// message in handle->error (still under the lock). Locking itself can only fail with
// std::system_error, which then becomes VKD_ERROR_INTERNAL without touching the handle.
template <typename Body>
vkd_status with_handle_locked(const vkd_delegate* handle, std::string* error, const char* where,
                              Body&& body) noexcept {
  try {
    std::lock_guard<std::mutex> lock(handle->mutex);
    try {
      return body();
    } catch (...) {
      return handle_exception(where, *error);
    }
  } catch (...) {
    return VKD_ERROR_INTERNAL;
  }
}

}  // namespace

extern "C" {

VKD_C_API const char* vkd_status_name(vkd_status status) {
  switch (status) {
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
    const vkd_status options_status = to_delegate_options(options, &cpp_options, &g_init_error);
    if (options_status != VKD_OK) return options_status;

    auto handle = std::make_unique<vkd_delegate>();
    std::string error;
    const vkd::Status st = vkd::Delegate::create(blob, size, cpp_options, &handle->impl, &error);
    if (st != vkd::Status::Ok || !handle->impl) {
      const vkd_status status = st == vkd::Status::Ok ? VKD_ERROR_INTERNAL : from_status(st);
      g_init_error = error.empty() ? std::string("vkd_delegate_init failed: ") +
                                         vkd_status_name(status)
                                   : error;
      return status;
    }

    const size_t n_in = handle->impl->input_count();
    const size_t n_out = handle->impl->output_count();
    handle->inputs.reserve(n_in);
    handle->input_bytes.reserve(n_in);
    for (size_t i = 0; i < n_in; ++i) {
      handle->inputs.push_back(handle->impl->input(i));
      handle->input_bytes.push_back(handle->inputs.back().host_bytes());
    }
    handle->outputs.reserve(n_out);
    handle->output_bytes.reserve(n_out);
    for (size_t i = 0; i < n_out; ++i) {
      handle->outputs.push_back(handle->impl->output(i));
      handle->output_bytes.push_back(handle->outputs.back().host_bytes());
    }
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

namespace {
vkd_status tensor_info(vkd_delegate* handle, size_t index, vkd_tensor_info* info, bool input) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  const char* fn = input ? "vkd_delegate_input_info" : "vkd_delegate_output_info";
  return with_handle_locked(handle, &handle->error, fn, [&]() -> vkd_status {
    const auto& infos = input ? handle->inputs : handle->outputs;
    const auto& bytes = input ? handle->input_bytes : handle->output_bytes;
    if (info == nullptr) {
      handle->error = std::string(fn) + ": info is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    if (index >= infos.size()) {
      handle->error = std::string(fn) + ": index " + std::to_string(index) +
                      " out of range (the model has " + std::to_string(infos.size()) +
                      (input ? " inputs)" : " outputs)");
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    return write_out_struct(make_info(infos[index], bytes[index]), info, fn, handle->error);
  });
}
}  // namespace

VKD_C_API vkd_status vkd_delegate_input_info(vkd_delegate* handle, size_t index,
                                             vkd_tensor_info* info) {
  return tensor_info(handle, index, info, /*input=*/true);
}

VKD_C_API vkd_status vkd_delegate_output_info(vkd_delegate* handle, size_t index,
                                              vkd_tensor_info* info) {
  return tensor_info(handle, index, info, /*input=*/false);
}

VKD_C_API vkd_status vkd_delegate_execute(vkd_delegate* handle, const vkd_tensor* inputs,
                                          size_t input_count, vkd_tensor* outputs,
                                          size_t output_count) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  // The lock is held for the whole call: calls on one handle are serialized (the header's
  // promise), and the profile / error caches change atomically with respect to other threads.
  return with_handle_locked(handle, &handle->error, "vkd_delegate_execute", [&]() -> vkd_status {
    handle->profile.clear();  // a failure below leaves no stale profile behind
    std::vector<vkd::ConstTensorView> in_views;
    std::vector<vkd::TensorView> out_views;
    vkd_status status = to_views<vkd::ConstTensorView, const void*>(inputs, input_count, "inputs",
                                                                    &in_views, &handle->error);
    if (status != VKD_OK) return status;
    status = to_views<vkd::TensorView, void*>(outputs, output_count, "outputs", &out_views,
                                              &handle->error);
    if (status != VKD_OK) return status;

    status = from_status(handle->impl->execute(in_views, out_views));
    // Profile strings are valid until the next execute: refresh them now, success or not.
    handle->profile = handle->impl->last_profile();
    if (status == VKD_OK) {
      handle->error.clear();
    } else {
      std::string message = handle->impl->last_error();
      handle->error = message.empty() ? std::string("vkd_delegate_execute failed: ") +
                                            vkd_status_name(status)
                                      : std::move(message);
    }
    return status;
  });
}

VKD_C_API size_t vkd_delegate_profile_count(vkd_delegate* handle) {
  if (handle == nullptr) return 0;
  try {
    std::lock_guard<std::mutex> lock(handle->mutex);
    return handle->profile.size();
  } catch (...) {
    return 0;
  }
}

VKD_C_API vkd_status vkd_delegate_profile_entry(vkd_delegate* handle, size_t index,
                                                vkd_node_profile* entry) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(handle, &handle->error, "vkd_delegate_profile_entry",
                            [&]() -> vkd_status {
    if (entry == nullptr) {
      handle->error = "vkd_delegate_profile_entry: entry is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    if (index >= handle->profile.size()) {
      handle->error = "vkd_delegate_profile_entry: index " + std::to_string(index) +
                      " out of range (the last execute profiled " +
                      std::to_string(handle->profile.size()) + " nodes)";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    const vkd::NodeProfile& node = handle->profile[index];
    vkd_node_profile full{};
    full.struct_size = sizeof(full);
    full.op = node.op.c_str();
    full.kernel = node.kernel.c_str();
    full.gpu_us = node.gpu_us;
    full.tensors = node.tensors.c_str();
    return write_out_struct(full, entry, "vkd_delegate_profile_entry", handle->error);
  });
}

VKD_C_API const char* vkd_delegate_last_error(const vkd_delegate* handle) {
  if (handle == nullptr) return kNullHandleMessage;
  try {
    std::lock_guard<std::mutex> lock(handle->mutex);
    std::string& copy = handle->error_copies[std::this_thread::get_id()];
    copy = handle->error;
    return copy.c_str();
  } catch (...) {
    return "vkd_delegate_last_error: out of host memory while copying the message";
  }
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
