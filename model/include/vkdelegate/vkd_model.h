/* vkdelegate C API for a whole model (libvkdmodel): load what `vkd compile` wrote - a
 * partitioned model (MODEL.partition.json of `vkd compile --partition`: GPU partitions plus
 * host steps the CPU runs) or a plain model.vkd - and run it on host tensors, as `vkd run`
 * does. The C++ API is vkdelegate/Model.hpp.
 *
 * The rules of vkd_delegate.h hold here too (ABI, errors, threads, host data, string
 * lifetimes); the options are the delegate's (vkd_options_init), used for every GPU step.
 * The message of a failed vkd_model_load is vkd_model_load_error() (per thread), afterwards
 * vkd_model_last_error(handle).
 */
#ifndef VKDELEGATE_VKD_MODEL_H
#define VKDELEGATE_VKD_MODEL_H

#include "vkdelegate/vkd_delegate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vkd_model vkd_model;

/* Loads `path`: a name ending in ".json" is a partition plan, anything else a blob. Every file
 * is read and checked before the device is touched. weights_path: the original graph's weights
 * (.safetensors) when a host step reads a constant (not read otherwise; may then be NULL).
 * options may be NULL (defaults).
 * On failure *out is NULL and vkd_model_load_error() holds the message. */
VKD_C_API vkd_status vkd_model_load(const char* path, const char* weights_path,
                                    const vkd_options* options, vkd_model** out);
VKD_C_API const char* vkd_model_load_error(void);

VKD_C_API size_t vkd_model_input_count(const vkd_model* handle);
VKD_C_API size_t vkd_model_output_count(const vkd_model* handle);
/* Storage "host" and layout "nchw" for a tensor that only host steps touch. */
VKD_C_API vkd_status vkd_model_input_info(vkd_model* handle, size_t index, vkd_tensor_info* info);
VKD_C_API vkd_status vkd_model_output_info(vkd_model* handle, size_t index, vkd_tensor_info* info);

/* A model of one blob compiled with a dynamic length (vkd_delegate_length_range): [*min, *max],
 * both 0 for any other model; the length `inputs` give (only rank and sizes are read: a longer
 * input is VKD_ERROR_INVALID_ARGUMENT naming the input, the dim and the limit); input / output
 * `index` at `length` (what execute takes and gives then). Strings are owned by the handle. */
VKD_C_API vkd_status vkd_model_length_range(vkd_model* handle, int64_t* min, int64_t* max);
VKD_C_API vkd_status vkd_model_length_of_inputs(vkd_model* handle, const vkd_tensor* inputs,
                                                size_t input_count, int64_t* length);
VKD_C_API vkd_status vkd_model_input_info_at_length(vkd_model* handle, int64_t length, size_t index,
                                                    vkd_tensor_info* info);
VKD_C_API vkd_status vkd_model_output_info_at_length(vkd_model* handle, int64_t length,
                                                     size_t index, vkd_tensor_info* info);

/* One inference through every step; inputs/outputs in the model's order, each matching its
 * info exactly (or its info at the inputs' length, for a model with a dynamic length). */
VKD_C_API vkd_status vkd_model_execute(vkd_model* handle, const vkd_tensor* inputs,
                                       size_t input_count, vkd_tensor* outputs,
                                       size_t output_count);

/* How the following executes time their GPU steps: vkd_delegate_set_profiling (the same
 * VKD_PROFILING_* modes and errors) on every GPU step's delegate. VKD_PROFILING_NODES (the
 * default) gives each GPU step a profile entry per dispatch; _SPAN and _OFF none (_OFF reads no
 * timestamp query: the host wall an app sees). Any mode but OFF fails for a model loaded without
 * options->profiling, with or without a GPU step; a model of host steps alone takes the rest. */
VKD_C_API vkd_status vkd_model_set_profiling(vkd_model* handle, int mode);

/* Where the time of the last vkd_model_execute went, per step in execution order
 * (vkd::Model::last_timings): vkd_model_timing_count is 0 before the first execute and after a
 * failed one; each step's dispatches (a GPU step with options.profiling) are
 * vkd_model_profile_entry(handle, step, 0 .. profile_count - 1). Strings are owned by the handle
 * and stay valid until it is destroyed. */
#define VKD_STEP_GPU 0
#define VKD_STEP_HOST 1
typedef struct vkd_step_timing {
  size_t struct_size;
  size_t step;          /* index of the step in the model */
  int place;            /* VKD_STEP_GPU or VKD_STEP_HOST */
  const char* label;    /* "step 0 (GPU m.p0.vkd)", "step 1 (host node 3 (aten.max_pool2d))" */
  double wall_us;       /* host wall time: the delegate's execute or the interpreter */
  size_t profile_count; /* dispatch nodes profiled (0 for a host step or without profiling) */
} vkd_step_timing;

VKD_C_API size_t vkd_model_timing_count(vkd_model* handle);
/* `index`: 0 .. vkd_model_timing_count() - 1 (the out-struct rules of vkd_delegate.h). */
VKD_C_API vkd_status vkd_model_timing(vkd_model* handle, size_t index, vkd_step_timing* timing);
/* Dispatch node `node` of timing `index` (as vkd_delegate_profile_entry). */
VKD_C_API vkd_status vkd_model_profile_entry(vkd_model* handle, size_t index, size_t node,
                                             vkd_node_profile* entry);

/* The device of the first GPU step, or "none (every step runs on the host)" (owned by the
 * handle). */
VKD_C_API const char* vkd_model_device_name(const vkd_model* handle);
/* Khronos validation messages seen so far, summed over the GPU steps; 0 without
 * options.validation. */
VKD_C_API uint64_t vkd_model_validation_message_count(const vkd_model* handle);

VKD_C_API const char* vkd_model_last_error(const vkd_model* handle);
/* Frees the handle and every delegate it holds; exactly once per handle, NULL is a no-op (the
 * rules of vkd_delegate_destroy). */
VKD_C_API void vkd_model_destroy(vkd_model* handle);

#ifdef __cplusplus
}
#endif

#endif /* VKDELEGATE_VKD_MODEL_H */
