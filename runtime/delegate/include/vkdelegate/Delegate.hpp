// vkdelegate public C++ API: load a delegate blob (model.vkd) onto a Vulkan device and run it.
//
// Shaped after ExecuTorch's backend interface (init / execute / destroy): a host runtime wraps
// it in a few lines. Nothing throws across this boundary: every call returns a Status, and the
// message of the last failure is kept on the handle (Delegate::create reports through `error`).
//
// Threads: distinct Delegate objects are independent (each owns its Vulkan device context) and
// may be used from different threads at the same time. One Delegate may be shared between
// threads: its calls are serialized by an internal mutex (they do not run in parallel).
//
// Host data is NCHW, C order. Per tensor the host element type is fixed by the blob
// (TensorInfo::host_dtype): float32 for float32/float16 tensors (float16 is converted), int32
// for int32, int8 for int8x4 tensors (packed into their layout on the CPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#if defined(_WIN32)
#define VKD_API __declspec(dllexport)
#else
#define VKD_API __attribute__((visibility("default")))
#endif

namespace vkd {

// Same numbers as vkd_status in vkd_delegate.h.
enum class Status : int32_t {
  Ok = 0,
  InvalidArgument = 1,  // malformed blob, wrong input count/shape/dtype, bad option
  Unsupported = 2,      // valid, but the device or this build cannot run it
  OutOfMemory = 3,
  DeviceLost = 4,  // the handle is unusable afterwards; destroy it
  VulkanFailure = 5,
  Internal = 6,
  // The GPU did not finish within DelegateOptions::gpu_timeout_ms. The handle is poisoned:
  // every later execute() returns Timeout; destroying it is safe (it waits for the GPU).
  Timeout = 7,
};
VKD_API const char* status_name(Status status);

// Same numbers as vkd_dtype in vkd_delegate.h.
enum class HostDType : int32_t { Float32 = 0, Int32 = 1, Int8 = 2 };
VKD_API const char* host_dtype_name(HostDType dtype);
VKD_API size_t host_dtype_size(HostDType dtype);

struct TensorInfo {
  std::string name;
  std::vector<int64_t> sizes;  // NCHW, rank 1..4
  HostDType host_dtype = HostDType::Float32;
  std::string device_dtype;  // "float32", "int8x4", ...
  std::string storage;       // "buffer" | "texture3d"
  std::string layout;        // "width_packed", "packed_int8_4w4c", ...
  bool named = false;        // the blob named it (else `name` is the tensor's own name)
  size_t numel() const {
    size_t n = 1;
    for (int64_t s : sizes) n *= static_cast<size_t>(s);
    return n;
  }
  size_t host_bytes() const { return numel() * host_dtype_size(host_dtype); }
};

// Caller-owned host memory; sizes and dtype must match the TensorInfo exactly.
struct ConstTensorView {
  const void* data = nullptr;
  size_t bytes = 0;
  HostDType dtype = HostDType::Float32;
  std::vector<int64_t> sizes;
};
struct TensorView {
  void* data = nullptr;
  size_t bytes = 0;
  HostDType dtype = HostDType::Float32;
  std::vector<int64_t> sizes;
};

struct DelegateOptions {
  std::string device;       // index or name substring; "" = $VKD_DEVICE, else default order
  bool validation = false;  // Khronos validation layer; messages are counted
  // Timestamp queries around every dispatch of each run (last_profile(), the GPU fields of
  // last_execute_profile()). Off, execute() records and reads no queries at all.
  bool profiling = true;
  // VkPipelineCache file, loaded if valid, saved on destroy. "" = $VKD_PIPELINE_CACHE, else the
  // per-user default under $XDG_CACHE_HOME/vkdelegate; "off" = no persistent cache.
  std::string pipeline_cache_file;
  uint64_t constant_batch_bytes = 16ull << 20;  // staging bound while uploading constants
  // A GPU wait longer than this fails with Status::Timeout (the handle is then poisoned); must
  // be > 0 (0 is InvalidArgument).
  uint32_t gpu_timeout_ms = 120000;
  // Debugging (`vkd run --check`): every tensor an op writes becomes an extra output, after
  // the model's own outputs, in op order, named as in the blob. Costs memory (no sharing).
  bool expose_intermediates = false;
  // A device class (android-baseline-2022, mali-g7x, adreno-6xx, apple-m1; `vkd help` lists
  // them): the device is used as one of that class, its limits and features lowered to the
  // class's (docs/DEVICES.md). "" = $VKD_DEVICE_CLASS, else the device as it is; an unknown
  // name is InvalidArgument.
  std::string device_class;
};

// GPU time of one dispatch node in the last execute().
struct NodeProfile {
  std::string op;       // backend op, e.g. "q8ta_quantize"
  std::string kernel;   // shader variant, i.e. the route taken
  std::string tensors;  // "out=[1,3,8,8] int8x4 packed_int8_4w4c; in=..."
  double gpu_us = 0.0;
};

// Where the time of the last execute() went, in microseconds. The host phases follow each
// other inside host_wall_us (the rest is argument checks): input_copy_us + submit_wait_us +
// output_copy_us <= host_wall_us. The GPU fields are 0 without DelegateOptions::profiling.
struct ExecuteProfile {
  double host_wall_us = 0.0;        // the execute() call, up to the outputs in the caller's memory
  double input_copy_us = 0.0;       // caller memory -> input staging (packing on the CPU)
  double submit_wait_us = 0.0;      // submit -> fence signalled (staging copies + dispatches)
  double output_copy_us = 0.0;      // output staging -> caller memory (unpacking on the CPU)
  double gpu_span_us = 0.0;         // first dispatch's start to last dispatch's end
  double gpu_total_us = 0.0;        // sum of the dispatches' own times (last_profile()'s gpu_us;
                                    // 0 when timed with Profiling::Span)
  double gpu_input_copy_us = 0.0;   // GPU: input staging -> input tensors
  double gpu_output_copy_us = 0.0;  // GPU: output tensors -> output staging
};

struct MemoryReport {
  uint64_t constant_bytes = 0;              // constants as stored in the blob (host bytes)
  uint64_t constant_device_bytes = 0;       // constants on the GPU, packed
  uint64_t io_device_bytes = 0;             // graph inputs and outputs on the GPU
  uint64_t intermediate_naive_bytes = 0;    // every intermediate in its own memory
  uint64_t intermediate_planned_bytes = 0;  // after lifetime-based sharing
  uint64_t device_bytes = 0;                // everything allocated for tensors
  uint64_t staging_bytes = 0;               // input/output staging kept for execute()
  uint64_t load_peak_bytes = 0;             // peak of device + staging + host packing during init
};

class VKD_API Delegate {
 public:
  // Validates and loads `blob` (its bytes may be freed once this returns). On failure returns
  // the status, leaves `out` empty and stores the message in `*error` (when non-null).
  static Status create(const void* blob, size_t size, const DelegateOptions& options,
                       std::unique_ptr<Delegate>* out, std::string* error = nullptr);
  ~Delegate();
  Delegate(const Delegate&) = delete;
  Delegate& operator=(const Delegate&) = delete;

  size_t input_count() const;
  size_t output_count() const;
  TensorInfo input(size_t index) const;  // index out of range: empty info (name "")
  TensorInfo output(size_t index) const;

  // One inference: inputs and outputs in the blob's order, every view matching its TensorInfo.
  // A blob compiled for a maximum sequence length (length_range()) also takes inputs of any
  // length in its range: the outputs then have that length's shapes (infos_at_length()).
  Status execute(const std::vector<ConstTensorView>& inputs,
                 const std::vector<TensorView>& outputs);

  // A blob compiled with a dynamic length (a sequence length exported with torch.export's Dim,
  // docs/DELEGATE_API.md "Variable sequence length"): its name ("T") and the lengths it runs,
  // input()/output() being the shapes at max. A static blob: max 0.
  struct LengthRange {
    std::string name;
    int64_t min = 0;
    int64_t max = 0;
  };
  LengthRange length_range() const;
  // The length the input shapes give; InvalidArgument naming the input, the dim and the limit
  // (a longer input than the maximum, a size that is no length) or for a static blob.
  Status length_of_inputs(const std::vector<std::vector<int64_t>>& input_sizes,
                          int64_t* length) const;
  // The inputs and outputs at `length` (what execute() takes and gives then); builds that
  // length's graph if no execute() has (the last few lengths are kept).
  Status infos_at_length(int64_t length, std::vector<TensorInfo>* inputs,
                         std::vector<TensorInfo>* outputs);

  // Zero-copy inputs/outputs: a view of the mapped memory execute() stages input / output
  // `index` through, kept for the delegate's lifetime. Fill an input's view before execute() and
  // read an output's after it (until the next execute()); passing these views to execute()
  // skips the host-side copy. Only where the tensor's device form is its host form (float32 or
  // int32, buffer, width-packed: contiguous NCHW); elsewhere Unsupported, saying why.
  Status staging_input(size_t index, TensorView* view);
  Status staging_output(size_t index, TensorView* view);

  // Created with options.profiling: how the following execute()s are timed. Off: no query is
  // recorded or read (what an app's own latency measurement should see). PerDispatch (the
  // default): a timestamp pair around every dispatch (last_profile(), gpu_total_us), which
  // serializes the dispatches and adds each one's launch to gpu_span_us. Span: only a pair
  // around all the dispatches and one around each staging-copy phase: gpu_span_us as an
  // unprofiled execute() runs, last_profile() empty. Anything but Off for a delegate created
  // without profiling is InvalidArgument. set_profiling(bool): PerDispatch or Off.
  enum class Profiling { Off, Span, PerDispatch };
  Status set_profiling(Profiling mode);
  Status set_profiling(bool on) {
    return set_profiling(on ? Profiling::PerDispatch : Profiling::Off);
  }

  std::string last_error() const;                 // "" after a successful call
  std::vector<NodeProfile> last_profile() const;  // empty before the first run / without timestamps
  ExecuteProfile last_execute_profile() const;    // all 0 before the first run / after a failed one
  // Device memory held now; with a dynamic length, also what the graphs of the shorter lengths
  // held allocated themselves (their constants and intermediates shared with the maximum's
  // graph counted once).
  MemoryReport memory() const;
  std::string device_name() const;
  uint64_t validation_message_count() const;  // with options.validation
  // The loaded graph as text: values (storage, layout), op calls, dispatch nodes with their
  // kernels, constants and planned memory (what `vkd inspect` prints).
  std::string describe() const;
  // The smaller forms kernels took because they exceed the device (docs/DEVICES.md, "Ways
  // down"), one line each: "op 'tensor': what instead (the limit)". Empty when all fit.
  std::vector<std::string> ways_down() const;

 private:
  struct Impl;
  explicit Delegate(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkd
