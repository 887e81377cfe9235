// vkdelegate public C++ API for a whole model: load what `vkd compile` wrote and run it on host
// tensors, as `vkd run` does.
//
// A model is either a partitioned model (`vkd compile --partition`: MODEL.partition.json, one
// blob per partition that the backend runs, and the host's steps between them) or a plain
// model.vkd (one step). Its steps run in the plan's order: a GPU step through a vkd::Delegate
// (Delegate.hpp; each has its own Vulkan device context), a host step on the CPU through the
// compiler's reference interpreter. Between steps the host holds int8 tensors as int8 NCHW
// with their quantization, float16 ones as float16.
//
// The rest is as for vkd::Delegate: nothing throws across this boundary (every call returns a
// Status, the message of the last failure is kept on the handle; Model::load reports through
// `error`); host data is NCHW, C order, with the host dtype of each tensor's TensorInfo
// (float16 tensors are exchanged as float32); one Model may be shared between threads (its
// calls are serialized), distinct ones are independent. Library: libvkdmodel.so (CMake:
// vkdelegate::vkdmodel, pkg-config: vkdmodel), which uses libvkdelegate.so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkdelegate/Delegate.hpp"

namespace vkd {

struct ModelOptions {
  DelegateOptions delegate;  // for every GPU step (device, validation, profiling, ...)
  // The original graph's weights (.safetensors, `vkd compile --weights`): needed when a host
  // step reads a constant (the plan names each one's tensor), not read when none does ("" =
  // none; `vkd run --weights`).
  std::string weights_path;
};

enum class StepPlace : int32_t { Gpu = 0, Host = 1 };

// One step of the model, in execution order.
struct StepInfo {
  StepPlace place = StepPlace::Gpu;
  // How messages name it: "step 0 (GPU m.p0.vkd)", "step 1 (host node 3 (aten.max_pool2d))".
  std::string label;
  std::string blob;       // GPU: the blob as the plan names it ("m.p0.vkd")
  std::string blob_path;  // GPU: that file as it was read (next to the plan)
  std::string op;         // host: the edge op it runs ("aten.max_pool2d")
  std::string origin;     // host: where it was in the original graph ("node 3 (aten.max_pool2d)")
  std::vector<std::string> inputs, outputs;  // tensor names ("" for an absent optional input)
  MemoryReport memory;                       // GPU: the step's delegate (zeros for a host step)
};

// One step of the last execute().
struct StepTiming {
  size_t step = 0;  // index into the steps
  StepPlace place = StepPlace::Gpu;
  std::string label;                 // StepInfo::label
  double wall_us = 0.0;              // host wall time: the delegate's execute or the interpreter
  std::vector<NodeProfile> profile;  // GPU: per dispatch node (empty without timestamps)
};

class VKD_API Model {
 public:
  // Loads `path`: a name ending in ".json" is a partition plan (its blobs are plain file names,
  // read from its directory, never through a symbolic link), anything else a blob. Every file is
  // read and checked (the plan's structure and data flow, each blob against the plan, each host
  // step's op and arguments, the constants against the weights file) before the first delegate
  // touches the device. On failure returns the status, leaves `out` empty and stores the message
  // (naming the plan, the step and the file or tensor) in `*error` (when non-null).
  static Status load(const std::string& path, const ModelOptions& options,
                     std::unique_ptr<Model>* out, std::string* error = nullptr);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // The model's inputs and outputs in the plan's order (a blob's: its own). A tensor a GPU step
  // reads (writes) is described as that delegate describes it; one only host steps touch has
  // storage "host" and layout "nchw" and may have rank 0 to 6.
  size_t input_count() const;
  size_t output_count() const;
  TensorInfo input(size_t index) const;  // index out of range: empty info (name "")
  TensorInfo output(size_t index) const;

  size_t step_count() const;
  StepInfo step(size_t index) const;  // index out of range: empty info

  // One inference through every step: inputs and outputs in the model's order, every view
  // matching its TensorInfo (count, dtype, shape, bytes, non-null data).
  Status execute(const std::vector<ConstTensorView>& inputs,
                 const std::vector<TensorView>& outputs);

  // A model of one blob compiled with a dynamic length (Delegate::length_range(),
  // docs/DELEGATE_API.md "Variable sequence length"): execute() takes inputs of any length in
  // the range; these are the delegate's (max 0 and InvalidArgument for any other model).
  Delegate::LengthRange length_range() const;
  Status length_of_inputs(const std::vector<std::vector<int64_t>>& input_sizes,
                          int64_t* length) const;
  Status infos_at_length(int64_t length, std::vector<TensorInfo>* inputs,
                         std::vector<TensorInfo>* outputs);

  // How the GPU steps time the following executes: Delegate::set_profiling on every GPU step's
  // delegate. PerDispatch (the default with options.delegate.profiling) gives last_timings() a
  // profile entry per dispatch node; Span and Off none (Off records and reads no timestamp
  // query: the host wall an app sees). Anything but Off for a model loaded without
  // options.delegate.profiling is InvalidArgument, whether or not it has a GPU step; a model
  // with no GPU step takes every mode and has nothing to change (host steps are always timed).
  Status set_profiling(Delegate::Profiling mode);

  std::string last_error() const;  // "" after a successful call
  // Per step of the last execute(); empty before the first and after a failed one.
  std::vector<StepTiming> last_timings() const;
  // The device of the first GPU step, or "none (every step runs on the host)".
  std::string device_name() const;
  uint64_t validation_message_count() const;  // summed over the GPU steps' delegates

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkd
