// What the API boundaries share: runtime/delegate's (Delegate.cpp, CApi.cpp) and model/'s
// (Model.cpp, CApi.cpp: vkd::Model and vkd_model_*). Exceptions become a status plus a
// message; a caller's views are checked against the tensors they are for; the C structs become
// C++ options and views and back; a C handle keeps its tensor infos, its lock and its last error.
//
// Header-only on purpose: libvkdmodel.so compiles its own copy, as libvkdelegate.so exports the
// API and nothing else. Not installed. The one file of runtime/delegate/ that model/ may include
// (test/layering).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/Error.h"
#include "core/TensorSpec.h"
#include "vkdelegate/Delegate.hpp"
#include "vkdelegate/vkd_delegate.h"

namespace vkd::api {

// ---- C++ API ----------------------------------------------------------------------------------

inline Status status_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return Status::InvalidArgument;
    case ErrorCode::Unsupported: return Status::Unsupported;
    case ErrorCode::OutOfMemory: return Status::OutOfMemory;
    case ErrorCode::DeviceLost: return Status::DeviceLost;
    case ErrorCode::VulkanFailure: return Status::VulkanFailure;
    case ErrorCode::Internal: return Status::Internal;
    case ErrorCode::Timeout: return Status::Timeout;
  }
  return Status::Internal;
}

// The code a failed delegate call is rethrown with below another boundary (a model's GPU step),
// so that boundary reports the delegate's own status.
inline ErrorCode error_code_of(Status status) {
  switch (status) {
    case Status::InvalidArgument: return ErrorCode::InvalidArgument;
    case Status::Unsupported: return ErrorCode::Unsupported;
    case Status::OutOfMemory: return ErrorCode::OutOfMemory;
    case Status::DeviceLost: return ErrorCode::DeviceLost;
    case Status::VulkanFailure: return ErrorCode::VulkanFailure;
    case Status::Timeout: return ErrorCode::Timeout;
    case Status::Ok:
    case Status::Internal: break;
  }
  return ErrorCode::Internal;
}

// Runs `body`, converting anything it throws into a Status and a message ("" on success).
template <typename Body>
Status guarded(std::string& message, Body&& body) {
  try {
    body();
    message.clear();
    return Status::Ok;
  } catch (const Error& e) {
    message = e.what();
    return status_of(e.code());
  } catch (const std::bad_alloc&) {
    message = "out of host memory";
    return Status::OutOfMemory;
  } catch (const std::exception& e) {
    message = std::string("internal error: ") + e.what();
    return Status::Internal;
  } catch (...) {
    message = "internal error: unknown exception";
    return Status::Internal;
  }
}

// A static factory at the API boundary (Delegate::create, Model::load): runs `make`, which
// returns the new object, converting what it throws as guarded() does; `*out` gets the object
// only on success, `*error` (when non-null) the message. `fn` names the factory when `out` is
// null.
template <typename Api, typename Make>
Status create_guarded(std::unique_ptr<Api>* out, std::string* error, const char* fn, Make&& make) {
  std::string message;
  std::unique_ptr<Api> made;
  const Status status = guarded(message, [&] {
    VKD_CHECK(out != nullptr, ErrorCode::InvalidArgument, fn, ": out is null");
    made = make();
  });
  if (error) *error = message;
  if (status == Status::Ok) *out = std::move(made);
  return status;
}

// Checks one caller view against the tensor it is for (InvalidArgument naming it: "input 0
// 'x' ..."). `fixed_shape_ops` names the ops that cannot take another shape (for the message).
template <typename View>
void check_view(const char* role, size_t index, const TensorInfo& info, const View& view,
                const std::vector<std::string>& fixed_shape_ops) {
  const std::string what = std::string(role) + " " + std::to_string(index) + " '" + info.name + "'";
  const auto dtype = static_cast<int32_t>(view.dtype);  // a caller may cast any int32 to it
  VKD_CHECK(view.dtype == HostDType::Float32 || view.dtype == HostDType::Int32 ||
                view.dtype == HostDType::Int8,
            ErrorCode::InvalidArgument, what, " has dtype ", dtype,
            ", none of HostDType's (Float32 0, Int32 1, Int8 2)");
  VKD_CHECK(view.dtype == info.host_dtype, ErrorCode::InvalidArgument, what, " is ",
            host_dtype_name(info.host_dtype), ", got ", host_dtype_name(view.dtype));
  if (view.sizes != info.sizes) {
    std::string ops;
    for (const auto& op : fixed_shape_ops) {
      if (ops.find(op) == std::string::npos) ops += (ops.empty() ? "" : ", ") + op;
    }
    VKD_THROW(ErrorCode::InvalidArgument, what, " has shape ", sizes_string(view.sizes),
              ", the model was compiled for ", sizes_string(info.sizes),
              "; resizing is not supported by ", ops.empty() ? "this graph" : ops);
  }
  VKD_CHECK(view.bytes == info.host_bytes(), ErrorCode::InvalidArgument, what, " needs ",
            info.host_bytes(), " bytes, got ", view.bytes);
  VKD_CHECK(view.data != nullptr, ErrorCode::InvalidArgument, what, ": data is null");
}

// ---- C API ------------------------------------------------------------------------------------

// Assigns without letting an allocation failure escape (used inside catch handlers).
inline void set_message(std::string& target, const char* message) noexcept {
  try {
    target = message;
  } catch (...) {
    target.clear();  // never allocates
  }
}
inline void set_message(std::string& target, const std::string& message) noexcept {
  set_message(target, message.c_str());
}

inline vkd_status from_status(Status status) {
  const int value = static_cast<int>(status);
  if (value < VKD_OK || value > VKD_ERROR_TIMEOUT) return VKD_ERROR_INTERNAL;
  return static_cast<vkd_status>(value);
}

// Maps the exception being handled to a status and stores its message, prefixed with `where`,
// in `message`. Call only from inside a catch block.
inline vkd_status translate_current_exception(const char* where, std::string& message) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    set_message(message, std::string(where) + ": out of host memory (std::bad_alloc)");
    return VKD_ERROR_OUT_OF_MEMORY;
  } catch (const Error& e) {
    set_message(message, std::string(where) + ": " + e.what());
    return from_status(status_of(e.code()));
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
inline vkd_status handle_exception(const char* where, std::string& message) noexcept {
  try {
    return translate_current_exception(where, message);
  } catch (...) {
    return VKD_ERROR_OUT_OF_MEMORY;
  }
}

// A create / load that failed (`status`; Ok without an object counts as Internal): its status,
// and `error` (or "<where> failed: <status>" when empty) into `message`.
inline vkd_status creation_failure(Status status, const std::string& error, const char* where,
                                   std::string& message) {
  const vkd_status s = status == Status::Ok ? VKD_ERROR_INTERNAL : from_status(status);
  message = error.empty() ? std::string(where) + " failed: " + vkd_status_name(s) : error;
  return s;
}

// ABI rule: a caller built against an older header passes a smaller vkd_options; read a field
// only when it lies entirely inside options->struct_size.
#define VKD_OPTION_FITS(options, field) \
  ((options)->struct_size >= offsetof(vkd_options, field) + sizeof((options)->field))

// `in` (NULL: the defaults) into `out`; `where` names the calling function in the message.
inline vkd_status to_delegate_options(const vkd_options* in, DelegateOptions* out,
                                      std::string* error, const char* where) {
  if (in == nullptr) return VKD_OK;  // defaults
  if (in->struct_size < sizeof(in->struct_size)) {
    *error = std::string(where) + ": options->struct_size is " + std::to_string(in->struct_size) +
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

inline vkd_tensor_info make_info(const TensorInfo& info, size_t bytes) {
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

// The integer a C caller stored in an enum field. C lets an app store any int there (C's enum
// is an integer type), but in C++ loading a value outside the enum's range is undefined
// (UBSan: -fsanitize=enum), so the field is read as the integer it holds, never as the enum.
template <typename Enum>
int32_t c_enum_value(const Enum& field) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int32_t),
                "a C enum field is an int");
  int32_t value;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

// Copies the C tensor descriptions into C++ views. A NULL data pointer or a rank above
// VKD_MAX_RANK cannot be forwarded (the sizes array holds 4), so they fail here; every other
// mismatch (count, dtype, sizes, bytes) is the C++ object's to report. `where` names the
// calling function in the message.
template <typename View, typename Data>
vkd_status to_views(const vkd_tensor* tensors, size_t count, const char* what, const char* where,
                    std::vector<View>* views, std::string* error) {
  if (count > 0 && tensors == nullptr) {
    *error = std::string(where) + ": " + what + " is NULL but " + what + "_count is " +
             std::to_string(count);
    return VKD_ERROR_INVALID_ARGUMENT;
  }
  views->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const vkd_tensor& t = tensors[i];
    if (t.rank > VKD_MAX_RANK) {
      *error = std::string(where) + ": " + what + "[" + std::to_string(i) + "]: rank " +
               std::to_string(t.rank) + " exceeds VKD_MAX_RANK (" + std::to_string(VKD_MAX_RANK) +
               ")";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    if (t.data == nullptr) {
      *error = std::string(where) + ": " + what + "[" + std::to_string(i) + "].data is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    const int32_t dtype = c_enum_value(t.dtype);
    if (dtype != VKD_FLOAT32 && dtype != VKD_INT32 && dtype != VKD_INT8) {
      *error = std::string(where) + ": " + what + "[" + std::to_string(i) + "].dtype is " +
               std::to_string(dtype) + ", none of VKD_FLOAT32 (0), VKD_INT32 (1), VKD_INT8 (2)";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    View view;
    view.data = static_cast<Data>(t.data);
    view.bytes = t.bytes;
    view.dtype = static_cast<HostDType>(dtype);
    view.sizes.assign(t.sizes, t.sizes + t.rank);
    views->push_back(std::move(view));
  }
  return VKD_OK;
}

// What a C handle (vkd_delegate, vkd_model) keeps besides its C++ object.
struct CHandle {
  // Copied once at init (the infos never change): their strings live until destroy.
  std::vector<TensorInfo> inputs, outputs;
  std::vector<size_t> input_bytes, output_bytes;
  // A model with a dynamic length: the infos at each length asked for (inputs, outputs), kept
  // until destroy like the ones above; guarded by `mutex`.
  std::map<int64_t, std::pair<std::vector<TensorInfo>, std::vector<TensorInfo>>> infos_at_length;

  // Everything below is guarded by `mutex` (one handle may be shared between threads).
  mutable std::mutex mutex;
  std::string error;  // message of the last failed call ("" after a good execute)
  // last_error() returns a pointer into this thread's copy, so another thread's call on the
  // same handle cannot invalidate it.
  mutable std::unordered_map<std::thread::id, std::string> error_copies;

  // Copies the tensor infos of `impl` (a vkd::Delegate or vkd::Model).
  template <typename Impl>
  void copy_infos(const Impl& impl) {
    for (size_t i = 0; i < impl.input_count(); ++i) {
      inputs.push_back(impl.input(i));
      input_bytes.push_back(inputs.back().host_bytes());
    }
    for (size_t i = 0; i < impl.output_count(); ++i) {
      outputs.push_back(impl.output(i));
      output_bytes.push_back(outputs.back().host_bytes());
    }
  }
};

// Runs `body` with the handle's mutex held; an exception from `body` becomes a status and a
// message in handle->error (still under the lock). Locking itself can only fail with
// std::system_error, which then becomes VKD_ERROR_INTERNAL without touching the handle.
template <typename Body>
vkd_status with_handle_locked(const CHandle* handle, std::string* error, const char* where,
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

// vkd_<handle>_set_profiling over `impl` (a vkd::Delegate or vkd::Model): the C mode
// (VKD_PROFILING_*) as the C++ one; any other value is InvalidArgument naming the three.
template <typename Impl>
vkd_status set_profiling(CHandle* handle, Impl& impl, int mode, const char* fn) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(handle, &handle->error, fn, [&]() -> vkd_status {
    if (mode < VKD_PROFILING_OFF || mode > VKD_PROFILING_SPAN) {
      handle->error = std::string(fn) + ": mode " + std::to_string(mode) +
                      " is none of VKD_PROFILING_OFF (0), _NODES (1), _SPAN (2)";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    using Mode = Delegate::Profiling;
    const Mode m = mode == VKD_PROFILING_NODES  ? Mode::PerDispatch
                   : mode == VKD_PROFILING_SPAN ? Mode::Span
                                                : Mode::Off;
    const vkd_status status = from_status(impl.set_profiling(m));
    handle->error = status == VKD_OK ? std::string() : impl.last_error();
    return status;
  });
}

// vkd_<handle>_input_info / _output_info; `fn` names the function in messages.
inline vkd_status tensor_info(CHandle* handle, size_t index, vkd_tensor_info* info, bool input,
                              const char* fn) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
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
    if (infos[index].sizes.size() > VKD_MAX_RANK) {  // a model's host-only tensor may be 5-D
      handle->error = std::string(fn) + ": '" + infos[index].name + "' has rank " +
                      std::to_string(infos[index].sizes.size()) + ", above VKD_MAX_RANK (" +
                      std::to_string(VKD_MAX_RANK) + "); the C++ API describes it";
      return VKD_ERROR_UNSUPPORTED;
    }
    return write_out_struct(make_info(infos[index], bytes[index]), info, fn, handle->error);
  });
}

// vkd_<handle>_input_info_at_length / _output_info_at_length over `impl` (a vkd::Delegate or
// vkd::Model with infos_at_length()); `fn` names the function in messages.
template <typename Impl>
vkd_status info_at_length(CHandle* handle, Impl& impl, int64_t length, size_t index,
                          vkd_tensor_info* info, bool input, const char* fn) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(handle, &handle->error, fn, [&]() -> vkd_status {
    if (info == nullptr) {
      handle->error = std::string(fn) + ": info is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    auto it = handle->infos_at_length.find(length);
    if (it == handle->infos_at_length.end()) {
      std::vector<TensorInfo> ins, outs;
      const Status st = impl.infos_at_length(length, &ins, &outs);
      if (st != Status::Ok) {
        handle->error = std::string(fn) + ": " + impl.last_error();
        return from_status(st);
      }
      it = handle->infos_at_length.emplace(length, std::make_pair(ins, outs)).first;
    }
    const auto& infos = input ? it->second.first : it->second.second;
    if (index >= infos.size()) {
      handle->error = std::string(fn) + ": index " + std::to_string(index) +
                      " out of range (the model has " + std::to_string(infos.size()) +
                      (input ? " inputs)" : " outputs)");
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    return write_out_struct(make_info(infos[index], infos[index].host_bytes()), info, fn,
                            handle->error);
  });
}

// vkd_<handle>_length_of_inputs: only each tensor's rank and sizes are read.
template <typename Impl>
vkd_status length_of_inputs_locked(CHandle* handle, Impl& impl, const vkd_tensor* inputs,
                                   size_t count, int64_t* length, const char* fn) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(handle, &handle->error, fn, [&]() -> vkd_status {
    if (length == nullptr || (count > 0 && inputs == nullptr)) {
      handle->error = std::string(fn) + ": length or inputs is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    std::vector<std::vector<int64_t>> sizes;
    for (size_t i = 0; i < count; ++i) {
      if (inputs[i].rank > VKD_MAX_RANK) {
        handle->error = std::string(fn) + ": inputs[" + std::to_string(i) + "]: rank " +
                        std::to_string(inputs[i].rank) + " exceeds VKD_MAX_RANK";
        return VKD_ERROR_INVALID_ARGUMENT;
      }
      sizes.emplace_back(inputs[i].sizes, inputs[i].sizes + inputs[i].rank);
    }
    const Status st = impl.length_of_inputs(sizes, length);
    if (st != Status::Ok) handle->error = impl.last_error();
    return from_status(st);
  });
}

// The profile strings a C handle hands out (op, kernel, tensors; a model's step labels). They
// only grow and live as long as the handle: a thread may hold a vkd_node_profile while other
// threads sharing the handle execute, so no execute may free what an earlier one handed out. A
// delegate's nodes are fixed at init, so each distinct text is stored once, and every execute
// hands out the same pointers: the store never holds more than the first execute put there.
struct CStrings {
  // Elements of an unordered_set keep their address (rehashing moves only the buckets).
  std::unordered_set<std::string> strings;

  const char* stored(const std::string& text) { return strings.insert(text).first->c_str(); }
};

// One dispatch node of the last execute, its strings in a handle's CStrings.
struct CNode {
  const char* op;
  const char* kernel;
  const char* tensors;
  double gpu_us;
};

inline CNode stored_node(CStrings& strings, const NodeProfile& n) {
  return {strings.stored(n.op), strings.stored(n.kernel), strings.stored(n.tensors), n.gpu_us};
}

// vkd_<handle>_profile_entry: `nodes[index]` into `entry` (the out-struct rules); `fn` names the
// function in messages, `what` the nodes' owner ("the last execute").
inline vkd_status node_profile_entry(const std::vector<CNode>& nodes, size_t index,
                                     vkd_node_profile* entry, const char* fn, const char* what,
                                     std::string& error) {
  if (entry == nullptr) {
    error = std::string(fn) + ": entry is NULL";
    return VKD_ERROR_INVALID_ARGUMENT;
  }
  if (index >= nodes.size()) {
    error = std::string(fn) + ": index " + std::to_string(index) + " out of range (" + what +
            " profiled " + std::to_string(nodes.size()) + " nodes)";
    return VKD_ERROR_INVALID_ARGUMENT;
  }
  vkd_node_profile full{};
  full.struct_size = sizeof(full);
  full.op = nodes[index].op;
  full.kernel = nodes[index].kernel;
  full.gpu_us = nodes[index].gpu_us;
  full.tensors = nodes[index].tensors;
  return write_out_struct(full, entry, fn, error);
}

// The per-node profile of a delegate's C handle after an execute.
struct CProfile {
  std::vector<CNode> nodes;  // of the last execute
  CStrings strings;

  void clear() { nodes.clear(); }
  void refresh(const Delegate& impl) {
    for (const NodeProfile& n : impl.last_profile()) nodes.push_back(stored_node(strings, n));
  }
};

// vkd_<handle>_execute over `impl` (a vkd::Delegate or vkd::Model): the lock is held for the
// whole call, so calls on one handle are serialized and the caches change atomically for other
// threads. `profile` (CProfile, or model/'s per-step equivalent) is cleared first, so a failure
// leaves no stale profile, and refreshed from `impl` after impl.execute.
template <typename Impl, typename Profile>
vkd_status execute_locked(CHandle* handle, Impl& impl, const char* where, const vkd_tensor* inputs,
                          size_t input_count, vkd_tensor* outputs, size_t output_count,
                          Profile& profile) {
  return with_handle_locked(handle, &handle->error, where, [&]() -> vkd_status {
    profile.clear();
    std::vector<ConstTensorView> in_views;
    std::vector<TensorView> out_views;
    vkd_status status = to_views<ConstTensorView, const void*>(inputs, input_count, "inputs", where,
                                                               &in_views, &handle->error);
    if (status != VKD_OK) return status;
    status = to_views<TensorView, void*>(outputs, output_count, "outputs", where, &out_views,
                                         &handle->error);
    if (status != VKD_OK) return status;

    status = from_status(impl.execute(in_views, out_views));
    profile.refresh(impl);
    if (status == VKD_OK) {
      handle->error.clear();
    } else {
      std::string message = impl.last_error();
      handle->error = message.empty() ? std::string(where) + " failed: " + vkd_status_name(status)
                                      : std::move(message);
    }
    return status;
  });
}

// vkd_<handle>_last_error: a per-thread copy (see CHandle::error_copies); `out_of_memory` (a
// literal) when even the copy fails.
inline const char* last_error_copy(const CHandle* handle, const char* out_of_memory) {
  try {
    std::lock_guard<std::mutex> lock(handle->mutex);
    std::string& copy = handle->error_copies[std::this_thread::get_id()];
    copy = handle->error;
    return copy.c_str();
  } catch (...) {
    return out_of_memory;
  }
}

}  // namespace vkd::api
