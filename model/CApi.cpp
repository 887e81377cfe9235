// The C API for a whole model (vkd_model.h) over vkd::Model (Model.hpp), with the delegate C
// API's rules and helpers (runtime/delegate/ApiBoundary.h): nothing escapes, every entry point
// returns a vkd_status plus a message; tensor info strings are copied once at load and live
// until destroy; vkd_model_last_error() is a per-thread copy kept on the handle;
// vkd_model_load_error() is thread_local, valid until the thread's next vkd_model_load; the
// device name is copied once at load; step labels and profile strings are stored once per
// distinct text (vkd::api::CStrings) and live until destroy.
#include "vkdelegate/vkd_model.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/delegate/ApiBoundary.h"
#include "vkdelegate/Model.hpp"

namespace {

// The per-step timings of the last execute as the C side hands them out.
struct CStepTimings {
  struct Step {
    vkd_step_timing timing;              // its label in `strings`
    std::vector<vkd::api::CNode> nodes;  // its dispatches
  };
  std::vector<Step> steps;
  vkd::api::CStrings strings;

  void clear() { steps.clear(); }
  void refresh(const vkd::Model& impl) {
    for (const vkd::StepTiming& t : impl.last_timings()) {
      Step step{};
      step.timing.struct_size = sizeof(step.timing);
      step.timing.step = t.step;
      step.timing.place = t.place == vkd::StepPlace::Gpu ? VKD_STEP_GPU : VKD_STEP_HOST;
      step.timing.label = strings.stored(t.label);
      step.timing.wall_us = t.wall_us;
      for (const vkd::NodeProfile& n : t.profile) {
        step.nodes.push_back(vkd::api::stored_node(strings, n));
      }
      step.timing.profile_count = step.nodes.size();
      steps.push_back(std::move(step));
    }
  }
};

}  // namespace

// The opaque handle: the C++ model plus the tensor infos, lock and last error the C side
// hands out (vkd::api::CHandle).
struct vkd_model : vkd::api::CHandle {
  std::unique_ptr<vkd::Model> impl;
  std::string device_name;  // copied once at load
  CStepTimings timings;     // of the last execute; guarded by `mutex`
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
      g_load_error =
          std::string("vkd_model_load: ") + (out == nullptr ? "out" : "path") + " is NULL";
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
    handle->device_name = handle->impl->device_name();
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

VKD_C_API vkd_status vkd_model_input_info(vkd_model* handle, size_t index, vkd_tensor_info* info) {
  return tensor_info(handle, index, info, /*input=*/true, "vkd_model_input_info");
}

VKD_C_API vkd_status vkd_model_output_info(vkd_model* handle, size_t index, vkd_tensor_info* info) {
  return tensor_info(handle, index, info, /*input=*/false, "vkd_model_output_info");
}

VKD_C_API vkd_status vkd_model_length_range(vkd_model* handle, int64_t* min, int64_t* max) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return with_handle_locked(handle, &handle->error, "vkd_model_length_range", [&]() -> vkd_status {
    if (min == nullptr || max == nullptr) {
      handle->error = "vkd_model_length_range: min or max is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    const vkd::Delegate::LengthRange r = handle->impl->length_range();
    *min = r.min;
    *max = r.max;
    return VKD_OK;
  });
}

VKD_C_API vkd_status vkd_model_length_of_inputs(vkd_model* handle, const vkd_tensor* inputs,
                                                size_t input_count, int64_t* length) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return length_of_inputs_locked(handle, *handle->impl, inputs, input_count, length,
                                 "vkd_model_length_of_inputs");
}

VKD_C_API vkd_status vkd_model_input_info_at_length(vkd_model* handle, int64_t length, size_t index,
                                                    vkd_tensor_info* info) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return info_at_length(handle, *handle->impl, length, index, info, true,
                        "vkd_model_input_info_at_length");
}

VKD_C_API vkd_status vkd_model_output_info_at_length(vkd_model* handle, int64_t length,
                                                     size_t index, vkd_tensor_info* info) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return info_at_length(handle, *handle->impl, length, index, info, false,
                        "vkd_model_output_info_at_length");
}

VKD_C_API vkd_status vkd_model_execute(vkd_model* handle, const vkd_tensor* inputs,
                                       size_t input_count, vkd_tensor* outputs,
                                       size_t output_count) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return execute_locked(handle, *handle->impl, "vkd_model_execute", inputs, input_count, outputs,
                        output_count, handle->timings);
}

VKD_C_API vkd_status vkd_model_set_profiling(vkd_model* handle, int mode) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  return set_profiling(handle, *handle->impl, mode, "vkd_model_set_profiling");
}

VKD_C_API size_t vkd_model_timing_count(vkd_model* handle) {
  if (handle == nullptr) return 0;
  try {
    std::lock_guard<std::mutex> lock(handle->mutex);
    return handle->timings.steps.size();
  } catch (...) {
    return 0;
  }
}

namespace {

// The timing `index` of the last execute, or NULL with the message in handle->error.
const CStepTimings::Step* step_timing(vkd_model* handle, size_t index, const char* fn) {
  const auto& steps = handle->timings.steps;
  if (index < steps.size()) return &steps[index];
  handle->error = std::string(fn) + ": index " + std::to_string(index) +
                  " out of range (the last execute timed " + std::to_string(steps.size()) +
                  " steps)";
  return nullptr;
}

}  // namespace

VKD_C_API vkd_status vkd_model_timing(vkd_model* handle, size_t index, vkd_step_timing* timing) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  const char* fn = "vkd_model_timing";
  return with_handle_locked(handle, &handle->error, fn, [&]() -> vkd_status {
    if (timing == nullptr) {
      handle->error = std::string(fn) + ": timing is NULL";
      return VKD_ERROR_INVALID_ARGUMENT;
    }
    const CStepTimings::Step* step = step_timing(handle, index, fn);
    if (step == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
    return write_out_struct(step->timing, timing, fn, handle->error);
  });
}

VKD_C_API vkd_status vkd_model_profile_entry(vkd_model* handle, size_t index, size_t node,
                                             vkd_node_profile* entry) {
  if (handle == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
  const char* fn = "vkd_model_profile_entry";
  return with_handle_locked(handle, &handle->error, fn, [&]() -> vkd_status {
    const CStepTimings::Step* step = step_timing(handle, index, fn);
    if (step == nullptr) return VKD_ERROR_INVALID_ARGUMENT;
    return node_profile_entry(step->nodes, node, entry, fn, step->timing.label, handle->error);
  });
}

VKD_C_API const char* vkd_model_device_name(const vkd_model* handle) {
  return handle == nullptr ? "" : handle->device_name.c_str();
}

VKD_C_API uint64_t vkd_model_validation_message_count(const vkd_model* handle) {
  if (handle == nullptr) return 0;
  try {
    return handle->impl->validation_message_count();  // each delegate locks itself
  } catch (...) {
    return 0;
  }
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
