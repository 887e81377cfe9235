/* vkdelegate stable C API: load a delegate blob (model.vkd) onto a Vulkan device and run it.
 *
 * ABI rules: functions are only added, never changed; enum values are never reused; structs
 * passed in carry their own size (struct_size) so new fields can be appended.
 *
 * Errors: every function returns a vkd_status; no exception, abort or exit reaches the caller.
 * The message of the last failure is vkd_delegate_last_error(handle), or vkd_init_error() for a
 * failed vkd_delegate_init (per thread).
 *
 * Threads: distinct handles are independent and may be used concurrently. Calls on one handle
 * from several threads are serialized internally (safe, not parallel). Strings returned by a
 * handle are owned by it: tensor info, device name and profile strings stay valid until it is
 * destroyed, whatever other threads sharing it run meanwhile; vkd_delegate_last_error() until
 * the same thread's next vkd_delegate_last_error() on it.
 *
 * Enums from the caller: C lets any int be stored in an enum field; a value that is none of the
 * enum's (a vkd_tensor dtype of 77) is refused with VKD_ERROR_INVALID_ARGUMENT and a message
 * naming the field and the value.
 *
 * Host data: NCHW, C order; dtype per tensor from vkd_delegate_input_info/output_info
 * (float32 for float tensors, int32, int8 for quantized int8x4 tensors).
 */
#ifndef VKDELEGATE_VKD_DELEGATE_H
#define VKDELEGATE_VKD_DELEGATE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define VKD_C_API __declspec(dllexport)
#else
#define VKD_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vkd_status {
  VKD_OK = 0,
  VKD_ERROR_INVALID_ARGUMENT = 1, /* malformed blob, wrong input count/shape/dtype, bad option */
  VKD_ERROR_UNSUPPORTED = 2,      /* valid, but the device or this build cannot run it */
  VKD_ERROR_OUT_OF_MEMORY = 3,
  VKD_ERROR_DEVICE_LOST = 4, /* the handle is unusable afterwards; destroy it */
  VKD_ERROR_VULKAN = 5,
  VKD_ERROR_INTERNAL = 6,
  VKD_ERROR_TIMEOUT = 7 /* the GPU did not finish within gpu_timeout_ms; the handle is
                           poisoned (every later execute returns this), destroy is safe */
} vkd_status;

typedef enum vkd_dtype { VKD_FLOAT32 = 0, VKD_INT32 = 1, VKD_INT8 = 2 } vkd_dtype;

#define VKD_MAX_RANK 4

typedef struct vkd_delegate vkd_delegate;

typedef struct vkd_options {
  size_t struct_size;              /* sizeof(vkd_options); set by vkd_options_init */
  const char* device;              /* index or name substring; NULL or "" = default */
  int validation;                  /* 1: Khronos validation layer */
  int profiling;                   /* 1: per-node GPU timestamps (default 1) */
  const char* pipeline_cache_file; /* NULL or "" = $VKD_PIPELINE_CACHE, else per-user default;
                                      "off" = none */
  uint64_t constant_batch_bytes;   /* staging bound while uploading constants */
  uint32_t gpu_timeout_ms;         /* a GPU wait longer than this fails with VKD_ERROR_TIMEOUT
                                      instead of hanging; must be > 0 */
} vkd_options;

/* Caller-owned host memory for one tensor. */
typedef struct vkd_tensor {
  void* data;
  size_t bytes;
  vkd_dtype dtype;
  uint32_t rank;
  int64_t sizes[VKD_MAX_RANK];
} vkd_tensor;

/* Out-structs (vkd_tensor_info, vkd_node_profile, vkd_execute_profile): set struct_size =
 * sizeof(the struct) before the call; the library writes only the fields that fit, so apps built
 * against an older header keep working when fields are appended. */
typedef struct vkd_tensor_info {
  size_t struct_size;
  const char* name; /* owned by the handle */
  vkd_dtype dtype;  /* host dtype execute() takes/gives */
  uint32_t rank;
  int64_t sizes[VKD_MAX_RANK];
  size_t bytes;             /* host bytes */
  const char* device_dtype; /* "float32", "int8x4", ... (owned by the handle) */
  const char* layout;       /* "packed_int8_4w4c", ... (owned by the handle) */
  const char* storage;      /* "buffer" | "texture3d" (owned by the handle) */
} vkd_tensor_info;

typedef struct vkd_node_profile {
  size_t struct_size;
  const char* op;     /* owned by the handle, valid until it is destroyed: a node's strings
                         are fixed at init, every execute hands out the same pointers */
  const char* kernel; /* the shader variant: the route the op took */
  double gpu_us;
  const char* tensors; /* "out: y [1,5,7,9] float32 ...; in: ..." */
} vkd_node_profile;

/* Where the time of the last execute went, in microseconds (vkd::ExecuteProfile): the host
 * phases follow each other inside host_wall_us; the GPU fields are 0 without
 * options.profiling, and everything is 0 before the first execute or after a failed one. */
typedef struct vkd_execute_profile {
  size_t struct_size;
  double host_wall_us;       /* the execute call, up to the outputs in the caller's memory */
  double input_copy_us;      /* caller memory -> input staging (packing on the CPU) */
  double submit_wait_us;     /* submit -> fence signalled */
  double output_copy_us;     /* output staging -> caller memory (unpacking on the CPU) */
  double gpu_span_us;        /* first dispatch's start to last dispatch's end */
  double gpu_total_us;       /* sum of the dispatches' own times */
  double gpu_input_copy_us;  /* GPU: input staging -> tensors (appended: older callers' */
  double gpu_output_copy_us; /* smaller struct_size gets the fields above only) */
} vkd_execute_profile;

/* "VKD_OK", "VKD_ERROR_INVALID_ARGUMENT", ...: a static string; "VKD_ERROR_UNKNOWN_STATUS" for a
 * value that is none of vkd_status's. */
VKD_C_API const char* vkd_status_name(vkd_status status);
VKD_C_API void vkd_options_init(vkd_options* options);

/* Validates and loads the blob; its bytes may be freed when this returns. options may be NULL
 * (defaults). On failure *out is NULL and vkd_init_error() holds the message. */
VKD_C_API vkd_status vkd_delegate_init(const void* blob, size_t size, const vkd_options* options,
                                       vkd_delegate** out);
VKD_C_API const char* vkd_init_error(void);

VKD_C_API size_t vkd_delegate_input_count(const vkd_delegate* handle);
VKD_C_API size_t vkd_delegate_output_count(const vkd_delegate* handle);
VKD_C_API vkd_status vkd_delegate_input_info(vkd_delegate* handle, size_t index,
                                             vkd_tensor_info* info);
VKD_C_API vkd_status vkd_delegate_output_info(vkd_delegate* handle, size_t index,
                                              vkd_tensor_info* info);

/* A blob compiled for a maximum sequence length (docs/DELEGATE_API.md "Variable sequence
 * length"): the lengths it runs, [*min, *max]; both 0 for a static blob. The infos above are the
 * shapes at *max; _at_length gives input / output `index` at `length` (what execute takes and
 * gives then; the first call at a length builds its graph), VKD_ERROR_INVALID_ARGUMENT outside
 * the range or for a static blob. Strings stay owned by the handle. */
VKD_C_API vkd_status vkd_delegate_length_range(vkd_delegate* handle, int64_t* min, int64_t* max);
VKD_C_API vkd_status vkd_delegate_input_info_at_length(vkd_delegate* handle, int64_t length,
                                                       size_t index, vkd_tensor_info* info);
VKD_C_API vkd_status vkd_delegate_output_info_at_length(vkd_delegate* handle, int64_t length,
                                                        size_t index, vkd_tensor_info* info);

/* One inference; inputs/outputs in the blob's order, each matching its info exactly (or, for a
 * blob with a dynamic length, its info at the length the inputs give). */
VKD_C_API vkd_status vkd_delegate_execute(vkd_delegate* handle, const vkd_tensor* inputs,
                                          size_t input_count, vkd_tensor* outputs,
                                          size_t output_count);

/* Per-node GPU times of the last execute (count 0 before the first or without timestamps). */
VKD_C_API size_t vkd_delegate_profile_count(vkd_delegate* handle);
VKD_C_API vkd_status vkd_delegate_profile_entry(vkd_delegate* handle, size_t index,
                                                vkd_node_profile* entry);

/* Zero-copy inputs/outputs: *tensor describes the mapped memory the delegate stages input /
 * output `index` through (valid for the delegate's lifetime). Fill an input's before execute
 * and read an output's after it (until the next execute); passing these tensors to execute
 * skips the host-side copy. Only for tensors whose device form is contiguous NCHW float32 /
 * int32; others fail with VKD_ERROR_UNSUPPORTED and a message saying why. */
VKD_C_API vkd_status vkd_delegate_staging_input(vkd_delegate* handle, size_t index,
                                                vkd_tensor* tensor);
VKD_C_API vkd_status vkd_delegate_staging_output(vkd_delegate* handle, size_t index,
                                                 vkd_tensor* tensor);

/* Created with options.profiling: how the following executes are timed (vkd::Delegate::
 * set_profiling). VKD_PROFILING_OFF: no query recorded or read; VKD_PROFILING_NODES (the
 * default): a timestamp pair around every dispatch (per-node profile; it serializes the
 * dispatches and adds their launches to gpu_span_us); VKD_PROFILING_SPAN: one pair around all
 * the dispatches (gpu_span_us as an unprofiled execute runs; no per-node profile). Any mode but
 * OFF without options.profiling fails, as does a value that is none of these. */
#define VKD_PROFILING_OFF 0
#define VKD_PROFILING_NODES 1
#define VKD_PROFILING_SPAN 2
VKD_C_API vkd_status vkd_delegate_set_profiling(vkd_delegate* handle, int mode);

/* Host phases and GPU span of the last execute (see vkd_execute_profile). */
VKD_C_API vkd_status vkd_delegate_execute_profile(vkd_delegate* handle,
                                                  vkd_execute_profile* profile);

VKD_C_API const char* vkd_delegate_last_error(const vkd_delegate* handle);
/* Name of the Vulkan device the handle runs on (owned by the handle). */
VKD_C_API const char* vkd_delegate_device_name(const vkd_delegate* handle);
/* Khronos validation messages (errors + warnings) seen so far; 0 without options.validation. */
VKD_C_API uint64_t vkd_delegate_validation_message_count(const vkd_delegate* handle);
/* Waits until the GPU is idle, then frees the handle and everything it owns (also the strings
 * it returned). Call it exactly once per handle: any use of the handle afterwards - another call
 * with it, a string it returned, or a second vkd_delegate_destroy - is undefined behaviour (a
 * freed handle cannot be told from a live one). NULL is a no-op, so set the pointer to NULL after
 * destroying it. Safe after any error, VKD_ERROR_TIMEOUT and VKD_ERROR_DEVICE_LOST included; not
 * while another thread is inside a call on the same handle. */
VKD_C_API void vkd_delegate_destroy(vkd_delegate* handle);

#ifdef __cplusplus
}
#endif

#endif /* VKDELEGATE_VKD_DELEGATE_H */
