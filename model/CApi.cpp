// The C API for a whole model (vkd_model.h) over vkd::Model (Model.hpp), with the delegate C
// API's rules and helpers (runtime/delegate/ApiBoundary.h): nothing escapes, every entry point
// returns a vkd_status plus a message; tensor info strings are copied once at load and live
// until destroy; vkd_model_last_error() is a per-thread copy kept on the handle;
// vkd_model_load_error() is thread_local, valid until the thread's next vkd_model_load.
#include "vkdelegate/vkd_model.h"

#include <memory>
#include <string>

#include "runtime/delegate/ApiBoundary.h"
#include "vkdelegate/Model.hpp"

// The opaque handle: the C++ model plus the tensor infos, lock and last error the C side
// hands out (vkd::api::CHandle).
struct vkd_model : vkd::api::CHandle {
  std::unique_ptr<vkd::Model> impl;
};

namespace {

using namespace vkd::api;

thread_local std::string g_load_error;

}  // namespace

extern "C" {

VKD_C_API vkd_status vkd_model_load(const char* path, const char* weights_path,
                                    const vkd_options* options, vkd_model** out) {
  if (out != nullptr) *out = nullptr;
  try {
    g_load_error.clear();
    if (out == nullptr || path == nullptr) {
      g_load_error = std::string("vkd_model_load: ") + (out == nullptr ? "out" : "path") +
                     " is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    vkd::ModelOptions cpp_options;
    const vkd_status options_status =
        to_delegate_options(options, &cpp_options.delegate, &g_load_error, "vkd_model_load");
    if (options_status != VKD_OK) return options_status;
    if (weights_path != nullptr) cpp_options.weights_path = weights_path;

    auto handle = std::make_unique<vkd_model>();
    std::string error;
    const vkd::Status st = vkd::Model::load(path, cpp_options, &handle->impl, &error);
    if (st != vkd::Status::Ok || !handle->impl) {
      return creation_failure(st, error, "vkd_model_load", g_load_error);
    }
    handle->copy_infos(*handle->impl);
    *out = handle.release();
    return VKD_OK;
  } catch (...) {
    return handle_exception("vkd_model_load", g_load_error);
  }
}

VKD_C_API const char* vkd_model_load_error(void) {
  return g_load_error.c_str();  // never throws; "" when the last load succeeded
}

VKD_C_API size_t vkd_model_input_count(const vkd_model* handle) {
  return handle == nullptr ? 0 : handle->inputs.size();
}

VKD_C_API size_t vkd_model_output_count(const vkd_model* handle) {
  return handle == nullptr ? 0 : handle->outputs.size();
}

VKD_C_API vkd_status vkd_model_input_info(vkd_model* handle, size_t index,
                                          vkd_tensor_info* info) {
  return tensor_info(handle, index, info, /*input=*/true, "vkd_model_input_info");
}

VKD_C_API vkd_status vkd_model_output_info(vkd_model* handle, size_t index,
                                           vkd_tensor_info* info) {
  return tensor_info(handle, index, info, /*input=*/false, "vkd_model_output_info");
}

VKD_C_API vkd_status vkd_model_execute(vkd_model* handle, const vkd_tensor* inputs,
                                       size_t input_count, vkd_tensor* outputs,
                                       size_t output_count) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return execute_locked(handle, *handle->impl, "vkd_model_execute", inputs, input_count, outputs,
                        output_count, /*profile=*/nullptr);
}

VKD_C_API const char* vkd_model_last_error(const vkd_model* handle) {
  if (handle == nullptr) return "invalid argument: the vkd_model handle is NULL";
  return last_error_copy(handle,
                         "vkd_model_last_error: out of host memory while copying the message");
}

VKD_C_API void vkd_model_destroy(vkd_model* handle) {
  try {
    delete handle;  // NULL: no-op
  } catch (...) {
    // Destructors do not throw; nothing may reach the caller if one ever did.
  }
}

}  // extern "C"
